"""Python use cases and steering benchmarks (AISteer360-style).

``UseCase`` / ``Metric`` define a task in Python; ``batch_retry_generate`` runs prompts on a proctor
model, a plain transformers model or a ``SteeringPipeline``; ``Benchmark`` compares the base model
with steered pipelines over trials and parameter sweeps, each trial a run of ``proctor.evaluate`` (resumable).

The names below load on first use (``from proctor.dialects.aisteer import UseCase`` works as ever): the registry
imports this package's ``declaration`` on every run, and a run that reads no use case must load none of it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names are, for type checkers and readers; nothing is imported at run time
    from proctor.dialects.aisteer.base import UseCase, UseCaseDataError
    from proctor.dialects.aisteer.benchmark import Benchmark
    from proctor.dialects.aisteer.generation import batch_retry_generate
    from proctor.dialects.aisteer.generic_metrics import (
        Factuality,
        Perplexity,
        Relevance,
        RewardScore,
        ShortAnswerMatch,
    )
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

# name -> the module that defines it
_WHERE = {
    "UseCase": "proctor.dialects.aisteer.base",
    "UseCaseDataError": "proctor.dialects.aisteer.base",
    "Benchmark": "proctor.dialects.aisteer.benchmark",
    "batch_retry_generate": "proctor.dialects.aisteer.generation",
    "Factuality": "proctor.dialects.aisteer.generic_metrics",
    "Perplexity": "proctor.dialects.aisteer.generic_metrics",
    "Relevance": "proctor.dialects.aisteer.generic_metrics",
    "RewardScore": "proctor.dialects.aisteer.generic_metrics",
    "ShortAnswerMatch": "proctor.dialects.aisteer.generic_metrics",
    "InstructionFollowing": "proctor.dialects.aisteer.ifeval",
    "LooseInstruction": "proctor.dialects.aisteer.ifeval",
    "StrictInstruction": "proctor.dialects.aisteer.ifeval",
    "LLMJudgeMetric": "proctor.dialects.aisteer.judge",
    "CommonsenseMCQA": "proctor.dialects.aisteer.mcqa",
    "MCQAAccuracy": "proctor.dialects.aisteer.mcqa_metrics",
    "MCQACalibration": "proctor.dialects.aisteer.mcqa_metrics",
    "MCQAPositionalBias": "proctor.dialects.aisteer.mcqa_metrics",
    "Metric": "proctor.dialects.aisteer.metrics",
    "run_use_cases": "proctor.dialects.aisteer.runfile",
    "Informativeness": "proctor.dialects.aisteer.truthfulqa",
    "Truthfulness": "proctor.dialects.aisteer.truthfulqa",
    "TruthfulQA": "proctor.dialects.aisteer.truthfulqa",
    "Control": "proctor.models.steering.controls",
    "FewShot": "proctor.models.steering.controls",
    "PromptRewrite": "proctor.models.steering.controls",
    "SystemPrompt": "proctor.models.steering.controls",
    "TokenBias": "proctor.models.steering.controls",
    "SteeringPipeline": "proctor.models.steering.pipeline",
    "ControlSpec": "proctor.models.steering.specs",
    "ActivationAddition": "proctor.models.steering.state",
    "LoRA": "proctor.models.steering.structural",
    "WeightDelta": "proctor.models.steering.structural",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value  # looked up once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
