"""proctor: evaluate language models on tasks you define."""

__version__ = "0.1.0"

from proctor.api import EvaluationResult, evaluate, load_tasks  # noqa: E402
from proctor.errors import ProctorError, TaskDefinitionError  # noqa: E402
from proctor.scoring.metrics import register_metric  # noqa: E402

__all__ = [
    "EvaluationResult",
    "ProctorError",
    "TaskDefinitionError",
    "__version__",
    "evaluate",
    "load_tasks",
    "register_metric",
]
