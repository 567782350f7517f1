"""Phase one, no model involved: load data, check metrics, render every prompt.

Anything wrong with a task, its data or its templates surfaces here, before a model loads.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence, cast

from proctor.audit import AuditSubject, audit
from proctor.audit.conflict_rules import across_tasks
from proctor.audit.limit_rules import limit_notes, no_parts_note
from proctor.audit.run_rules import GroupMembers, duplicate_notes, size_notes
from proctor.core.audit import Finding, Hit
from proctor.core.errors import ProctorError, TaskDefinitionError
from proctor.core.run_overrides import RunOverrides, limit_count
from proctor.core.task import Task
from proctor.core.task_spec import MetricSpec
from proctor.data.paths import data_roots
from proctor.data.sources import Sample, SourceStats, load_samples
from proctor.engine.override_policy import epochs_of
from proctor.kinds.capabilities import LoadsSamples, ReadsLocalFiles, ScoresItself, ShowsAuditSamples
from proctor.prompts.builder import PreparedSample, PromptBuilder
from proctor.scoring.metrics import DEFAULT_METRICS, MetricDef, check_arguments, get_metric

if TYPE_CHECKING:
    from proctor.kinds.custom import CustomTask
    from proctor.kinds.given_texts import GivenTextsTask


@dataclass(frozen=True)
class PreparedTask:
    task: Task
    samples: tuple[PreparedSample, ...]
    metrics: tuple[tuple[MetricDef, dict[str, Any]], ...]  # each metric with its keyword arguments
    content_hash: str
    use_chat: bool
    data: SourceStats  # the source used, rows read, rows dropped by the filter
    # a dialect's handler (spec.handler) or a task class (spec.task_class); None: the kind's own
    handler: CustomTask | GivenTextsTask | None = None
    mc_format: str = (
        "auto"  # multiple choice: "loglikelihood", "generate", or "auto" (generate if the model cannot score)
    )
    mc_shuffle_seed: int | None = None  # generate formulation: shuffle the lettered options, seeded per sample
    epochs: int = 1  # generate tasks: repeats, each sample and epoch sampled with its own seed (engine/epochs.py)
    epoch_reducer: str = "mean"  # per sample across epochs: "mean" or "pass@K"
    findings: tuple[Finding, ...] = ()  # what the audit stage found (proctor.audit), silenced ones included
    think_end_token: str | None = None  # --think-end-token: generations scored after their thinking (runs/thinking.py)
    think_budget: int | None = None  # --max-thinking-tokens: added to every generation's max_tokens
    lettered_max_tokens: int | None = None  # --max-tokens for lettered replies (kinds/mc_generate.py); None: its 32
    strict_audit: bool = False  # --strict: the model stage's findings stop the task too (task_requests.build_requests)

    def clusters(self) -> list[Any] | None:
        """Each sample's cluster (the value of the task's ``cluster`` field in its row), None without one."""
        key = self.task.spec.cluster
        return None if key is None else [s.sample.fields.get(key) for s in self.samples]


def _rows_digest(samples: Sequence[Sample]) -> str:
    digest = hashlib.sha256()
    for sample in samples:
        fields = {k: v for k, v in sample.fields.items() if k not in ("_path", "_source")}
        digest.update(json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def task_hash(task: Task, samples: Sequence[Sample], pool: Sequence[Sample], images: Sequence[str] = ()) -> str:
    """Content hash of config + data (+ few-shot data, + the digests of the samples' images, whose
    rows may hold only a path): any edit to any of them changes it."""
    digest = hashlib.sha256()
    digest.update(json.dumps(task.spec.model_dump(mode="json"), sort_keys=True).encode())
    digest.update(_rows_digest(samples).encode())
    if pool is not samples:
        digest.update(_rows_digest(pool).encode())
    if images:
        digest.update("\n".join(images).encode())
    return digest.hexdigest()[:16]


def _metrics(task: Task) -> tuple[tuple[MetricDef, dict[str, Any]], ...]:
    specs = task.spec.metrics or [MetricSpec(name=n) for n in DEFAULT_METRICS[task.spec.kind]]
    out = []
    for spec in specs:
        try:
            metric, kwargs = get_metric(spec.name, task.spec.kind), dict(spec.kwargs)
            if "higher_is_better" in kwargs:  # a task may state a metric's direction itself (lm-eval's metric_list)
                metric = dataclasses.replace(metric, higher_is_better=bool(kwargs.pop("higher_is_better")))
            check_arguments(metric, kwargs)
        except (KeyError, ValueError) as exc:  # an unknown name; arguments the metric does not take
            raise TaskDefinitionError(
                exc.args[0], file=task.file, line=task.lines.get("metrics"), field="metrics"
            ) from None
        out.append((metric, kwargs))
    return tuple(out)


MC_FORMATS = ("auto", "loglikelihood", "generate")


def check_mc_options(mc_format: str, mc_shuffle_seed: int | None) -> None:
    """The multiple-choice options are the run's, not a task's: a bad one names the option."""
    if mc_format not in MC_FORMATS:
        raise ProctorError(f"--mc-format (mc_format) must be one of {', '.join(MC_FORMATS)}, got '{mc_format}'")
    if mc_shuffle_seed is not None and mc_format == "loglikelihood":
        raise ProctorError(
            "--mc-shuffle (mc_shuffle_seed) shuffles lettered options, which only the generate format shows; "
            "log-likelihood scoring would ignore it: drop it or use --mc-format generate"
        )


def prepare_task(
    task: Task,
    variables: Mapping[str, str],
    *,
    limit: int | float | None = None,
    limit_per_part: bool = False,
    chat: bool | None = None,
    mc_format: str = "auto",
    mc_shuffle_seed: int | None = None,
    epochs: int = 1,
    epoch_reducer: str = "mean",
    strict_audit: bool = False,
    seen_in_groups: GroupMembers | None = None,
) -> PreparedTask:
    """A task's samples, prompts and metrics, audited (``proctor.audit``): an audit error, or with
    ``strict_audit`` any finding the task does not silence, raises ``TaskDefinitionError``. ``seen_in_groups``:
    one dict shared by the tasks a command prepares, so that the audit sees a group's task asked twice."""
    check_mc_options(mc_format, mc_shuffle_seed)
    spec = task.spec
    file = str(task.file) if task.file else None
    run_limit = limit  # as given (a fraction is turned into a count below), for the audit's limit rules
    stats: SourceStats = {}
    noticed: dict[str, list[Hit]] = {}  # what the data reader noticed for the audit (a join's key order)
    handler = None
    if spec.handler is not None:
        from proctor.kinds.custom import load_handler

        handler = load_handler(spec, task.resources)
    elif spec.task_class:
        from proctor.kinds.custom import load_task_class

        handler = load_task_class(spec, task.base_dir, file, task.resources, task.lines.get("task_class"))
    if isinstance(handler, LoadsSamples):  # the task class reads its own data (SEA-HELM dataloaders, GLM task classes)
        reader: LoadsSamples = handler

        def load(cut: int | None) -> list[Sample]:
            return reader.load_samples(limit=cut, variables=variables)

        count = limit if not isinstance(limit, float) else None  # a fraction needs the row count: cut below
        samples = load(min(x for x in (count, spec.limit) if x is not None) if (count or spec.limit) else None)
        # the handler read at most the task's limit: past it, how many rows the data has is not known
        total = len(samples) if spec.limit is None or len(samples) < spec.limit else None
        if isinstance(limit, float) and samples:  # the handler keeps its rows: load again with the count
            limit = limit_count(limit, len(samples))  # kept, as a handler may give more rows than asked (all of them)
            samples = load(min(x for x in (limit, spec.limit) if x is not None))
        stats.update({"source": str(spec.data[0].path or spec.data[0].hub), "n_rows": len(samples), "n_filtered": 0})
        if isinstance(handler, ReadsLocalFiles) and handler.local_files():
            stats["files"] = handler.local_files()
    else:
        samples = load_samples(spec.data, task.base_dir, variables, task_file=file, stats=stats, noticed=noticed)
        total = len(samples)
    if not samples:
        source = stats.get("source", "the data source")
        if stats.get("n_filtered"):
            raise TaskDefinitionError(
                f"the filter dropped all {stats['n_filtered']} rows of {source}", file=file, field="data.filter"
            )
        raise TaskDefinitionError(f"{source} holds no rows", file=file, field="data")
    if not isinstance(handler, LoadsSamples):
        _check_breakdown(task, samples, file)
        _check_cluster(task, samples, file)
    # per part: a breakdown's rows as proctor reads them (a class that reads its own rows keeps them whole)
    if limit_per_part and spec.breakdown and limit is not None and not isinstance(handler, LoadsSamples):
        selected = per_part(samples, spec.breakdown[0], limit)[: spec.limit]
    else:
        selected = samples[
            : min(x for x in (limit_count(limit, len(samples)), spec.limit, len(samples)) if x is not None)
        ]
    parts = bool(limit_per_part and spec.breakdown and limit is not None and not isinstance(handler, LoadsSamples))
    if not parts:  # a limit per part is checked part by part as it is taken
        noticed.update(limit_notes(file, run_limit, total, len(selected)))
    if limit_per_part and not parts and run_limit is not None:
        why = "no breakdown field" if not spec.breakdown else "its class reads its own rows"
        noticed.update(no_parts_note(file, run_limit, why, len(selected)))
    pool: Sequence[Sample] = samples
    if spec.fewshot and spec.fewshot.source is not None:
        pool = load_samples([spec.fewshot.source], task.base_dir, variables, task_file=file, field="fewshot.source")
    use_chat = chat if chat is not None else bool(spec.chat and spec.chat.enabled)
    use_chat = use_chat and spec.kind != "perplexity"  # its texts are scored as written: recorded so (chat: false)
    builder = PromptBuilder(
        spec,
        origin=file,
        lines=task.lines,
        fewshot_pool=pool,
        use_chat=use_chat,
        roots=data_roots(task.base_dir, variables),
        strict_rows=_strict_rows(task),
    )
    prepared = tuple(builder.prepare(sample) for sample in selected)
    builder.check_prompts()
    for export in spec.exports:
        from proctor.runs.task_exports import get_exporter

        try:
            get_exporter(export.format)
        except KeyError as exc:
            raise TaskDefinitionError(exc.args[0], file=file, field="exports") from None
    # a task class that scores whole files itself (GLM-130B's metrics) has no per-sample metrics
    metrics = () if isinstance(handler, ScoresItself) and handler.scores_itself else _metrics(task)
    if spec.rollup is not None and spec.handled_by is None and spec.rollup.metric not in {m.name for m, _ in metrics}:
        raise TaskDefinitionError(
            f"rolls up the metric '{spec.rollup.metric}', which the task does not compute; its metrics: "
            + ", ".join(m.name for m, _ in metrics),
            file=file,
            line=task.lines.get("rollup"),
            field="rollup.metric",
        )
    images = [image.digest for sample in prepared for image in sample.prompt.images]
    if seen_in_groups is not None:
        noticed.update(duplicate_notes(task, prepared, seen_in_groups))
        noticed.update(across_tasks(task, prepared, seen_in_groups))
        noticed.update(size_notes(task, prepared, seen_in_groups))
    # a dialect may show the audit its rows as asked where its runner keeps them otherwise (lm-eval's Winogrande)
    shows: ShowsAuditSamples | None = (
        cast(ShowsAuditSamples, handler) if isinstance(handler, ShowsAuditSamples) else None
    )
    audited = shows.audit_samples(prepared) if shows is not None else prepared
    subject = AuditSubject(
        task,
        audited,
        samples,
        pool,
        pool_is_own=spec.fewshot is None or spec.fewshot.source is None,
        stats=stats,
        source_hits=noticed,
        handler=handler,
        epochs=epochs,
        use_chat=use_chat,
        # the view rewrote the rows' choices: they are contexts (lm-eval's multiple_input)
        choices_lead=shows is not None and audited is not prepared and shows.audit_choices_lead,
    )
    findings = audit(subject, strict=strict_audit)
    if mc_format == "generate" and spec.kind == "multiple_choice":  # past 26 options: said now, not mid-run
        from proctor.kinds.mc_generate import check_letterable

        check_letterable(spec, prepared, file)
    return PreparedTask(
        task,
        prepared,
        metrics,
        task_hash(task, samples, pool, images),
        use_chat,
        stats,
        handler,
        mc_format,
        mc_shuffle_seed,
        epochs,
        epoch_reducer,
        findings,
        strict_audit=strict_audit,
    )


