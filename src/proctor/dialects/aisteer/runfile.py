"""Run a Python use case file from the command line: ``proctor run my_use_case.py --model ...``.

Convention for the file (it is imported as a module, with its folder on ``sys.path`` and
AISteer360's module names pointing at proctor's, so AISteer360's own files run unmodified):

1. a module-level ``use_case`` (a ``UseCase`` instance) is used as is; otherwise
2. the file must define exactly one ``UseCase`` subclass, which is built from ``evaluation_data``
   (a list of rows, or a .json/.jsonl path), ``evaluation_metrics`` and, optionally,
   ``use_case_kwargs`` (extra keyword arguments such as ``num_shuffling_runs``), taken from the
   command line, then a ``--use-case-config`` file, then module-level names (``runconfig.py``).

``gen_kwargs`` sets generation options (``max_new_tokens``, ...); ``generate`` also receives
``batch_size`` and ``runtime_overrides`` as AISteer360's Benchmark passes them. The global
``random`` is seeded with the use case's ``seed`` before ``generate``, so files that shuffle with
it (AISteer360's CommonsenseMCQA) build the same prompts on every run — and a rerun resumes.
``--limit N`` keeps the first N rows. The run folder holds ``samples.jsonl`` (one generation per
line), ``results.json`` (every numeric metric value, plus the raw evaluations), ``run.json`` and
``store.sqlite``: every model answer, committed chunk by chunk, so running the same command again
(after it finished, or after a kill) calls the model only for requests it has not answered yet.
``run_use_cases`` is the same for use case objects, from Python.
"""

from __future__ import annotations

import inspect
import random
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from proctor.core.errors import ProctorError, TaskDefinitionError
from proctor.core.user_code import import_file, line_in
from proctor.dialects.aisteer.base import UseCase
from proctor.dialects.aisteer.runconfig import UseCaseConfig, build_metrics, resolve_data


def import_user_file(path: Path):
    """Import a use case or metric file with AISteer360's names pointing at proctor's; executed anew
    on every call. Its module name is stable across processes: it enters the use case's fingerprint."""
    from proctor.dialects.aisteer.aisteer_names import aisteer360_names

    return import_file(path, prefix="proctor_usecase", names=aisteer360_names, fresh=True)


def _module_config(module: Any, path: Path) -> UseCaseConfig:
    metrics = getattr(module, "evaluation_metrics", None)
    return UseCaseConfig(
        evaluation_data=resolve_data(getattr(module, "evaluation_data", None), path.parent),
        evaluation_metrics=[(m, path.parent) for m in metrics] if metrics is not None else None,
        use_case_kwargs=dict(getattr(module, "use_case_kwargs", {}) or {}),
        gen_kwargs=dict(getattr(module, "gen_kwargs", {}) or {}),
        batch_size=getattr(module, "batch_size", None),
        runtime_overrides=getattr(module, "runtime_overrides", None),
    )


