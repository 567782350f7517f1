"""``run_evaluation``: a ``RunConfig`` run: every task prepared before the model loads, then the model loaded,
each task run and written to the run folder as it finishes (``api/loaded_evaluation.py``), and the groups and
roll-ups at the end."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from proctor.api.evaluation_result import EvaluationResult
from proctor.api.finished_run import finished_results, model_request
from proctor.api.loaded_evaluation import PreparedRun, evaluate_loaded
from proctor.api.model_resolver import resolve_model
from proctor.api.model_roles import ModelRoles, roles_in_use
from proctor.api.run_options import check_run_options, recorded_options
from proctor.audit.run_rules import GroupMembers
from proctor.core.errors import ProctorError, RunInterrupted, TaskDefinitionError
from proctor.core.notice import notice
from proctor.core.redact import masked_command
from proctor.core.run_overrides import RunOverrides
from proctor.core.task import Task
from proctor.data.variable_use import recording as recording_variable_use
from proctor.data.variable_use import unused_warnings as unused_variables
from proctor.engine.discovery import collect_tasks
from proctor.engine.override_policy import apply_overrides, epochs_of
from proctor.engine.predict_only import unscored
from proctor.engine.prepare import PreparedTask, prepare_task, prepare_tasks
from proctor.engine.run_config import RunConfig
from proctor.engine.runner import ProgressHook
from proctor.engine.sample_selection import select_samples
from proctor.runs.lock import hold_run_dir
from proctor.runs.manifest import check_resume
from proctor.runs.results import new_run_dir
from proctor.runs.store import STORE_FILE, saved_answers
from proctor.runs.unwritable import explained
from proctor.scoring.metrics import DEFAULT_METRICS

log = logging.getLogger("proctor.api")  # the public module's name, as the CLI's log lines show it


def run_evaluation(config: RunConfig, progress: ProgressHook | None = None) -> EvaluationResult:
    """Run tasks on a model as ``config`` says and write a run folder (``evaluate`` documents each option;
    ``proctor run`` builds the configuration from its flags). ``progress(task, done, total)`` is called as
    requests finish."""
    roles = ModelRoles.of(config.roles)  # a bad --model-role: before any task file is read
    try:
        with roles_in_use(roles):  # the dialects' judges and metric models, while tasks load and run
            return _run_evaluation(config, progress, roles)
    except RunInterrupted as exc:  # before this attempt reached its store (the model loading): an earlier one's
        earlier = Path(config.output.output_dir) / STORE_FILE if config.output.output_dir is not None else None
        if exc.run_dir is None and earlier is not None and earlier.is_file():
            exc.run_dir, exc.saved = earlier.parent, saved_answers(earlier)
        raise


def _run_evaluation(config: RunConfig, progress: ProgressHook | None, roles: ModelRoles) -> EvaluationResult:
    started = time.perf_counter()
    output, options = config.output, config.prepare
    command = masked_command(output.command)  # run.json, results.json, .lock and the report record it: no URL password
    check_run_options(
        output.output_dir, output.cache, output.update, output.restart, options.data_path, output.runs_root
    )
    skipped: list[dict[str, str]] = []  # files and tasks found in folders that could not be loaded or prepared
    named: set[Path] | None = None
    paths = [p for p in config.tasks if not isinstance(p, Task)]
    task_list = [t for t in config.tasks if isinstance(t, Task)]
    if paths and task_list:
        raise ProctorError("tasks are given as Task objects or as paths and names, not both in one run")
    if paths:
        named = {Path(p).resolve() for p in paths if Path(p).is_file()}
        task_list = collect_tasks(paths, select=config.select, options=config.dialect_options, problems=skipped)
    task_list = apply_overrides(task_list, options.overrides, options.chat, options.mc_format)
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
        strict_audit=options.strict_audit,
    )
    with recording_variable_use() as use:
        if named is None:
            prepared = prepare_tasks(task_list, variables, **how)
        else:
            prepared = _prepare_found(task_list, named, skipped, variables, **how)
    prepared, without_ids = select_samples(prepared, config.limit.sample_ids)  # --sample-id: before the model loads
    if options.overrides.think_end_token is not None:  # every generation's thinking cut off (runs/thinking.py)
        prepared = [dataclasses.replace(p, think_end_token=options.overrides.think_end_token) for p in prepared]
    lettered = options.overrides.gen_kwargs.get("max_tokens")
    if lettered is not None and options.mc_format != "loglikelihood":  # lettered replies' budget (kinds/mc_generate)
        prepared = [dataclasses.replace(p, lettered_max_tokens=lettered) for p in prepared]
    if options.overrides.think_budget is not None:  # every generation's max_tokens grows by the thinking budget
        prepared = [dataclasses.replace(p, think_budget=options.overrides.think_budget) for p in prepared]
    if not prepared:  # every id was found, so some task holds one: unreachable, but never an empty run
        raise ProctorError("--sample-id: no task holds any of the ids")
    if config.predict_only:
        prepared = unscored(prepared)  # a task class that would score in its own code is refused here
    report_findings(prepared)  # before the model loads: a user can stop a run whose numbers would mislead
    model = config.model
    option_warnings: list[str] = []  # options handed to a backend that declares no check of them
    if isinstance(model.model, str):  # after the tasks (their errors first), before anything loads
        from proctor.models.registry import check_model_options, check_model_source

        option_warnings = check_model_options(model.model, dict(model.options))
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
            recorded = recorded_options(config, {})  # --chunk-size's default is the model's: checked once it loads
            known = None  # what of the model's fingerprint is known before loading it (a local folder's)
            if isinstance(model.model, str):
                from proctor.models.registry import model_identity

                known = model_identity(model.model, dict(model.options))
            check_resume(
                Path(output.output_dir), hashes, recorded, update=output.update, restart=output.restart, model=known
            )
            if isinstance(model.model, str) and not output.update and not output.restart:
                dialects = {p.task.name: p.task.dialect for p in prepared}
                done = _already_complete(config, Path(output.output_dir), hashes, recorded, known, dialects)
                if done is not None:
                    return done
        unused = unused_variables(variables, use) + option_warnings + _groups_short(task_list, skipped)
        run = PreparedRun(prepared, skipped, named, command, started, without_ids, roles, unused)
        return _load_and_evaluate(config, run, progress)


def _groups_short(tasks: Sequence[Task], skipped: Sequence[Mapping[str, str]]) -> list[str]:
    """A task of a group that could not be prepared (--skip-broken): its groups average the others only, another
    number than the group's, so each says so (a task that fails while it runs is told in loaded_evaluation)."""
    failed = {entry.get("task") for entry in skipped if entry.get("stage") == "prepare"}
    return [
        f"{t.name}: could not be prepared, so group(s) {', '.join(t.spec.group)} average the other tasks only"
        for t in tasks
        if t.spec.group and t.name in failed
    ]


