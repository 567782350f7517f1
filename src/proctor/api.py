"""Python entry points: ``load_tasks`` and ``evaluate``."""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from proctor.core.errors import ProctorError, TaskDefinitionError
from proctor.core.redact import masked_command
from proctor.core.run_overrides import RunOverrides
from proctor.core.task import Task
from proctor.core.version import __version__
from proctor.engine.discovery import collect_tasks
from proctor.engine.override_policy import apply_overrides, epochs_of
from proctor.engine.prepare import PreparedTask, prepare_task, prepare_tasks, task_config
from proctor.engine.run_config import ModelConfig, ModelRef, OutputOptions, PrepareOptions, RowLimit, RunConfig
from proctor.engine.runner import ProgressHook, build_requests, run_built
from proctor.models.base import ConvertsToModel, Model
from proctor.models.info import model_info
from proctor.runs.executor import default_chunk_size
from proctor.runs.lock import hold_run_dir
from proctor.runs.manifest import build_manifest, check_output_folder, check_resume, mark, now, open_run
from proctor.runs.results import RunWriter, check_writable_folder, new_run_dir
from proctor.runs.results_schema import RunTiming
from proctor.runs.run_results import RunResults, environment
from proctor.runs.store import STORE_FILE, Lookup, ResponseStore, cache_path
from proctor.runs.task_exports import write_task_exports
from proctor.runs.unwritable import explained
from proctor.scoring.aggregate import aggregate_groups
from proctor.scoring.rollup import rollup

log = logging.getLogger(__name__)


@dataclass
class EvaluationResult:
    run_dir: Path
    results: dict[str, Any]

    @property
    def tasks(self) -> dict[str, dict[str, Any]]:
        tasks: dict[str, dict[str, Any]] = self.results["tasks"]
        return tasks

    def metric(self, task: str, name: str) -> float:
        return float(self.results["tasks"][task]["metrics"][name]["value"])