def load_use_case_file(path: str | Path, limit: int | None = None, config: UseCaseConfig | None = None) -> tuple[UseCase, dict, dict]:
    """The file's use case (by the convention above), its ``gen_kwargs`` and the other keyword
    arguments ``generate`` gets (``batch_size``, ``runtime_overrides``)."""
    path = Path(path)
    module = import_user_file(path)
    settings = (config or UseCaseConfig()).over(_module_config(module, path))
    gen_kwargs = dict(settings.gen_kwargs)
    call = {"batch_size": settings.batch_size or gen_kwargs.pop("batch_size", None), "runtime_overrides": settings.runtime_overrides}
    gen_kwargs.pop("batch_size", None)
    use_case = getattr(module, "use_case", None)
    if use_case is not None:
        if not isinstance(use_case, UseCase):
            raise TaskDefinitionError(f"'use_case' is a {type(use_case).__name__}, not a UseCase", file=path, field="use_case")
        if limit:
            use_case.evaluation_data = use_case.evaluation_data[:limit]
        return use_case, gen_kwargs, call
    classes = [
        obj for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, UseCase) and obj.__module__ == module.__name__ and not inspect.isabstract(obj)
    ]
    if len(classes) != 1:
        found = ", ".join(c.__name__ for c in classes) or "none"
        raise TaskDefinitionError(
            f"a use case file defines 'use_case = ...' or exactly one UseCase subclass (found: {found})", file=path
        )
    for required, option in (("evaluation_data", "--use-case-data"), ("evaluation_metrics", "--use-case-metric")):
        if getattr(settings, required) is None:
            raise TaskDefinitionError(
                f"the file defines {classes[0].__name__} but no '{required}': give {option} (or --use-case-config, "
                f"or a module-level '{required}')", file=path, field=required,
            )
    kwargs = dict(settings.use_case_kwargs)
    if limit:
        kwargs["num_samples"] = limit
    metrics = build_metrics(settings.evaluation_metrics, module, path)
    try:
        built = classes[0](evaluation_data=settings.evaluation_data, evaluation_metrics=metrics, **kwargs)
    except TaskDefinitionError:
        raise
    except Exception as exc:  # a row check (validate_evaluation_data) or the class itself: the file's problem
        detail = str(exc) if isinstance(exc, ProctorError) else f"{type(exc).__name__}: {exc}"
        raise TaskDefinitionError(f"building {classes[0].__name__} failed: {detail}", file=path,
                                  line=line_in(exc, path), field="evaluation_data") from None
    return built, gen_kwargs, call


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
    cache: str | Path | None = None,
    chunk_size: int | None = None,
    progress: Any = None,
    update: bool = False,
    restart: bool = False,
    config: UseCaseConfig | None = None,
) -> tuple[Path, dict]:
    """Run each use case file on one model; returns the run folder and results (run-folder layout).
    ``config``: data, metrics and settings from the command line / a config file (``runconfig.py``)."""
    loaded = [(Path(p), *load_use_case_file(p, limit, config)) for p in paths]  # bad files fail before the model loads
    entries = [(f"{path.stem}:{case.name}", case, gen_kwargs, str(path), call) for path, case, gen_kwargs, call in loaded]
    result = _run_entries(
        entries, model, output_dir=output_dir, runs_root=runs_root, limit=limit, model_options=model_options,
        command=command, cache=cache, chunk_size=chunk_size, progress=progress, update=update, restart=restart,
    )
    return result.run_dir, result.results


def run_use_cases(
    use_cases: UseCase | Sequence[UseCase],
    model: Any = "smollm2",
    *,
    gen_kwargs: Mapping[str, Any] | None = None,
    output_dir: str | Path | None = None,
    runs_root: str | Path = "runs",
    model_options: Mapping[str, Any] | None = None,
    cache: str | Path | None = None,
    chunk_size: int | None = None,
    progress: Any = None,
    update: bool = False,
    restart: bool = False,
    command: Sequence[str] | None = None,
    batch_size: int | None = None,
    runtime_overrides: Mapping[str, Any] | None = None,
):
    """Run use cases on a proctor model (or a ``--model`` string) into a run folder.

    ``generate`` receives ``gen_kwargs``, ``runtime_overrides`` and ``batch_size`` (default: the
    model's batch size) as AISteer360's Benchmark passes them.

    Every model call the use cases make through ``batch_retry_generate`` goes through the engine
    with the folder's response store (``store.sqlite``, optionally backed by ``cache`` or
    $PROCTOR_CACHE): each chunk is committed as it returns, and running again on the same
    ``output_dir`` (after it finished, or after a kill) calls the model only for what is missing.
    ``progress(name, done, total)`` is the runner's hook. Returns an ``EvaluationResult``.
    """
    cases = [use_cases] if isinstance(use_cases, UseCase) else list(use_cases)
    call = {"batch_size": batch_size, "runtime_overrides": runtime_overrides}
    entries = [(case.name, case, dict(gen_kwargs or {}), None, call) for case in cases]
    names = [name for name, *_ in entries]
    if len(set(names)) != len(names):
        entries = [(f"{name}#{k}", *rest) for k, (name, *rest) in enumerate(entries)]
    return _run_entries(
        entries, model, output_dir=output_dir, runs_root=runs_root, limit=None, model_options=model_options,
        command=command, cache=cache, chunk_size=chunk_size, progress=progress, update=update, restart=restart,
    )


