"""Run a flat list of requests on a model through the engine, outside of a task.

Python use cases build their own prompts; this is where their requests meet the engine, so that
what the engine adds around model calls (deduplication now; caching and the run store as they
land) applies to them as well. Results come back in request order.
"""

from __future__ import annotations

from typing import Callable, Sequence

from proctor.engine.runner import _dedupe
from proctor.models.base import Model
from proctor.requests import GenerateRequest, GenerateResult


def run_generate(
    model: Model, requests: Sequence[GenerateRequest], progress: Callable[[int], None] | None = None
) -> list[GenerateResult]:
    """Generate for every request; identical requests are computed once."""
    if not requests:
        return []
    unique, mapping = _dedupe(requests)
    results = model.generate(unique, progress)
    return [results[k] for k in mapping]
