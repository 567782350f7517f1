"""Phase two: turn prepared samples into requests, run them on the model, score, aggregate."""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence, cast

from proctor.audit import ModelSubject, audit_with_model
from proctor.core.errors import ProctorError
from proctor.core.images import ImageInput
from proctor.core.model_requests import GenerateRequest, LoglikelihoodRequest, Request
from proctor.core.run_overrides import reducer_k
from proctor.core.user_errors import call_user
from proctor.engine.epochs import combine_epochs, seeded
from proctor.engine.outcomes import SampleRecord, TaskOutcome
from proctor.engine.prepare import PreparedTask
from proctor.engine.task_warnings import record_choice, report_outcomes, warn_bounded, warn_not_numbers, warn_truncated
from proctor.kinds.base import KindHandler, SampleDetails
from proctor.kinds.capabilities import (
    CorpusMetrics,
    PredictsSamples,
    ReportsJudgeUsage,
    ReportsMcFormat,
    ResultExtras,
    UsesChoiceFormulation,
)
from proctor.kinds.generate import check_window
from proctor.kinds.handlers import kind_handler
from proctor.models.base import Model, usage_delta
from proctor.models.reply_checks import ReplyError
from proctor.runs.executor import ModelExecutor, count_truncated, dedupe, execute
from proctor.runs.outcome_tally import OutcomeTally
from proctor.runs.results_schema import RollupPlace, TaskResult, TaskTiming
from proctor.runs.store import Lookup
from proctor.runs.thinking import ThinkingTally, ThoughtResult, run_thinking
from proctor.scoring.aggregate import aggregate_metrics, breakdowns
from proctor.scoring.metric_checks import sample_value

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from proctor.kinds.mc_generate import MultipleChoiceGenerateKind

log = logging.getLogger(__name__)

# task name, finished requests, total requests. A hook may also have ``reused(task, n)``: told first of
# answers read back from the run store or cache (done, but not the model's work: a rate leaves them out).
ProgressHook = Callable[[str, int, int], None]


@dataclass
class TaskRequests:
    """A task's requests: per sample, flattened, deduplicated (``mapping``: flat index -> unique index)."""

    prepared: PreparedTask
    handler: KindHandler | PredictsSamples  # a task class (PredictsSamples) makes no requests: the lists are empty
    per_sample: list[list[Request]]
    prompts: list[str]
    flat: list[Request]
    unique: list[Request]
    mapping: list[int]

    @property
    def name(self) -> str:
        return self.prepared.task.spec.name


def _audited_with(model: Model, prepared: PreparedTask) -> PreparedTask:
    """The audit's "model" stage (what only the loaded model tells): its findings join the task's, and are
    printed now, as the stage before the model loaded printed its own."""
    subject = ModelSubject(prepared.task, prepared.use_chat, model, prepared.samples)
    found = audit_with_model(subject, strict=prepared.strict_audit)
    for finding in found:
        if finding.silenced is None:
            log.warning("%s: audit %s", prepared.task.name, finding.text())
    return dataclasses.replace(prepared, findings=prepared.findings + found) if found else prepared


