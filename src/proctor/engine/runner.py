"""Phase two: run a task's requests (built by ``engine/task_requests.py``) on the model, score, aggregate."""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence, cast

from proctor.core.model_requests import LoglikelihoodRequest, Request
from proctor.core.run_overrides import reducer_k
from proctor.core.user_errors import call_user
from proctor.engine.epochs import combine_epochs
from proctor.engine.outcomes import SampleRecord, TaskOutcome
from proctor.engine.task_requests import TaskRequests, has_images, is_custom
from proctor.engine.task_warnings import record_choice, report_outcomes, warn_bounded, warn_not_numbers, warn_truncated
from proctor.kinds.base import KindHandler, SampleDetails
from proctor.kinds.capabilities import (
    CorpusMetrics,
    ReportsJudgeUsage,
    ReportsMcFormat,
    ResultExtras,
)
from proctor.models.base import Model, usage_delta
from proctor.models.reply_checks import ReplyError
from proctor.runs.executor import ModelExecutor, count_truncated, execute
from proctor.runs.outcome_tally import OutcomeTally
from proctor.runs.store import Lookup
from proctor.runs.task_result import RollupPlace, TaskResult, TaskTiming
from proctor.runs.thinking import ThinkingTally, ThoughtResult, run_thinking
from proctor.scoring.aggregate import aggregate_metrics, breakdowns
from proctor.scoring.metric_checks import sample_value

# task name, finished requests, total requests. A hook may also have ``reused(task, n)``: told first of
# answers read back from the run store or cache (done, but not the model's work: a rate leaves them out).
ProgressHook = Callable[[str, int, int], None]


def progress_total(built: TaskRequests) -> int:
    """The units a task's progress counts: a task class reports finished samples (it sends its own requests,
    unknown before it runs), other tasks finished requests. The run announces each task's total before the first
    model call, so an overall count knows its total from the start."""
    return len(built.prepared.samples) if is_custom(built.handler) else len(built.unique)


