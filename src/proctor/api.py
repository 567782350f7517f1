"""Python entry points: ``load_tasks`` and ``evaluate``."""

from __future__ import annotations

import logging
import platform

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from proctor import __version__
from proctor.dialects import collect_tasks
from proctor.engine.prepare import prepare_tasks, task_config
from proctor.engine.runner import ProgressHook, run_task
from proctor.models.base import Model
from proctor.runs.exports import write_exports
from proctor.runs.results import RunWriter, new_run_dir
from proctor.scoring.aggregate import aggregate_groups
from proctor.tasks.base import Task

log = logging.getLogger(__name__)


@dataclass
class EvaluationResult:
    run_dir: Path
    results: dict[str, Any]

    @property
    def tasks(self) -> dict[str, dict]:
        return self.results["tasks"]

    def metric(self, task: str, name: str) -> float:
        return self.results["tasks"][task]["metrics"][name]["value"]


def load_tasks(
    paths: Iterable[str | Path], select: Iterable[str] | None = None, options: Mapping[str, Any] | None = None
) -> list[Task]:
    """Tasks found in files and folders (recursively), optionally filtered by name globs.

    ``options`` go to the dialect adapters: ``probsem_norm`` (bool) and ``probsem_temp`` (float).
    """
    return collect_tasks(paths, select=select, options=options)


def evaluate(
    tasks: Sequence[Task] | Iterable[str | Path],
    model: Model | str = "smollm2",
    *,
    output_dir: str | Path | None = None,
    runs_root: str | Path = "runs",
    limit: int | None = None,
    select: Iterable[str] | None = None,
    variables: Mapping[str, str] | None = None,
    data_path: str | Path | None = None,
    dialect_options: Mapping[str, Any] | None = None,
    chat: bool | None = None,
    model_options: Mapping[str, Any] | None = None,
    progress: ProgressHook | None = None,
    command: Sequence[str] | None = None,
) -> EvaluationResult:
    """Run tasks on a model and write a run folder; returns the results.

    Every task is prepared (data read, prompts rendered) before the model loads, so bad input
    fails fast. Each task's samples are on disk as soon as that task finishes.
    ``data_path`` is GLM-130B's DATA_PATH (sets ``${DATA_PATH}``); ``dialect_options`` see ``load_tasks``.
    """
    started = time.perf_counter()
    task_list = list(tasks)
    if task_list and not isinstance(task_list[0], Task):
        task_list = collect_tasks(task_list, select=select, options=dialect_options)
    if data_path is not None:
        variables = {**(variables or {}), "DATA_PATH": str(Path(data_path).expanduser().resolve())}
    if not task_list:
        from proctor.errors import ProctorError

        raise ProctorError("no tasks found")
    prepared = prepare_tasks(task_list, variables, limit=limit, chat=chat)
    load_started = time.perf_counter()
    if isinstance(model, str):
        from proctor.models.registry import load_model

        model = load_model(model, **dict(model_options or {}))
    load_seconds = time.perf_counter() - load_started
    run_dir = Path(output_dir) if output_dir else new_run_dir(Path(runs_root), model.name)
    writer = RunWriter(run_dir)
    results: dict[str, Any] = {
        "proctor_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": list(command) if command is not None else None,
        "model": model.fingerprint,
        "environment": {"python": platform.python_version(), "platform": platform.platform()},
        "status": "running",
        "tasks": {},
        "groups": {},
        "timing": {"model_load_seconds": round(load_seconds, 3)},
    }
    for item in prepared:
        writer.write_task_config(item.task.name, task_config(item))
        outcome = run_task(model, item, progress)
        exported = write_exports(item, outcome, run_dir, model.name)
        if exported:
            outcome.result["exports"] = exported
        writer.append_samples(outcome.records)
        results["tasks"][outcome.name] = outcome.result
        writer.write_results(results)  # what finished is on disk
    memberships = {p.task.name: p.task.spec.group for p in prepared if p.task.spec.group}
    results["groups"] = aggregate_groups(results["tasks"], memberships)
    results["status"] = "complete"
    results["timing"]["total_seconds"] = round(time.perf_counter() - started, 3)
    writer.write_results(results)
    return EvaluationResult(run_dir, results)