def _strict_rows(task: Task) -> bool:
    """Whether the task's dialect holds rendered rows to the native format's rules (``Dialect.strict_rows``)."""
    from proctor.core.registry import registry

    dialect = registry().dialect(task.dialect)
    return dialect is not None and dialect.strict_rows


def _check_breakdown(task: Task, samples: Sequence[Sample], file: str | None) -> None:
    """A ``breakdown`` field that no row has would report every sample under one part, None."""
    for key in task.spec.breakdown:
        if not any(key in sample.fields for sample in samples):
            fields = sorted({k for sample in samples[:100] for k in sample.fields if k != "_path"})
            raise TaskDefinitionError(
                f"breaks the results down by '{key}', a field no row has; the rows' fields: {', '.join(fields)}",
                file=file,
                line=task.lines.get("breakdown"),
                field="breakdown",
            )
        for sample in samples:  # parts are keyed by the value: a list or mapping is no part's name
            value = sample.fields.get(key)
            if isinstance(value, (list, tuple, dict, set)) or (
                hasattr(value, "__len__") and not isinstance(value, str)
            ):
                raise TaskDefinitionError(
                    f"breaks the results down by '{key}', whose value in this row is a {type(value).__name__}, "
                    "not a text or a number naming a part",
                    file=sample.file,
                    row=sample.row,
                    field="breakdown",
                )


