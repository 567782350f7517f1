"""Typed, validated task specifications and their content hashes."""

from proctor.spec.task import (
    ChatSpec,
    DataSpec,
    ExtractionSpec,
    FewShotSpec,
    GenerationSpec,
    MetricSpec,
    PerplexitySpec,
    TaskSpec,
)

__all__ = [
    "ChatSpec",
    "DataSpec",
    "ExtractionSpec",
    "FewShotSpec",
    "GenerationSpec",
    "MetricSpec",
    "PerplexitySpec",
    "TaskSpec",
]