def _run_entries(
    entries: list[tuple[str, UseCase, dict, str | None, dict]],
    model: Any,
    *,
    output_dir, runs_root, limit, model_options, command, cache, chunk_size, progress, update, restart,
):
    from proctor.models.base import Model
    from proctor.models.registry import load_model
    from proctor.runs.lock import hold_run_dir
    from proctor.runs.results import new_run_dir

    started = time.perf_counter()
    owned = None
    if isinstance(model, str):
        model = owned = load_model(model, **dict(model_options or {}))
    if not isinstance(model, Model):
        raise TypeError(
            f"use cases run into a run folder on a proctor model (a --model string, HFModel, or "
            f"SteeringPipeline.as_model()), not a {type(model).__name__}"
        )
    run_dir = Path(output_dir) if output_dir else new_run_dir(Path(runs_root), model.name)
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        lock = hold_run_dir(run_dir, command)
        lock.__enter__()  # one writer per run folder
    except BaseException:
        if owned is not None:
            owned.close()
        raise
    try:
        return _run_in_folder(entries, model, owned, run_dir, started, limit, command, cache, chunk_size, progress, update, restart)
    finally:
        lock.__exit__(None, None, None)


def _run_in_folder(entries, model, owned, run_dir, started, limit, command, cache, chunk_size, progress, update, restart):
    from proctor.core.version import __version__
    from proctor.api import EvaluationResult
    from proctor.engine.calls import engine_session
    from proctor.runs.manifest import build_manifest, mark, now, open_run
    from proctor.runs.results import RunWriter
    from proctor.runs.store import STORE_FILE, Lookup, ResponseStore, cache_path
    from proctor.dialects.aisteer.aisteer_names import aisteer360_names

    fingerprint = model.fingerprint
    manifest = open_run(
        run_dir,
        build_manifest(
            command, fingerprint, {name: case.fingerprint() for name, case, *_ in entries},
            {"limit": limit, "gen_kwargs": {name: _jsonable(kwargs) for name, _, kwargs, *_ in entries}},
        ),
        update=update,
        restart=restart,
    )
    cache_file = cache_path(cache)
    lookup = Lookup(ResponseStore(run_dir / STORE_FILE), ResponseStore(cache_file) if cache_file else None)
    lookup.use_model(fingerprint)
    writer = RunWriter(run_dir)
    results: dict[str, Any] = {
        "proctor_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": list(command) if command is not None else None,
        "model": fingerprint,
        "status": "running",
        "tasks": {},
        "groups": {},
    }
    try:
        for name, use_case, gen_kwargs, source, call in entries:
            task_started = time.perf_counter()
            batch_size = call.get("batch_size") or _model_batch_size(model)
            random.seed(getattr(use_case, "seed", 555))  # files that shuffle with the global random build the same prompts
            with engine_session(lookup, chunk_size, progress, name) as session, aisteer360_names():
                generations = use_case.generate(
                    model, getattr(model, "tokenizer", None), gen_kwargs=gen_kwargs,
                    runtime_overrides=call.get("runtime_overrides"), batch_size=batch_size,
                )
            with aisteer360_names():
                evaluations = use_case.evaluate(generations)
            writer.append_samples([{"task": name, **g} for g in generations])
            metrics: dict[str, Any] = {}
            for metric, values in evaluations.items():
                _flatten(metric, values, metrics)
            results["tasks"][name] = {
                "kind": "usecase",
                "dialect": "usecase",
                "source": source,
                "version": "-",
                "hash": use_case.fingerprint(),
                "n_samples": len(generations),
                "n_rows": len(use_case.evaluation_data),
                "metrics": metrics,
                "evaluations": evaluations,
                "requests": {"unique": session.total, "computed": session.model_calls},
                "timing": {"total_seconds": round(time.perf_counter() - task_started, 3)},
            }
            writer.write_results(results)
        results["status"] = "complete"
        results["timing"] = {"total_seconds": round(time.perf_counter() - started, 3)}
        writer.write_results(results)
        mark(
            run_dir, manifest, finished=now(),
            responses={"from_run_store": lookup.hits_run, "from_cache": lookup.hits_cache, "computed": lookup.computed},
        )
    finally:
        lookup.close()
        if owned is not None:
            owned.close()
    return EvaluationResult(run_dir, results)


def _model_batch_size(model: Any) -> int:
    size = getattr(model, "batch_size", None)
    return size if isinstance(size, int) and size > 0 else 8


def _jsonable(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value, default=repr))