def load_tasks(
    paths: Iterable[str | Path],
    select: Iterable[str] | None = None,
    options: Mapping[str, Any] | None = None,
    problems: list[dict[str, str]] | None = None,
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
    model: ModelRef = "smollm2",
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
    (``core.run_overrides.RunOverrides``: few-shot count, generation settings, seed, epochs, system
    prompt, few-shot as turns, sample logging) change every task before it is prepared; they are
    recorded in results.json and run.json.

    The keywords build one ``engine.run_config.RunConfig`` (the limit parsed as it is built), run by ``run_evaluation``
    as ``proctor run``'s is.
    """
    config = RunConfig(
        tasks=tuple(tasks),
        model=ModelConfig(model, dict(model_options or {}), workers, cluster),
        select=None if select is None else tuple(select),
        dialect_options=dialect_options,
        limit=RowLimit.parse(limit, limit_per_part),
        prepare=PrepareOptions(
            dict(variables or {}),
            None if data_path is None else Path(data_path),
            chat,
            mc_format,
            mc_shuffle_seed,
            overrides or RunOverrides(),
        ),
        output=OutputOptions(
            None if output_dir is None else Path(output_dir),
            Path(runs_root),
            cache,
            chunk_size,
            update,
            restart,
            export,
            None if command is None else tuple(command),
        ),
    )
    return run_evaluation(config, progress)


@dataclass(frozen=True)
class _Prepared:
    """What a run has before its model loads: the prepared tasks, and how it started."""

    tasks: list[PreparedTask]
    skipped: list[dict[str, str]]  # files and tasks found in folders that could not be loaded or prepared
    named: set[Path] | None  # the task files named directly (None: Task objects were given)
    command: list[str] | None  # as recorded: no URL password
    started: float  # perf_counter() at the start of the run


def run_evaluation(config: RunConfig, progress: ProgressHook | None = None) -> EvaluationResult:
    """Run tasks on a model as ``config`` says and write a run folder (``evaluate`` documents each option;
    ``proctor run`` builds the configuration from its flags). ``progress(task, done, total)`` is called as
    requests finish."""
    started = time.perf_counter()
    output, options = config.output, config.prepare
    command = masked_command(output.command)  # run.json, results.json, .lock and the report record it: no URL password
    check_run_options(output.output_dir, output.cache, output.update, output.restart, options.data_path)
    skipped: list[dict[str, str]] = []  # files and tasks found in folders that could not be loaded or prepared
    named: set[Path] | None = None
    paths = [p for p in config.tasks if not isinstance(p, Task)]
    task_list = [t for t in config.tasks if isinstance(t, Task)]
    if paths and task_list:
        raise ProctorError("tasks are given as Task objects or as paths and names, not both in one run")
    if paths:
        named = {Path(p).resolve() for p in paths if Path(p).is_file()}
        task_list = collect_tasks(paths, select=config.select, options=config.dialect_options, problems=skipped)
    task_list = apply_overrides(task_list, options.overrides, options.chat)
    variables = options.all_variables()
    if not task_list:
        raise ProctorError("no tasks found" + "".join(f"\n  {p['file']}: {p['error']}" for p in skipped))
    how: dict[str, Any] = dict(
        limit=config.limit.value,
        limit_per_part=config.limit.per_part,
        chat=options.chat,
        mc_format=options.mc_format,
        mc_shuffle_seed=options.mc_shuffle_seed,
        overrides=options.overrides,
    )
    if named is None:
        prepared = prepare_tasks(task_list, variables, **how)
    else:
        prepared = _prepare_found(task_list, named, skipped, variables, **how)
    model = config.model
    if isinstance(model.model, str):  # after the tasks (their errors first), before anything loads
        from proctor.models.registry import check_model_options, check_model_source

        check_model_options(model.model, dict(model.options))
        _check_images_taken(prepared, model.model)
        cluster = model.cluster_options()
        if cluster is not None:  # a missing package, then a cluster that does not answer, before anything loads
            from proctor.engine.ray_cluster import check_reachable, require_ray

            require_ray()
            if cluster.address is not None:
                check_reachable(cluster.address)
        check_model_source(model.model, dict(model.options))
    with contextlib.ExitStack() as held:
        if output.output_dir is not None:  # one writer per run folder, taken before the model loads
            held.enter_context(hold_run_dir(output.output_dir, command))
            hashes = {p.task.name: p.content_hash for p in prepared}
            recorded = _recorded_options(config, {})  # --chunk-size's default is the model's: checked once it loads
            known = None  # what of the model's fingerprint is known before loading it (a local folder's)
            if isinstance(model.model, str):
                from proctor.models.registry import model_identity

                known = model_identity(model.model, dict(model.options))
            check_resume(
                Path(output.output_dir), hashes, recorded, update=output.update, restart=output.restart, model=known
            )
        return _load_and_evaluate(config, _Prepared(prepared, skipped, named, command, started), progress)


def _check_images_taken(prepared: Sequence[PreparedTask], spec: str) -> None:
    """A task with images on a model known, before it loads, to take none (a text model's folder, the embedded
    default): the task file's ``images`` and the model named now, not after loading it."""
    from proctor.engine.runner import has_images
    from proctor.models.registry import takes_images

    showing = [p for p in prepared if has_images(p)]
    if not showing or takes_images(spec) is not False:
        return
    task = showing[0].task
    raise TaskDefinitionError(
        f"task '{task.name}' shows images, and model '{spec}' takes none (a text model: its config names no "
        "vision tower); run it on a vision-language model (a local Hugging Face image-text-to-text folder, "
        "hf-vision:<folder>, or openai:<name> on a server that takes images)",
        file=task.file,
        line=task.lines.get("images", task.line),
        field="images",
    )


def _load_and_evaluate(config: RunConfig, run: _Prepared, progress: ProgressHook | None) -> EvaluationResult:
    load_started = time.perf_counter()
    owned: Model | None = None  # a model loaded here is closed here
    ref = config.model.model
    # the name as the user wrote it (lm-eval's model_name); a pool of replicas keeps the one it was started with
    spec = ref if isinstance(ref, str) else getattr(ref, "spec", None)
    given = spec if isinstance(spec, str) else None
    model: Model
    if isinstance(ref, str):
        cluster = config.model.cluster_options()
        if cluster is not None:
            from proctor.engine.distributed import DistributedModel

            model = owned = DistributedModel(ref, config.model.options, cluster)
        else:
            from proctor.models.registry import load_model

            model = owned = load_model(ref, **dict(config.model.options))
    elif not isinstance(ref, Model) and isinstance(ref, ConvertsToModel):  # a SteeringPipeline
        model = ref.as_model()
    else:
        model = ref  # a Model, or a stand-in with its calls (test doubles need not subclass it)
    try:
        load_seconds = time.perf_counter() - load_started
        if config.output.output_dir is not None:
            run_dir = Path(config.output.output_dir)
            with explained(run_dir, run_dir / STORE_FILE):  # a full disk: one error that says the answers are kept
                return _evaluate_loaded(config, run, model, load_seconds, given, run_dir, progress)
        run_dir = new_run_dir(config.output.runs_root, model.name)  # a new folder of our own: held like any other
        with hold_run_dir(run_dir, run.command), explained(run_dir, run_dir / STORE_FILE):
            return _evaluate_loaded(config, run, model, load_seconds, given, run_dir, progress)
    finally:
        if owned is not None:
            owned.close()


def _prepare_found(
    tasks: Sequence[Task],
    named: set[Path],
    skipped: list[dict[str, str]],
    variables: Mapping[str, str] | None,
    overrides: RunOverrides,
    **options: Any,
) -> list[PreparedTask]:
    """Prepare every task; one found in a folder that fails is reported in ``skipped`` (and logged) and the
    others go on. A task from a file named directly, or the failure of every task, still raises."""
    from proctor.core.errors import TaskDefinitionError

    prepared: list[PreparedTask] = []
    first: TaskDefinitionError | None = None
    failed: list[tuple[str, Exception]] = []
    for task in tasks:
        try:
            prepared.append(
                prepare_task(
                    task,
                    variables or {},
                    epochs=epochs_of(task, overrides),
                    epoch_reducer=overrides.epoch_reducer,
                    **options,
                )
            )
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


def _chunk_option(model: Model, chunk_size: int | None) -> dict[str, int]:
    """A non-default --chunk-size enters the resume check: a backend that packs each call's requests
    together (HF) gives slightly different numbers for other chunks, so a run must not mix them."""
    if chunk_size is None or chunk_size == default_chunk_size(model):
        return {}
    return {"chunk_size": chunk_size}


def _recorded_options(config: RunConfig, chunk: Mapping[str, int]) -> dict[str, Any]:
    """The options run.json records, which a run continuing in the folder must match (``chunk``: ``_chunk_option``)."""
    options, limit = config.prepare, config.limit
    overrides = options.overrides.recorded()
    return {
        "limit": limit.value,
        **({"limit_per_part": True} if limit.per_part else {}),
        "chat": options.chat,
        "variables": dict(options.all_variables() or {}),
        **options.mc_options(),
        **chunk,
        **({"overrides": overrides} if overrides else {}),
    }


def check_run_options(
    output_dir: str | Path | None, cache: str | Path | None, update: bool, restart: bool, data_path: str | Path | None
) -> None:
    """What can be checked before any task file is read or model loaded."""
    if update and restart:
        raise ProctorError(
            "--update and --restart exclude each other: update keeps what still matches, restart discards it all"
        )
    if output_dir is not None:
        check_writable_folder(Path(output_dir), "--output")
        check_output_folder(Path(output_dir), restart)
        store_file = Path(output_dir) / STORE_FILE  # an empty one is left to check_resume (beside results.json?)
        if not restart and store_file.is_file() and store_file.stat().st_size > 0:
            # a damaged store is an error now, not after the model loads and the folder's results are replaced
            try:
                with ResponseStore(store_file) as store:
                    store.check()
            except ProctorError as exc:
                raise ProctorError(
                    f"{exc}; use --restart to start {output_dir} over (its stored answers are discarded), "
                    "or choose another --output"
                ) from None
    cache_file = cache_path(cache)
    if cache_file is not None:
        check_writable_folder(cache_file.parent, "--cache")
        if cache_file.is_file():
            ResponseStore(cache_file).close()
    if data_path is not None and not Path(data_path).expanduser().is_dir():
        raise ProctorError(f"--data-path {data_path}: no such folder")


def _evaluate_loaded(
    config: RunConfig,
    run: _Prepared,
    model: Model,
    load_seconds: float,
    model_name: str | None,
    run_dir: Path,
    progress: ProgressHook | None,
) -> EvaluationResult:
    prepared, skipped, named, command, started = run.tasks, run.skipped, run.named, run.command, run.started
    output, options, limit = config.output, config.prepare, config.limit
    overrides = options.overrides.recorded()
    chunk_size = output.chunk_size
    run_dir.mkdir(parents=True, exist_ok=True)
    fingerprint = model.fingerprint
    manifest = open_run(
        run_dir,
        build_manifest(
            command,
            fingerprint,
            {p.task.name: p.content_hash for p in prepared},
            _recorded_options(config, _chunk_option(model, chunk_size)),
        ),
        update=output.update,
        restart=output.restart,
    )
    built = [build_requests(model, p) for p in prepared]  # every prompt renders before any model call
    cache_file = cache_path(output.cache)
    lookup = Lookup(ResponseStore(run_dir / STORE_FILE), ResponseStore(cache_file) if cache_file else None)
    lookup.use_model(fingerprint)
    writer = RunWriter(run_dir)
    record = RunResults(
        proctor_version=__version__,
        created=manifest["created"],
        command=list(command) if command is not None else None,
        model=fingerprint,
        model_info={**model_info(model), **({"model_name": model_name} if model_name else {})},
        chat_applied=any(p.use_chat for p in prepared),
        environment=environment(_git_hash()),
        limit=limit.value,
        limit_per_part=True if limit.per_part else None,
        overrides=overrides,
        timing=RunTiming(model_load_seconds=round(load_seconds, 3)),
        # files / tasks found in folders that could not be loaded or prepared, with their errors
        skipped=list(skipped) if skipped else None,
    )
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
                record.add_skipped({"task": task.name, "file": str(task.file), "error": str(exc), "stage": "run"})
                writer.write_results(record.as_dict())
                continue
            exported = write_task_exports(item.prepared, outcome, run_dir, model.name)
            if exported:
                outcome.result.exports = exported
            if overrides.get("log_samples", True):
                writer.append_samples(outcome.records)
            record.add_task(
                outcome.name, outcome.result
            )  # its warnings are also listed run-wide, and printed by the CLI
            writer.write_results(record.as_dict())  # what finished is on disk
        memberships = {
            p.task.name: p.task.spec.group for p in prepared if p.task.spec.group and p.task.name in record.tasks
        }
        for p in prepared:  # a group over fewer tasks than it has is another number: say so
            if p.task.spec.group and p.task.name not in record.tasks:
                record.add_warning(
                    f"{p.task.name}: failed, so group(s) {', '.join(p.task.spec.group)} average the other tasks only"
                )
        entries = record.task_entries()
        record.finish(aggregate_groups(entries, memberships), rollup(entries), round(time.perf_counter() - started, 3))
        results = record.as_dict()
        writer.write_results(results)
        mark(
            run_dir,
            manifest,
            finished=now(),
            responses={"from_run_store": lookup.hits_run, "from_cache": lookup.hits_cache, "computed": lookup.computed},
        )
    finally:
        lookup.close()
    if output.export:
        from proctor.runs.run_exports import write_exports

        write_exports(run_dir, ("lm-eval", "parquet") if overrides.get("log_samples", True) else ("lm-eval",))
    return EvaluationResult(run_dir, results)
