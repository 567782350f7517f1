"""Python use cases and steering benchmarks (AISteer360-style).

``UseCase`` / ``Metric`` define a task in Python; ``batch_retry_generate`` runs prompts on a proctor
model, a plain transformers model or a ``SteeringPipeline``; ``Benchmark`` compares the base model
with steered pipelines over trials and parameter sweeps, with checkpoints and resume.
"""

from proctor.usecases.base import UseCase, UseCaseDataError
from proctor.usecases.benchmark import Benchmark
from proctor.usecases.controls import Control, FewShot, PromptRewrite, SystemPrompt, TokenBias
from proctor.usecases.generation import batch_retry_generate
from proctor.usecases.generic_metrics import Factuality, Perplexity, Relevance, RewardScore, ShortAnswerMatch
from proctor.usecases.ifeval import InstructionFollowing, LooseInstruction, StrictInstruction
from proctor.usecases.judge import LLMJudgeMetric
from proctor.usecases.mcqa import CommonsenseMCQA
from proctor.usecases.mcqa_metrics import MCQAAccuracy, MCQACalibration, MCQAPositionalBias
from proctor.usecases.metrics import Metric
from proctor.usecases.pipeline import SteeringPipeline
from proctor.usecases.runfile import run_use_cases
from proctor.usecases.specs import ControlSpec
from proctor.usecases.state import ActivationAddition
from proctor.usecases.structural import LoRA, WeightDelta
from proctor.usecases.truthfulqa import Informativeness, TruthfulQA, Truthfulness

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