def _already_complete(
    config: RunConfig,
    run_dir: Path,
    hashes: Mapping[str, str],
    recorded: Mapping[str, object],
    known: Mapping[str, object] | None,
    dialects: Mapping[str, str],
) -> EvaluationResult | None:
    """The folder's results when it holds a complete run of exactly this request (``api.finished_run``): reported
    without loading the model, which could only compute nothing."""
    assert isinstance(config.model.model, str)
    request = model_request(config.model.model, config.model.options)
    results = finished_results(
        run_dir,
        hashes,
        recorded,
        request,
        known,
        chunk_size=config.output.chunk_size,
        predict_only=bool(config.predict_only),
        dialects=dialects,
    )
    if results is None:
        return None
    notice(log, "already complete: %s holds this run's results (no model loaded)", run_dir)
    if config.output.export:
        from proctor.runs.run_exports import write_exports

        log_samples = config.prepare.overrides.recorded().get("log_samples", True)
        write_exports(run_dir, ("lm-eval", "parquet") if log_samples else ("lm-eval",))
    return EvaluationResult(run_dir, results)


def report_findings(prepared: Sequence[PreparedTask]) -> None:
    """Each task's audit findings, logged once (the console shows them); silenced ones are recorded only."""
    for p in prepared:
        for finding in p.findings:
            if finding.silenced is None:
                log.warning("%s: audit %s", p.task.name, finding.text())


def _check_images_taken(prepared: Sequence[PreparedTask], spec: str) -> None:
    """A task with images on a model known, before it loads, to take none (a text model's folder, the embedded
    default): the task file's ``images`` and the model named now, not after loading it."""
    from proctor.engine.task_requests import has_images
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


def _load_and_evaluate(config: RunConfig, run: PreparedRun, progress: ProgressHook | None) -> EvaluationResult:
    load_started = time.perf_counter()
    resolved = resolve_model(config.model)
    model, given = resolved.model, resolved.given
    owned = model if resolved.owned else None  # a model loaded here is closed here
    try:
        load_seconds = time.perf_counter() - load_started
        if config.output.output_dir is not None:
            run_dir = Path(config.output.output_dir)
            with explained(run_dir, run_dir / STORE_FILE), _interruption_noted(run_dir):  # a full disk, Ctrl-C:
                return evaluate_loaded(config, run, model, load_seconds, given, run_dir, progress)  # what is kept
        run_dir = new_run_dir(config.output.runs_root, model.name)  # a new folder of our own: held like any other
        with hold_run_dir(run_dir, run.command), explained(run_dir, run_dir / STORE_FILE), _interruption_noted(run_dir):
            return evaluate_loaded(config, run, model, load_seconds, given, run_dir, progress)
    finally:
        if owned is not None:
            owned.close()


@contextlib.contextmanager
def _interruption_noted(run_dir: Path) -> Iterator[None]:
    """Run the block; an interruption leaving it (the CLI's ``RunInterrupted``, Ctrl-C in the Python API) learns
    the run folder and how many answers its store holds, which a rerun with the same output folder reuses."""
    try:
        yield
    except RunInterrupted as exc:
        exc.run_dir, exc.saved = run_dir, saved_answers(run_dir / STORE_FILE)
        raise
    except KeyboardInterrupt:
        log.warning(
            "interrupted: %s answer(s) saved in %s; run again with the same output folder to resume",
            saved_answers(run_dir / STORE_FILE),
            run_dir / STORE_FILE,
        )
        raise


def _prepare_found(
    tasks: Sequence[Task],
    named: set[Path],
    skipped: list[dict[str, str]],
    variables: Mapping[str, str] | None,
    overrides: RunOverrides,
    strict_audit: bool = False,
    **options: Any,
) -> list[PreparedTask]:
    """Prepare every task; one found in a folder that fails is reported in ``skipped`` (and logged) and the
    others go on. A task from a file named directly, or the failure of every task, still raises."""
    from proctor.core.errors import TaskDefinitionError

    prepared: list[PreparedTask] = []
    seen = GroupMembers.of(
        tasks, DEFAULT_METRICS
    )  # a group's tasks so far, by what they ask (the audit's task.duplicate, group.overlap)
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
                    strict_audit=strict_audit,
                    seen_in_groups=seen,
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
