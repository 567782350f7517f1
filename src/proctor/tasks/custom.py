"""Public import path of the task-class base classes: ``from proctor.tasks.custom import ...``."""

from proctor.kinds.custom import CustomTask, GenerationTask, MultipleChoiceTask

__all__ = ["CustomTask", "GenerationTask", "MultipleChoiceTask"]
