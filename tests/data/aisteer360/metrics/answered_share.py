# A metric file in AISteer360's format: it subclasses aisteer360's Metric, calls
# super().__init__() and then sets its own `self.name` (AISteer360's base sets it in __init__).
from typing import Any

from aisteer360.evaluation.metrics.base import Metric


class AnsweredShare(Metric):
    """Share of responses that parsed to a letter."""

    def __init__(self, label: str = "answered"):
        super().__init__()
        self.name = f"AnsweredShare[{label}]"

    def compute(self, responses: list[Any], prompts: list[str] | None = None, **kwargs: Any) -> dict[str, Any]:
        return {"share": sum(r is not None for r in responses) / len(responses) if responses else 0.0}