def _check_cluster(task: Task, samples: Sequence[Sample], file: str | None) -> None:
    """Every row names its cluster: a row without one, or with a list, would silently make a cluster of its own."""
    key = task.spec.cluster
    if key is None:
        return
    for sample in samples:
        if key not in sample.fields or sample.fields[key] is None:
            fields = sorted(k for k in sample.fields if k != "_path")
            raise TaskDefinitionError(
                f"clusters samples by '{key}', a field this row does not have; its fields: {', '.join(fields)}",
                file=sample.file,
                row=sample.row,
                field="cluster",
            )
        if isinstance(sample.fields[key], (list, dict)):
            raise TaskDefinitionError(
                f"clusters samples by '{key}', whose value in this row is a {type(sample.fields[key]).__name__}, "
                "not a text or a number naming a cluster",
                file=sample.file,
                row=sample.row,
                field="cluster",
            )


def per_part(samples: Sequence[Sample], key: str, limit: int | float) -> list[Sample]:
    """The first rows of each part (by the value of field ``key``), ``limit`` of each, in the data's order."""
    sizes: dict[Any, int] = {}
    for sample in samples:
        sizes[_part(sample, key)] = sizes.get(_part(sample, key), 0) + 1
    room = {part: limit_count(limit, n) for part, n in sizes.items()}
    kept = []
    for sample in samples:
        part = _part(sample, key)
        if room[part] > 0:
            room[part] -= 1
            kept.append(sample)
    return kept


