"""The ``Metric`` base class of Python use cases.

A metric is an object whose ``name`` is its class name (a subclass may set ``self.name`` to
another, as AISteer360's metrics do) and which is called with keyword data (``responses=``,
``prompts=``, and whatever else the use case passes) to return a dict of numbers. Constructor
keywords are kept in ``extras`` (AISteer360's attribute) and also become attributes.
"""

from __future__ import annotations

import abc
import math
from typing import Any, Sequence

from proctor.scoring.stats import sample_variance

# One metric's values by name (numbers, None, per-item lists, shares by label), as ``compute`` returns them.
MetricResult = dict[str, Any]


class Metric(abc.ABC):
    """Base class: subclasses implement ``compute(responses, prompts=None, **kwargs) -> dict``."""

    def __init__(self, **extras: object) -> None:
        self.extras: dict[str, object] = dict(extras)
        for key, value in extras.items():
            setattr(self, key, value)

    @property
    def name(self) -> str:
        return self.__dict__.get("_name") or type(self).__name__

    @name.setter
    def name(self, value: str) -> None:
        self.__dict__["_name"] = str(value)

    @abc.abstractmethod
    def compute(
        self, responses: Sequence[Any], prompts: Sequence[Any] | None = None, **kwargs: Any
    ) -> MetricResult: ...

    def __call__(self, *args: Any, **kwargs: Any) -> MetricResult:
        return self.compute(*args, **kwargs)

    def __repr__(self) -> str:
        extras = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if k not in ("extras", "_name"))
        return f"{self.name}({extras})"


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean; None for no values (instead of a division by zero)."""
    return sum(values) / len(values) if values else None


def sample_std(values: Sequence[float]) -> float | None:
    """Sample standard deviation (n - 1); 0.0 for a single value, None for none."""
    if not values:
        return None
    if len(values) < 2:
        return 0.0
    return math.sqrt(sample_variance(values))
