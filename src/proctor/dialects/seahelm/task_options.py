"""The options of one SEA-HELM task x language, as its handler (``task.py``) receives them in its spec."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class SeaHelmTaskOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    lang: str
    config: dict[str, Any]  # the task's config, resolved for this language (paths, caps, overrides applied)
    root: str  # the SEA-HELM tree the config belongs to
    config_file: str
    data: str | None = None  # a local copy of the rows (--seahelm-data); None: the dataloader finds them
    trust_task_code: bool = False  # dataloader/metric/judge classes may come from the task folder
    n_runs: int = 1  # seeded runs, averaged (SEA-HELM's num_runs; --epochs)
    is_base_model: bool | None = None
    reasoning: dict[str, Any] = {}  # think-token settings of a reasoning model ({}: none)
    judge: str | None = None  # the judge's name only: no address or key enters the task's hash
    judge_generation: dict[str, Any] = {}  # overrides of judge.judge_generation_kwargs
    model_name: str | None = None  # the evaluated model, for loaders that size rows in its tokens (ONERULER)
