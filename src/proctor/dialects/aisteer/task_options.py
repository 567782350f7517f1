"""The options of one use case task, as its handler (``usecase_task.UseCaseTask``) receives them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class UseCaseTaskOptions(BaseModel):
    """What identifies the run of a use case (so the content hash, resume and ``--update`` see a change);
    how to build the use case rides in the task's resources."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fingerprint: str  # the use case's own fingerprint (its class, data and settings)
    gen_kwargs: Any = None  # the generate() keywords, as JSON
    batch_size: int | None = None
    runtime_overrides: Any = None
    benchmark_trial: int | None = None  # the Benchmark trial this task runs (None: a plain use case)
