"""Python entry points: ``load_tasks`` and ``evaluate``."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, cast

from proctor.core.errors import ProctorError, TaskDefinitionError
from proctor.core.redact import masked_command
from proctor.core.task import Task
from proctor.core.version import __version__
from proctor.engine.discovery import collect_tasks
from proctor.engine.overrides import RunOverrides, apply_overrides, epochs_of, parse_limit
from proctor.engine.prepare import prepare_task, prepare_tasks, task_config
from proctor.engine.runner import ProgressHook, build_requests, run_built
from proctor.models.base import ConvertsToModel, Model
from proctor.models.info import model_info
from proctor.runs.executor import default_chunk_size
from proctor.runs.lock import hold_run_dir
from proctor.runs.manifest import build_manifest, check_output_folder, mark, now, open_run
from proctor.runs.results import RunWriter, check_writable_folder, new_run_dir
from proctor.runs.store import STORE_FILE, Lookup, ResponseStore, cache_path
from proctor.runs.task_exports import write_task_exports
from proctor.scoring.aggregate import aggregate_groups
from proctor.scoring.rollup import rollup

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


def _mc_options(mc_format: str, seed: int | None) -> dict:
    """Only non-default multiple-choice options enter the manifest (older run folders stay comparable)."""
    out: dict = {}
    if mc_format != "auto":
        out["mc_format"] = mc_format
    if seed is not None:
        out["mc_shuffle_seed"] = seed
    return out


def load_tasks(
    paths: Iterable[str | Path],
    select: Iterable[str] | None = None,
    options: Mapping[str, Any] | None = None,
    problems: list[dict] | None = None,
    notes: list[str] | None = None,
) -> list[Task]:
    """Tasks found in files and folders (recursively), optionally filtered by name globs.

    ``options`` go to the dialect plug-ins (each reads its own keys, e.g. ``probsem_temp``, ``seahelm_data``).
    ``problems``: a list that receives ``{"file", "error"}`` for each file in a folder that could not be
    loaded, instead of the first such error stopping the load; ``notes``: a list that receives why a
    dialect left tasks out (e.g. a SEA-HELM language without data).
    """
    return collect_tasks(paths, select=select, options=options, problems=problems, notes=notes)


def task_hash(task: Task, variables: Mapping[str, str] | None = None) -> str:
    """The content hash of a task as a run folder's ``run.json`` records it (spec, samples, prompts)."""
    return prepare_task(task, dict(variables or {})).content_hash