def run_built(
    model: Model,
    built: TaskRequests,
    progress: ProgressHook | None = None,
    lookup: Lookup | None = None,
    chunk_size: int | None = None,
) -> TaskOutcome:
    started = time.perf_counter()
    spec = built.prepared.task.spec
    unique = built.unique
    done = 0
    total_units = progress_total(built)

    def on_progress(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(spec.name, done, total_units)

    def on_reused(n: int) -> None:
        note = getattr(progress, "reused", None)
        if note is not None:
            note(spec.name, n)
        on_progress(n)

    if progress:
        progress(spec.name, 0, total_units)
    model_started = time.perf_counter()
    usage_before = model.usage()
    try:
        if is_custom(built.handler):
            total = len(built.prepared.samples)
            executor = ModelExecutor(  # the run store, for requests the handler sends
                model, lookup, chunk_size, on_progress, built.prepared.think_end_token, built.prepared.think_budget
            )
            pairs = built.handler.predict_samples(built.prepared.samples, built.prompts, executor)
            model_seconds = time.perf_counter() - model_started
            outcome = score_outcomes(
                built, pairs, {"total": total, "unique": total, "type": "custom"}, model_seconds, started
            )
            cut, sent = executor.truncated, executor.requests
            thinking, tally = executor.thinking, executor.outcomes
        else:
            request_type = built.handler.request_type  # a kind's (narrowed here, not inside the lambda)
            results = run_thinking(
                lambda requests: execute(model, request_type, requests, lookup, chunk_size, on_progress, on_reused),
                unique,
                built.prepared.think_end_token,
                built.prepared.think_budget,
            )
            thinking, tally = ThinkingTally(), OutcomeTally(built.prepared.think_end_token)
            thinking.add(results)
            tally.add(unique, results)
            model_seconds = time.perf_counter() - model_started
            outcome = score_task(built, results, model_seconds, started)
            cut, sent = count_truncated(results), len(results)
            warn_bounded(outcome, results)
    except ReplyError as exc:  # a server's wrong reply: say which task and sample sent the request
        raise exc.in_task(spec.name, _sample_of(built, exc.prompt)) from None
    if cut:
        warn_truncated(outcome, model, cut, sent)
    end_token = built.prepared.think_end_token
    if thinking.samples:  # --think-end-token, or a server's separate reasoning text
        outcome.result.thinking = thinking.as_json(getattr(model, "count_tokens", None))
        if end_token is not None and (unclosed := thinking.warning(end_token)) is not None:
            outcome.result.add_warning(unclosed)
    warn_not_numbers(outcome)
    usage = usage_delta(model, usage_before)
    if usage is not None:  # what this run sent (responses read from the store or cache cost nothing)
        outcome.result.usage = usage
    if isinstance(built.handler, ReportsJudgeUsage) and (judged := built.handler.judge_usage()) is not None:
        outcome.result.judge_usage = judged  # a separate judge model's calls
    for finding in built.prepared.findings:  # the audit stage's, found before the model loaded
        outcome.result.add_finding(finding.as_json(), finding.text())
    fallback = (built.prepared.data or {}).get("fallback")
    if fallback:
        outcome.result.add_warning(fallback)
    report_outcomes(outcome, tally)  # empty answers, tied choices, unread letters...: counted, warned above a share
    by_generation = (
        not is_custom(built.handler) and built.handler.request_type == "generate" and spec.kind == "multiple_choice"
    )
    said = (
        isinstance(built.handler, ReportsMcFormat) and built.handler.mc_format == "generate"
    )  # custom / SEA-HELM handlers
    if by_generation or said:
        outcome.result.mc_format = "generate"
        record_choice(outcome, model, built.prepared, has_images(built.prepared))
    elif spec.kind == "multiple_choice":
        outcome.result.mc_format = "loglikelihood"
        record_choice(outcome, model, built.prepared, has_images(built.prepared))
        if built.prepared.mc_shuffle_seed is not None:  # auto chose log-likelihoods: there were no letters to shuffle
            outcome.result.add_warning(
                "--mc-shuffle was ignored: this model scores log-likelihoods, so no lettered options were shown"
            )
    return outcome


def _request_text(request: Request) -> str | None:
    """The whole text a request sends (what a backend names a request by)."""
    if isinstance(request, LoglikelihoodRequest):
        return request.context + request.continuation
    return getattr(request, "prompt", None) or getattr(request, "text", None)


def _sample_of(built: TaskRequests, prompt: str | None) -> str | None:
    """The id of the first sample one of whose requests sends ``prompt`` (None: not found, or no prompt)."""
    if prompt is None:
        return None
    for prepared, requests in zip(built.prepared.samples, built.per_sample):
        if any(_request_text(r) == prompt for r in requests):
            return str(prepared.sample.id)
    return None


def score_task(
    built: TaskRequests, results: Sequence[Any], model_seconds: float = 0.0, started: float | None = None
) -> TaskOutcome:
    """Per-sample outcomes, metric values and the task's aggregate from the unique results."""
    spec = built.prepared.task.spec
    epochs = built.prepared.epochs
    handler = cast(KindHandler, built.handler)  # a task class scores in its predict_samples (run_built), not here
    per_epoch: list[list[tuple[object, SampleDetails]]] = [[] for _ in range(epochs)]  # (outcome, details) per sample
    position = 0
    for sample, requests in zip(built.prepared.samples, built.per_sample):
        n = len(requests) // epochs
        for e in range(epochs):
            sample_results = [results[built.mapping[position + e * n + k]] for k in range(n)]
            scored, details = handler.outcome(spec, sample, sample_results)
            thoughts = [r.thinking for r in sample_results if isinstance(r, ThoughtResult)]
            if thoughts:  # --think-end-token: the thinking kept beside the answer scored
                details = {**details, "thinking": thoughts[0] if len(thoughts) == 1 else thoughts}
            per_epoch[e].append((scored, details))
        position += len(requests)
    request_info = {"total": len(built.flat), "unique": len(built.unique), "type": handler.request_type}
    outcomes = [score_outcomes(built, pairs, request_info, model_seconds, started) for pairs in per_epoch]
    if epochs == 1:
        return outcomes[0]
    k = reducer_k(built.prepared.epoch_reducer, epochs)
    return combine_epochs(
        outcomes, built.prepared, [m for m, _ in built.prepared.metrics], k, built.prepared.epoch_reducer
    )


def score_outcomes(
    built: TaskRequests,
    pairs: Sequence[tuple[object, SampleDetails]],
    request_info: dict[str, object],
    model_seconds: float = 0.0,
    started: float | None = None,
) -> TaskOutcome:
    """Metric values per sample and the task's aggregate, from each sample's (outcome, details)."""
    started = time.perf_counter() if started is None else started
    prepared, prompts = built.prepared, built.prompts
    spec = prepared.task.spec
    values: dict[str, list[Any]] = {m.name: [] for m, _ in prepared.metrics}
    records: list[SampleRecord] = []
    for sample, (outcome, details), text in zip(prepared.samples, pairs, prompts):
        metric_values = {}
        for metric, kwargs in prepared.metrics:
            value = call_user(metric.compute, f"metric '{metric.name}'", outcome, field="metrics", **kwargs)
            value = sample_value(metric, value, sample.sample.id, sample.sample.file, sample.sample.row)  # a number
            values[metric.name].append(value)
            metric_values[metric.name] = value
        records.append(
            {
                "task": spec.name,
                "id": sample.sample.id,
                "source": {"file": sample.sample.file, "row": sample.sample.row},
                "prompt": sample.prompt.as_json() if spec.kind != "perplexity" else None,
                "rendered_prompt": text if sample.prompt.messages is not None else None,
                "fewshot_ids": list(sample.shots),
                **({"images": [image.record() for image in sample.prompt.images]} if sample.prompt.images else {}),
                **details,
                "metrics": metric_values,
                **({"cluster": sample.sample.fields.get(spec.cluster)} if spec.cluster is not None else {}),
            }
        )
    metric_defs = [m for m, _ in prepared.metrics]
    result = TaskResult.model_validate(
        {
            "kind": spec.kind,
            "dialect": prepared.task.dialect,
            "source": str(prepared.task.file) if prepared.task.file else None,
            "version": spec.version,
            "changes": spec.changes,
            "hash": prepared.content_hash,
            "group": spec.group,
            "n_samples": len(prepared.samples),
            "data": prepared.data,
            "metrics": aggregate_metrics(metric_defs, values, prepared.clusters()),
            "higher_is_better": {m.name: m.higher_is_better for m in metric_defs},
            "requests": request_info,
            "timing": TaskTiming(
                model_seconds=round(model_seconds, 3), total_seconds=round(time.perf_counter() - started, 3)
            ),
        }
    )
    if isinstance(
        built.handler, CorpusMetrics
    ):  # corpus-level metrics computed by a task class (e.g. SEA-HELM's metric classes)
        result.add_metrics(built.handler.corpus_metrics())
    if spec.rollup is not None:
        result.rollup = RollupPlace.model_validate(spec.rollup.model_dump())
    if spec.breakdown:
        result.set_fields(
            breakdowns(metric_defs, values, spec.breakdown, [s.sample.fields for s in prepared.samples], spec.cluster)
        )
    if isinstance(
        built.handler, ResultExtras
    ):  # a task class's own per-file / per-group report (GLM-130B task classes)
        result.set_fields(built.handler.result_extras())
    return TaskOutcome(spec.name, result, records)
