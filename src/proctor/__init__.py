"""proctor: evaluate language models on tasks you define."""

from proctor.api import EvaluationResult, evaluate, load_tasks  # noqa: E402
from proctor.core.errors import ProctorError, TaskDefinitionError  # noqa: E402
from proctor.core.version import __version__  # noqa: E402
from proctor.scoring.metrics import register_metric  # noqa: E402

# Python use cases and steering (proctor.dialects.aisteer) load on first use, keeping ``import proctor`` light.
_USECASE_NAMES = ("UseCase", "Metric", "batch_retry_generate", "Benchmark", "SteeringPipeline", "ControlSpec")


def __getattr__(name: str):
    if name in _USECASE_NAMES:
        from proctor.dialects import aisteer

        return getattr(aisteer, name)
    raise AttributeError(f"module 'proctor' has no attribute '{name}'")


__all__ = [
    "Benchmark",
    "ControlSpec",
    "EvaluationResult",
    "Metric",
    "SteeringPipeline",
    "UseCase",
    "batch_retry_generate",
    "ProctorError",
    "TaskDefinitionError",
    "__version__",
    "evaluate",
    "load_tasks",
    "register_metric",
]