def evaluate(
    tasks: Sequence[Task] | Iterable[str | Path],
    model: Model | str = "smollm2",
    *,
    output_dir: str | Path | None = None,
    runs_root: str | Path = "runs",
    limit: int | float | None = None,
    limit_per_part: bool = False,
    select: Iterable[str] | None = None,
    variables: Mapping[str, str] | None = None,
    data_path: str | Path | None = None,
    dialect_options: Mapping[str, Any] | None = None,
    chat: bool | None = None,
    model_options: Mapping[str, Any] | None = None,
    progress: ProgressHook | None = None,
    command: Sequence[str] | None = None,
    cache: str | Path | None = None,
    chunk_size: int | None = None,
    update: bool = False,
    restart: bool = False,
    export: bool = True,
    workers: int | None = None,
    cluster: Any = None,
    mc_format: str = "auto",
    mc_shuffle_seed: int | None = None,
    overrides: RunOverrides | None = None,
) -> EvaluationResult:
    """Run tasks on a model and write a run folder; returns the results.

    Every task is prepared (data read, prompts rendered) before the model loads, so bad input
    fails fast. Each model response is stored (``store.sqlite``) as soon as its chunk of
    ``chunk_size`` requests finishes; running again with the same ``output_dir`` continues where
    an interrupted run stopped. A folder started with other tasks, model or options is refused
    unless ``update`` (accept the changes, reuse what still matches) or ``restart`` is given.
    ``cache`` (or $PROCTOR_CACHE) names a response cache shared across runs.
    ``mc_format`` picks how multiple-choice tasks run: "loglikelihood", "generate" (lettered
    options, the letter read from a generated reply; ``mc_shuffle_seed`` shuffles the options) or
    "auto" (generate when the model cannot score log-likelihoods, e.g. a chat-only API).
    ``data_path`` is GLM-130B's DATA_PATH (sets ``${DATA_PATH}``); ``dialect_options`` see ``load_tasks``.
    ``workers`` > 1 (or a ``cluster`` with an address) runs that many replicas of a model named by
    string on Ray (``engine.distributed.ClusterOptions``), with the same numbers as one process.
    ``model`` may also be a ``SteeringPipeline``: tasks then run on the steered model (``as_model()``).
    ``limit`` is a count or a fraction (0 < limit < 1) of each task's rows; with ``limit_per_part``, of
    the rows of each part of a task's first ``breakdown`` field (e.g. each MMLU subject; a task without
    a breakdown, or one whose class reads its own rows, is limited as a whole). ``overrides``
    (``engine.overrides.RunOverrides``: few-shot count, generation settings, seed, epochs, system
    prompt, few-shot as turns, sample logging) change every task before it is prepared; they are
    recorded in results.json and run.json.
    """
    started = time.perf_counter()
    command = masked_command(command)  # run.json, results.json, .lock and the report record it: no URL password
    check_run_options(output_dir, cache, update, restart, data_path)
    given = list(tasks)
    task_list = cast("list[Task]", given)  # the signature's two forms: all tasks, or all paths (below)
    skipped: list[dict] = []  # files and tasks found in folders that could not be loaded or prepared
    named: set[Path] | None = None
    if given and not isinstance(given[0], Task):
        paths = cast("list[str | Path]", given)
        named = {Path(p).resolve() for p in paths if Path(p).is_file()}
        task_list = collect_tasks(paths, select=select, options=dialect_options, problems=skipped)
    overrides = overrides or RunOverrides()
    limit = parse_limit(limit)
    task_list = apply_overrides(task_list, overrides, chat)
    if data_path is not None:
        variables = {**(variables or {}), "DATA_PATH": str(Path(data_path).expanduser().resolve())}
    if not task_list:
        raise ProctorError("no tasks found" + "".join(f"\n  {p['file']}: {p['error']}" for p in skipped))
    if named is None:
        prepared = prepare_tasks(task_list, variables, limit=limit, limit_per_part=limit_per_part, chat=chat, mc_format=mc_format,
                                 mc_shuffle_seed=mc_shuffle_seed, overrides=overrides)
    else:
        prepared = _prepare_found(task_list, named, skipped, variables, limit=limit, limit_per_part=limit_per_part, chat=chat,
                                  mc_format=mc_format, mc_shuffle_seed=mc_shuffle_seed, overrides=overrides)
    if isinstance(model, str):  # after the tasks (their errors first), before anything loads
        from proctor.models.registry import check_model_options, check_model_source

        check_model_options(model, dict(model_options or {}))
        if _cluster_options(workers, cluster) is not None:  # a missing package before the network
            from proctor.engine.distributed import require_ray

            require_ray()
        check_model_source(model, dict(model_options or {}))
    with contextlib.ExitStack() as held:
        if output_dir is not None:  # one writer per run folder, taken before the model loads
            held.enter_context(hold_run_dir(Path(output_dir), command))
        return _load_and_evaluate(
            prepared, model, model_options, workers, cluster, started, output_dir, runs_root, limit, variables, chat,
            progress, command, cache, chunk_size, update, restart, export, mc_format, mc_shuffle_seed,
            overrides.recorded(), skipped, named, limit_per_part=limit_per_part and limit is not None,
        )


def _load_and_evaluate(
    prepared, model, model_options, workers, cluster, started, output_dir, runs_root, limit, variables, chat,
    progress, command, cache, chunk_size, update, restart, export, mc_format, mc_shuffle_seed, overrides, skipped, named,
    limit_per_part=False,
) -> EvaluationResult:
    load_started = time.perf_counter()
    owned: Model | None = None  # a model loaded here is closed here
    # the name as the user wrote it (lm-eval's model_name); a pool of replicas keeps the one it was started with
    spec = model if isinstance(model, str) else getattr(model, "spec", None)
    given = spec if isinstance(spec, str) else None
    if isinstance(model, str):
        options = _cluster_options(workers, cluster)
        if options is not None:
            from proctor.engine.distributed import DistributedModel

            model = owned = DistributedModel(model, model_options, options)
        else:
            from proctor.models.registry import load_model

            model = owned = load_model(model, **dict(model_options or {}))
    elif not isinstance(model, Model) and isinstance(model, ConvertsToModel):  # a SteeringPipeline
        model = model.as_model()
    try:
        return _evaluate_loaded(
            prepared, model, started, time.perf_counter() - load_started, output_dir, runs_root, limit, variables, chat,
            progress, command, cache, chunk_size, update, restart, export, _mc_options(mc_format, mc_shuffle_seed),
            overrides, skipped, named, model_name=given, limit_per_part=limit_per_part,
        )
    finally:
        if owned is not None:
            owned.close()


