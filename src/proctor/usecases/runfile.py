"""Run a Python use case file from the command line: ``proctor run my_use_case.py --model ...``.

Convention for the file (it is imported as a module, with its folder on ``sys.path``):

1. a module-level ``use_case`` (a ``UseCase`` instance) is used as is; otherwise
2. the file must define exactly one ``UseCase`` subclass, which is built from the module-level
   ``evaluation_data`` (a list of rows, or a .json/.jsonl path relative to the file),
   ``evaluation_metrics`` (a list of ``Metric`` objects) and, optionally, ``use_case_kwargs`` (a dict
   of extra keyword arguments such as ``num_shuffling_runs``).

An optional module-level ``gen_kwargs`` dict sets generation options (``max_new_tokens``, ...).
``--limit N`` keeps the first N rows. The run folder holds ``samples.jsonl`` (one generation per
line) and ``results.json`` (every numeric metric value, plus the raw evaluations).
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from proctor.errors import TaskDefinitionError
from proctor.usecases.base import UseCase


def _import(path: Path):
    name = f"proctor_usecase_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TaskDefinitionError("cannot import this file", file=path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent.resolve()))
    return module


def load_use_case_file(path: str | Path, limit: int | None = None) -> tuple[UseCase, dict]:
    """The file's use case (by the convention above) and its ``gen_kwargs``."""
    path = Path(path)
    module = _import(path)
    gen_kwargs = dict(getattr(module, "gen_kwargs", {}) or {})
    use_case = getattr(module, "use_case", None)
    if use_case is not None:
        if not isinstance(use_case, UseCase):
            raise TaskDefinitionError(f"'use_case' is a {type(use_case).__name__}, not a UseCase", file=path, field="use_case")
        if limit:
            use_case.evaluation_data = use_case.evaluation_data[:limit]
        return use_case, gen_kwargs
    classes = [
        obj for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, UseCase) and obj.__module__ == module.__name__ and not inspect.isabstract(obj)
    ]
    if len(classes) != 1:
        found = ", ".join(c.__name__ for c in classes) or "none"
        raise TaskDefinitionError(
            f"a use case file defines 'use_case = ...' or exactly one UseCase subclass (found: {found})", file=path
        )
    for required in ("evaluation_data", "evaluation_metrics"):
        if not hasattr(module, required):
            raise TaskDefinitionError(f"the file defines {classes[0].__name__} but no module-level '{required}'", file=path, field=required)
    data = module.evaluation_data
    if isinstance(data, (str, Path)) and not Path(data).is_absolute():
        data = path.parent / data
    kwargs = dict(getattr(module, "use_case_kwargs", {}) or {})
    if limit:
        kwargs["num_samples"] = limit
    return classes[0](evaluation_data=data, evaluation_metrics=list(module.evaluation_metrics), **kwargs), gen_kwargs


def _flatten(prefix: str, value: Any, out: dict) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        out[prefix] = {"value": float(value), "stderr": None}
    elif isinstance(value, dict):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}", inner, out)


def run_use_case_files(
    paths: Sequence[Path],
    model: Any,
    *,
    output_dir: Path | None = None,
    runs_root: Path = Path("runs"),
    limit: int | None = None,
    model_options: dict | None = None,
    command: Sequence[str] | None = None,
) -> tuple[Path, dict]:
    """Run each use case file on one model; returns the run folder and results (run-folder layout)."""
    from proctor import __version__
    from proctor.models.registry import load_model
    from proctor.runs.results import RunWriter, new_run_dir

    loaded = [(Path(p), *load_use_case_file(p, limit)) for p in paths]  # bad files fail before the model loads
    started = time.perf_counter()
    if isinstance(model, str):
        model = load_model(model, **dict(model_options or {}))
    run_dir = Path(output_dir) if output_dir else new_run_dir(Path(runs_root), model.name)
    writer = RunWriter(run_dir)
    results: dict[str, Any] = {
        "proctor_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": list(command) if command is not None else None,
        "model": model.fingerprint,
        "status": "running",
        "tasks": {},
        "groups": {},
    }
    for path, use_case, gen_kwargs in loaded:
        name = f"{path.stem}:{use_case.name}"
        task_started = time.perf_counter()
        generations = use_case.generate(model, getattr(model, "tokenizer", None), gen_kwargs=gen_kwargs)
        evaluations = use_case.evaluate(generations)
        writer.append_samples([{"task": name, **g} for g in generations])
        metrics: dict[str, Any] = {}
        for metric, values in evaluations.items():
            _flatten(metric, values, metrics)
        results["tasks"][name] = {
            "kind": "usecase",
            "dialect": "usecase",
            "source": str(path),
            "version": "-",
            "hash": use_case.fingerprint(),
            "n_samples": len(generations),
            "n_rows": len(use_case.evaluation_data),
            "metrics": metrics,
            "evaluations": evaluations,
            "timing": {"total_seconds": round(time.perf_counter() - task_started, 3)},
        }
        writer.write_results(results)
    results["status"] = "complete"
    results["timing"] = {"total_seconds": round(time.perf_counter() - started, 3)}
    writer.write_results(results)
    return run_dir, results