def build_requests(model: Model, prepared: PreparedTask) -> TaskRequests:
    """Render every prompt for this model and turn each sample into its requests (no model call)."""
    spec = prepared.task.spec
    # a handler that only gives the samples' texts (kinds/given_texts) leaves the requests to the kind
    handler: KindHandler | PredictsSamples = (
        prepared.handler if is_custom(prepared.handler) else _kind_handler(model, prepared)
    )
    if prepared.use_chat and not model.has_chat_template:
        raise ProctorError(f"task '{spec.name}' asks for the chat template, but model '{model.name}' has none")
    prepared = _audited_with(model, prepared)
    if has_images(prepared) and not model.supports_images:
        raise ProctorError(
            f"task '{spec.name}' shows images, and model '{model.name}' takes none: run it on a vision-language "
            "model (a local Hugging Face image-text-to-text folder, hf-vision:<folder>, or openai:<name> on a "
            "server that takes images)"
        )
    prompts = [sample.prompt.render(model) if spec.kind != "perplexity" else "" for sample in prepared.samples]
    if is_custom(handler):  # a custom task class calls the model itself: no requests to plan
        if isinstance(
            handler, UsesChoiceFormulation
        ):  # resolved lazily: only choice scoring needs the capability check
            handler.use_choice_formulation(lambda: choice_formulation(model, prepared))
        return TaskRequests(prepared, handler, [], prompts, [], [], [])
    epochs = prepared.epochs
    per_sample = [  # sampled generation: a seed per sample and epoch (engine/epochs.py)
        [
            r
            for e in range(epochs)
            for r in seeded(
                _with_images(handler.requests(spec, sample, text), sample.prompt.images), sample.sample.id, e
            )
        ]
        for sample, text in zip(prepared.samples, prompts)
    ]
    if spec.kind == "generate" and handler.request_type == "generate":
        window = getattr(model, "max_length", None)
        task = prepared.task
        check_window(
            spec,
            window if isinstance(window, int) else None,
            model.name,
            str(task.file) if task.file else None,
            task.lines.get("generation"),
        )
    flat = [r for requests in per_sample for r in requests]
    unique, mapping = dedupe(flat)
    return TaskRequests(prepared, handler, per_sample, prompts, flat, unique, mapping)


def has_images(prepared: PreparedTask) -> bool:
    return any(sample.prompt.images for sample in prepared.samples)


def _with_images(requests: list[Request], images: tuple[ImageInput, ...]) -> list[Request]:
    """The sample's images on each of its requests (they enter the request's identity by digest)."""
    if not images:
        return requests
    return [
        dataclasses.replace(r, images=images) if isinstance(r, (GenerateRequest, LoglikelihoodRequest)) else r
        for r in requests
    ]


def choice_formulation(model: Model, prepared: PreparedTask) -> MultipleChoiceGenerateKind | None:
    """The lettered generation formulation of a choice (``tasks/mc_generate.py``) when it is asked
    for, or when the model cannot score log-likelihoods (a chat-only API); else None."""
    fmt = prepared.mc_format
    if fmt == "auto":
        scores = model.supports_loglikelihood and (model.supports_image_loglikelihood or not has_images(prepared))
        fmt = "loglikelihood" if scores else "generate"
    elif fmt == "loglikelihood" and not has_images(prepared) and not model.supports_loglikelihood:
        # asked for by name: an error, never the fallback the flag is there to rule out (with images the
        # backend refuses first, before any request)
        why = getattr(model, "loglikelihood_reason", None) or "it has no log-likelihoods"
        raise ProctorError(
            f"task '{prepared.task.spec.name}': --mc-format loglikelihood, but model '{model.name}' cannot score "
            f"log-likelihoods ({why}); run it with --mc-format generate, or fix the server"
        )
    if fmt != "generate":
        return None
    from proctor.kinds.mc_generate import MultipleChoiceGenerateKind

    return MultipleChoiceGenerateKind(lambda prompt: prompt.render(model), prepared.mc_shuffle_seed)


def _kind_handler(model: Model, prepared: PreparedTask) -> KindHandler:
    """The kind's handler; multiple choice by generation when asked, or when the model cannot score."""
    spec = prepared.task.spec
    if spec.kind == "multiple_choice":
        generate = choice_formulation(model, prepared)
        if generate is not None:
            return generate
    if spec.kind == "perplexity" and not model.supports_loglikelihood:
        # no generation formulation gives a perplexity: refuse rather than report a wrong number
        raise ProctorError(
            f"task '{spec.name}' is a perplexity task and needs log-likelihoods, which model '{model.name}' cannot "
            "score (a chat-only or log-prob-less server); run it on a backend with prompt log-probs"
        )
    return kind_handler(spec.kind)


def is_custom(handler: object) -> TypeIs[PredictsSamples]:
    """A task class that calls the model itself (``kinds/capabilities.PredictsSamples``)."""
    return isinstance(handler, PredictsSamples)


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