def _part(sample: Sample, key: str) -> Any:
    value = sample.fields.get(key)
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def prepare_tasks(
    tasks: Sequence[Task],
    variables: Mapping[str, str] | None = None,
    *,
    limit: int | float | None = None,
    limit_per_part: bool = False,
    chat: bool | None = None,
    mc_format: str = "auto",
    mc_shuffle_seed: int | None = None,
    overrides: RunOverrides | None = None,
    strict_audit: bool = False,
) -> list[PreparedTask]:
    """Every task prepared; ``overrides`` (already applied to the specs) set each task's epochs."""
    check_mc_options(mc_format, mc_shuffle_seed)
    o = overrides or RunOverrides()
    # a group's tasks so far, by what they ask (the audit's task.duplicate)
    seen = GroupMembers.of(tasks, DEFAULT_METRICS)
    return [
        prepare_task(
            t,
            variables or {},
            limit=limit,
            limit_per_part=limit_per_part,
            chat=chat,
            mc_format=mc_format,
            mc_shuffle_seed=mc_shuffle_seed,
            epochs=epochs_of(t, o),
            epoch_reducer=o.epoch_reducer,
            strict_audit=strict_audit,
            seen_in_groups=seen,
        )
        for t in tasks
    ]


def task_config(prepared: PreparedTask) -> dict[str, Any]:
    task = prepared.task
    return {
        "source": str(task.file) if task.file else None,
        "dialect": task.dialect,
        "hash": prepared.content_hash,
        "spec": task.spec.model_dump(mode="json"),
    }
