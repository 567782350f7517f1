"""The ``Metric`` base class of Python use cases.

A metric is an object whose ``name`` is its class name and which is called with keyword data
(``responses=``, ``prompts=``, and whatever else the use case passes) to return a dict of numbers.
"""

from __future__ import annotations

import abc
import math
from typing import Any, Sequence


class Metric(abc.ABC):
    """Base class: subclasses implement ``compute(responses, prompts=None, **kwargs) -> dict``."""

    def __init__(self, **extras: Any) -> None:
        for key, value in extras.items():
            setattr(self, key, value)

    @property
    def name(self) -> str:
        return type(self).__name__

    @abc.abstractmethod
    def compute(self, responses: Sequence[Any], prompts: Sequence[Any] | None = None, **kwargs: Any) -> dict[str, Any]: ...

    def __call__(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return self.compute(*args, **kwargs)

    def __repr__(self) -> str:
        extras = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
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
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))
