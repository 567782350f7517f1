"""Python use cases and steering benchmarks (AISteer360-style).

``UseCase`` / ``Metric`` define a task in Python; ``batch_retry_generate`` runs prompts on a proctor
model, a plain transformers model or a ``SteeringPipeline``; ``Benchmark`` compares the base model
with steered pipelines over trials and parameter sweeps, each trial a run of ``proctor.evaluate`` (resumable).
"""

from proctor.dialects.aisteer.base import UseCase, UseCaseDataError
from proctor.dialects.aisteer.benchmark import Benchmark
from proctor.dialects.aisteer.generation import batch_retry_generate
from proctor.dialects.aisteer.generic_metrics import Factuality, Perplexity, Relevance, RewardScore, ShortAnswerMatch
from proctor.dialects.aisteer.ifeval import InstructionFollowing, LooseInstruction, StrictInstruction
from proctor.dialects.aisteer.judge import LLMJudgeMetric
from proctor.dialects.aisteer.mcqa import CommonsenseMCQA
from proctor.dialects.aisteer.mcqa_metrics import MCQAAccuracy, MCQACalibration, MCQAPositionalBias
from proctor.dialects.aisteer.metrics import Metric
from proctor.dialects.aisteer.runfile import run_use_cases
from proctor.dialects.aisteer.truthfulqa import Informativeness, Truthfulness, TruthfulQA
from proctor.models.steering.controls import Control, FewShot, PromptRewrite, SystemPrompt, TokenBias
from proctor.models.steering.pipeline import SteeringPipeline
from proctor.models.steering.specs import ControlSpec
from proctor.models.steering.state import ActivationAddition
from proctor.models.steering.structural import LoRA, WeightDelta

__all__ = [
    "ActivationAddition",
    "Benchmark",
    "CommonsenseMCQA",
    "ControlSpec",
    "InstructionFollowing",
    "Factuality",
    "Informativeness",
    "LooseInstruction",
    "Perplexity",
    "Relevance",
    "RewardScore",
    "ShortAnswerMatch",
    "TruthfulQA",
    "Truthfulness",
    "LLMJudgeMetric",
    "StrictInstruction",
    "Control",
    "FewShot",
    "LoRA",
    "MCQAAccuracy",
    "MCQACalibration",
    "MCQAPositionalBias",
    "Metric",
    "PromptRewrite",
    "SteeringPipeline",
    "SystemPrompt",
    "TokenBias",
    "UseCase",
    "UseCaseDataError",
    "WeightDelta",
    "batch_retry_generate",
    "run_use_cases",
]