def _prepare_found(tasks: Sequence[Task], named: set[Path], skipped: list[dict], variables, overrides, **options) -> list:
    """Prepare every task; one found in a folder that fails is reported in ``skipped`` (and logged) and the
    others go on. A task from a file named directly, or the failure of every task, still raises."""
    from proctor.core.errors import TaskDefinitionError

    prepared, first = [], None
    failed: list[tuple[str, Exception]] = []
    for task in tasks:
        try:
            prepared.append(prepare_task(task, variables or {}, epochs=epochs_of(task, overrides),
                                         epoch_reducer=overrides.epoch_reducer, **options))
        except TaskDefinitionError as exc:
            if task.file is None or task.file.resolve() in named:
                raise
            first = first or exc
            failed.append((task.name, exc))
            skipped.append({"task": task.name, "file": str(task.file), "error": str(exc), "stage": "prepare"})
    # each problem is printed once: when nothing could be prepared, the first is the error itself
    for name, error in failed if prepared else failed[1:]:
        logging.getLogger("proctor").warning("skipping task '%s': %s", name, error)
    if not prepared and first is not None:
        raise first
    return prepared


def _git_hash() -> str | None:
    """The commit of the folder the run started in (lm-eval records it too), or None outside git."""
    import subprocess

    try:
        out = subprocess.run(["git", "describe", "--always"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _chunk_option(model: Model, chunk_size: int | None) -> dict:
    """A non-default --chunk-size enters the resume check: a backend that packs each call's requests
    together (HF) gives slightly different numbers for other chunks, so a run must not mix them."""
    if chunk_size is None or chunk_size == default_chunk_size(model):
        return {}
    return {"chunk_size": chunk_size}


def check_run_options(output_dir, cache, update, restart, data_path) -> None:
    """What can be checked before any task file is read or model loaded."""
    if update and restart:
        raise ProctorError("--update and --restart exclude each other: update keeps what still matches, restart discards it all")
    if output_dir is not None:
        check_writable_folder(Path(output_dir), "--output")
        check_output_folder(Path(output_dir), restart)
        if not restart and (Path(output_dir) / STORE_FILE).is_file():
            ResponseStore(Path(output_dir) / STORE_FILE).close()  # a damaged store is an error now, not after the model loads
    cache_file = cache_path(cache)
    if cache_file is not None:
        check_writable_folder(cache_file.parent, "--cache")
        if cache_file.is_file():
            ResponseStore(cache_file).close()
    if data_path is not None and not Path(data_path).expanduser().is_dir():
        raise ProctorError(f"--data-path {data_path}: no such folder")


def _cluster_options(workers: int | None, cluster: Any):
    """ClusterOptions when the run goes to Ray (more than one worker, or a cluster address), else None."""
    if cluster is None and (workers or 1) <= 1:
        return None
    from proctor.engine.distributed import ClusterOptions

    if cluster is None:
        assert workers is not None  # more than one, as checked above
        cluster = ClusterOptions(workers=workers)
    elif not isinstance(cluster, ClusterOptions):
        cluster = ClusterOptions(**dict(cluster))
    if workers is not None and workers != cluster.workers:
        cluster = dataclasses.replace(cluster, workers=workers)
    if cluster.workers <= 1 and cluster.address is None:
        return None
    return cluster


def _evaluate_loaded(
    prepared, model: Model, started, load_seconds, output_dir, runs_root, limit, variables, chat,
    progress, command, cache, chunk_size, update, restart, export, mc_options, overrides, skipped=(), named=None,
    model_name=None, limit_per_part=False,
) -> EvaluationResult:
    if output_dir is None:  # a new folder of our own: held like any other
        run_dir = new_run_dir(Path(runs_root), model.name)
        with hold_run_dir(run_dir, command):
            return _evaluate_loaded(
                prepared, model, started, load_seconds, run_dir, runs_root, limit, variables, chat,
                progress, command, cache, chunk_size, update, restart, export, mc_options, overrides, skipped, named,
                model_name, limit_per_part,
            )
    run_dir = Path(output_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    fingerprint = model.fingerprint
    manifest = open_run(
        run_dir,
        build_manifest(
            command,
            fingerprint,
            {p.task.name: p.content_hash for p in prepared},
            {"limit": limit, **({"limit_per_part": True} if limit_per_part else {}), "chat": chat, "variables": dict(variables or {}), **mc_options, **_chunk_option(model, chunk_size),
             **({"overrides": overrides} if overrides else {})},
        ),
        update=update,
        restart=restart,
    )
    built = [build_requests(model, p) for p in prepared]  # every prompt renders before any model call
    cache_file = cache_path(cache)
    lookup = Lookup(ResponseStore(run_dir / STORE_FILE), ResponseStore(cache_file) if cache_file else None)
    lookup.use_model(fingerprint)
    writer = RunWriter(run_dir)
    results: dict[str, Any] = {
        "proctor_version": __version__,
        "created": manifest["created"],
        "command": list(command) if command is not None else None,
        "model": fingerprint,
        "model_info": {**model_info(model), **({"model_name": model_name} if model_name else {})},
        "chat_applied": any(p.use_chat for p in prepared),
        "environment": {"python": platform.python_version(), "platform": platform.platform(), "git_hash": _git_hash()},
        "status": "running",
        "limit": limit,
        **({"limit_per_part": True} if limit_per_part else {}),
        "overrides": overrides,
        "tasks": {},
        "groups": {},
        "timing": {"model_load_seconds": round(load_seconds, 3)},
    }
    if skipped:  # files / tasks found in folders that could not be loaded or prepared, with their errors
        results["skipped"] = list(skipped)
    try:
        if progress:  # announce every task first: an overall bar knows its total from the start
            for item in built:
                progress(item.name, 0, len(item.unique))
        for item in built:
            writer.write_task_config(item.name, task_config(item.prepared))
            try:
                outcome = run_built(model, item, progress, lookup, chunk_size)
            except TaskDefinitionError as exc:  # its own code or data failed while it ran (e.g. a GLM task class)
                task = item.prepared.task
                if named is None or task.file is None or task.file.resolve() in named:
                    raise  # a task named directly stops the run, as at load time
                log.warning("task '%s' failed: %s", task.name, exc)
                results.setdefault("skipped", []).append({"task": task.name, "file": str(task.file), "error": str(exc), "stage": "run"})
                writer.write_results(results)
                continue
            exported = write_task_exports(item.prepared, outcome, run_dir, model.name)
            if exported:
                outcome.result["exports"] = exported
            if overrides.get("log_samples", True):
                writer.append_samples(outcome.records)
            results["tasks"][outcome.name] = outcome.result
            for warning in outcome.result.get("warnings", []):  # also listed run-wide, and printed by the CLI
                results.setdefault("warnings", []).append(f"{outcome.name}: {warning}")
            writer.write_results(results)  # what finished is on disk
        memberships = {p.task.name: p.task.spec.group for p in prepared if p.task.spec.group and p.task.name in results["tasks"]}
        for p in prepared:  # a group over fewer tasks than it has is another number: say so
            if p.task.spec.group and p.task.name not in results["tasks"]:
                results.setdefault("warnings", []).append(
                    f"{p.task.name}: failed, so group(s) {', '.join(p.task.spec.group)} average the other tasks only")
        results["groups"] = aggregate_groups(results["tasks"], memberships)
        hierarchy = rollup(results["tasks"])
        if hierarchy is not None:
            results["rollup"] = hierarchy
        results["status"] = "partial" if results.get("skipped") else "complete"
        results["timing"]["total_seconds"] = round(time.perf_counter() - started, 3)
        writer.write_results(results)
        mark(
            run_dir,
            manifest,
            finished=now(),
            responses={"from_run_store": lookup.hits_run, "from_cache": lookup.hits_cache, "computed": lookup.computed},
        )
    finally:
        lookup.close()
    if export:
        from proctor.runs.run_exports import write_exports

        write_exports(run_dir, ("lm-eval", "parquet") if overrides.get("log_samples", True) else ("lm-eval",))
    return EvaluationResult(run_dir, results)
