# Written for proctor's tests in AISteer360's metric file format (not copied from AISteer360): the
# class subclasses aisteer360's Metric, lets the base __init__ run (which names the metric after
# the class) and then sets its own `self.name`, which is the key its scores are reported under.
from typing import Any

from aisteer360.evaluation.metrics.base import Metric


class AnsweredShare(Metric):
    """How many of the replies parsed to an option letter, as a share of all replies."""

    def __init__(self, label: str = "answered"):
        super().__init__()
        self.name = f"AnsweredShare[{label}]"

    def compute(self, responses: list[Any], prompts: list[str] | None = None, **kwargs: Any) -> dict[str, Any]:
        if not responses:
            return {"share": 0.0}
        parsed = [reply for reply in responses if reply is not None]
        return {"share": len(parsed) / len(responses)}
