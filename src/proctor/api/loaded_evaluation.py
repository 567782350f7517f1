"""The run on its loaded model: the run folder opened (run.json's attempt), every task's requests built, then
each task run, written to the run folder as it finishes and its settings recorded, and at the end the groups,
roll-up and provenance; ``api/evaluation.py`` prepares the tasks and loads the model before this."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from proctor.api.evaluation_result import EvaluationResult
from proctor.api.finished_run import REQUEST_FIELD, model_request
from proctor.api.model_roles import ModelRoles
from proctor.api.run_options import chunk_option, recorded_options
from proctor.core.errors import RunInterrupted, TaskDefinitionError
from proctor.core.redact import mask_url_credentials
from proctor.core.task import GROUP_AGGREGATION
from proctor.core.version import __version__
from proctor.engine.predict_only import NOTE as PREDICT_ONLY_NOTE
from proctor.engine.prepare import PreparedTask, task_config
from proctor.engine.provenance_warnings import flag_warnings, record_provenance
from proctor.engine.run_config import RunConfig
from proctor.engine.runner import ProgressHook, progress_total, run_built
from proctor.engine.task_requests import build_requests
from proctor.engine.task_settings import task_settings
from proctor.models.base import Model
from proctor.models.info import model_info
from proctor.runs.manifest import build_manifest, mark, now, open_run
from proctor.runs.results import RunWriter
from proctor.runs.results_schema import RunTiming
from proctor.runs.run_results import RunResults, environment
from proctor.runs.store import STORE_FILE, Lookup, ResponseStore, cache_path, saved_answers
from proctor.runs.task_exports import write_task_exports
from proctor.scoring.aggregate import aggregate_groups
from proctor.scoring.rollup import rollup

log = logging.getLogger("proctor.api")  # the public module's name, as the CLI's log lines show it


@dataclass(frozen=True)
class PreparedRun:
    """What a run has before its model loads: the prepared tasks, and how it started."""

    tasks: list[PreparedTask]
    skipped: list[dict[str, str]]  # files and tasks found in folders that could not be loaded or prepared
    named: set[Path] | None  # the task files named directly (None: Task objects were given)
    command: list[str] | None  # as recorded: no URL password
    started: float  # perf_counter() at the start of the run
    without_ids: list[str]  # --sample-id: tasks that hold none of the ids, left out
    roles: ModelRoles  # the models in roles (a judge, ...) the dialects asked for: results.json's ``roles``
    unused: list[str] = dataclasses.field(default_factory=list)  # --var/--data-dir values no task read, options
    # no check of the backend vets: warnings


def _git_hash() -> str | None:
    """The commit of the folder the run started in (lm-eval records it too), or None outside git."""
    import subprocess

    try:
        out = subprocess.run(["git", "describe", "--always"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def evaluate_loaded(
    config: RunConfig,
    run: PreparedRun,
    model: Model,
    load_seconds: float,
    model_name: str | None,
    run_dir: Path,
    progress: ProgressHook | None,
) -> EvaluationResult:
    """Run the prepared tasks on the loaded ``model`` into ``run_dir`` (held by the caller), writing results.json
    after each task, and return what the run wrote."""
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
            recorded_options(config, chunk_option(model, chunk_size)),
        ),
        update=output.update,
        restart=output.restart,
    )
    if config.predict_only:  # run.json says which attempts left the scoring out (it changes no request)
        mark(run_dir, manifest, predict_only=True)
    address = config.model.options.get("base_url")
    if isinstance(address, str):  # which server this attempt asked: a resumed run's answers may be two servers'
        mark(run_dir, manifest, base_url=mask_url_credentials(address))
    built = [build_requests(model, p) for p in prepared]  # every prompt renders before any model call
    cache_file = cache_path(output.cache)
    lookup = Lookup(ResponseStore(run_dir / STORE_FILE), ResponseStore(cache_file) if cache_file else None)
    lookup.use_model(fingerprint)
    writer = RunWriter(run_dir)
    info = {**model_info(model), **({"model_name": model_name} if model_name else {})}
    record = RunResults(
        proctor_version=__version__,
        created=manifest["created"],
        run_id=manifest.get("run_id"),
        command=list(command) if command is not None else None,
        model=fingerprint,
        model_info=info,
        chat_applied=any(p.use_chat for p in prepared) or model.server_chat is not None,
        environment=environment(_git_hash()),
        limit=limit.value,
        limit_per_part=True if limit.per_part else None,
        sample_ids=list(limit.sample_ids) or None,
        predict_only=True if config.predict_only else None,
        overrides=overrides,
        timing=RunTiming(model_load_seconds=round(load_seconds, 3)),
        # files / tasks found in folders that could not be loaded or prepared, with their errors
        skipped=list(skipped) if skipped else None,
    )
    if config.predict_only:  # the console, the report and the viewer show results.json's warnings
        record.add_warning(PREDICT_ONLY_NOTE)
    for warning in flag_warnings(model, options.chat):  # flags that had no effect on this model
        record.add_warning(warning)
    for warning in run.unused:
        record.add_warning(warning)
    for name in run.without_ids:
        record.add_warning(f"{name}: holds none of the --sample-id ids, so it did not run")
    interrupted: BaseException | None = None
    try:
        if progress:  # announce every task first: an overall bar knows its total from the start
            for item in built:
                progress(item.name, 0, progress_total(item))
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
                record.roles = run.roles.used() or None
                writer.write_results(record.as_dict())
                continue
            outcome.result.settings = task_settings(
                item.prepared, outcome.result, fingerprint, info, config, model.server_chat is not None
            )
            exported = write_task_exports(item.prepared, outcome, run_dir, model.name)
            if exported:
                outcome.result.exports = exported
            if overrides.get("log_samples", True):
                writer.append_samples(outcome.records)
            record.add_task(
                outcome.name, outcome.result
            )  # its warnings are also listed run-wide, and printed by the CLI
            record.roles = run.roles.used() or None  # a judge is made when its first task is judged
            writer.write_results(record.as_dict())  # what finished is on disk
        memberships = {
            p.task.name: p.task.spec.group for p in prepared if p.task.spec.group and p.task.name in record.tasks
        }
        for p in prepared:  # a group over fewer tasks than it has is another number: say so
            if p.task.spec.group and p.task.name not in record.tasks:
                record.add_warning(
                    f"{p.task.name}: failed, so group(s) {', '.join(p.task.spec.group)} average the other tasks only"
                )
        chosen = model_info(model).get("batch_sizes")
        if chosen:  # --batch-size auto: what it chose, known once the model has run
            record.model_info = {**record.model_info, "batch_sizes": chosen}
        entries = record.task_entries()
        rolled = None if config.predict_only else rollup(entries)  # no metric to roll up: no tree of nulls
        # proctor's own tasks' metric definitions: their groups average only what can be averaged (lm-eval's keep
        # lm-eval's arithmetic)
        own = {p.task.name: p.metrics for p in prepared if p.task.dialect != "lm-eval"}
        # groups whose definition says how each metric is averaged (lm-eval's aggregate_metric_list, weight_by_size
        # included) are scored as it says
        rules = {g: r for p in prepared for g, r in (p.task.resources.get(GROUP_AGGREGATION) or {}).items()}
        groups = aggregate_groups(entries, memberships, own, rules)
        for name, group in groups.items():  # a group with no number is a row missing from the table: say why
            for reason in (group.get("left_out") or {}).values():
                record.add_warning(f"group '{name}': {reason}")
            if not group["metrics"] and name in rules and not config.predict_only:
                asked = ", ".join(dict.fromkeys(r.metric for r in rules[name]))
                record.add_warning(
                    f"group '{name}': none of its tasks ({', '.join(group['tasks'])}) reports the metric(s) its "
                    f"aggregate_metric_list names ({asked}) under the filters it names, so the group has no number"
                )
            elif not group["metrics"] and not group.get("left_out") and not config.predict_only:
                record.add_warning(
                    f"group '{name}': its tasks ({', '.join(group['tasks'])}) share no metric, so the group has no "
                    "number (give them a metric in common, or put them in separate groups)"
                )
        record.finish(groups, rolled, round(time.perf_counter() - started, 3))
        record.roles = run.roles.used() or None
        for role in run.roles.unused():  # a role no task asked for changed nothing: say so
            record.add_warning(f"--model-role {role}: no task used a {role} model, so it changed nothing")
        for judge in run.roles.self_judged(fingerprint):  # the number is the model's opinion of itself: say so
            record.add_warning(
                f"the judge '{judge}' is the evaluated model itself (the same fingerprint): a model grading its own "
                "answers tends to favour them, so the judged metrics are not an independent judgement; give another "
                "judge with --model-role judge=MODEL"
            )
        record_provenance(record, model, lookup, cache_file, output.cache, manifest["attempts"])
        results = record.as_dict()
        writer.write_results(results)
        mark(
            run_dir,
            manifest,
            finished=now(),
            # what a re-run asking for the same must match to be reported without loading the model
            **(
                {REQUEST_FIELD: model_request(config.model.model, config.model.options)}
                if isinstance(config.model.model, str)
                else {}
            ),
            responses={"from_run_store": lookup.hits_run, "from_cache": lookup.hits_cache, "computed": lookup.computed},
        )
    except (RunInterrupted, KeyboardInterrupt) as exc:
        interrupted = exc
        raise
    finally:
        lookup.close()  # the store's last batch: committed or rolled back whole
        if interrupted is not None:  # run.json says this attempt stopped, and with how many answers kept
            with contextlib.suppress(OSError):  # a full disk: the interruption itself is what the user must see
                mark(
                    run_dir,
                    manifest,
                    interrupted=now(),
                    signal=getattr(interrupted, "name", "KeyboardInterrupt"),
                    saved=saved_answers(run_dir / STORE_FILE),
                )
    if output.export:
        from proctor.runs.run_exports import write_exports

        write_exports(run_dir, ("lm-eval", "parquet") if overrides.get("log_samples", True) else ("lm-eval",))
    return EvaluationResult(run_dir, results)
