"""Phase two: turn prepared samples into requests, run them on the model, score, aggregate."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from proctor.engine.prepare import PreparedTask
from proctor.errors import ProctorError
from proctor.models.base import Model
from proctor.scoring.aggregate import aggregate_metrics, breakdown, breakdown_stats
from proctor.tasks.base import kind_handler

log = logging.getLogger(__name__)

ProgressHook = Callable[[str, int, int], None]  # task name, finished requests, total requests


@dataclass
class TaskOutcome:
    name: str
    result: dict
    records: list[dict] = field(repr=False)


def _dedupe(requests: Sequence[Any]) -> tuple[list[Any], list[int]]:
    """Unique requests and, for each original request, the index of its unique twin."""
    index: dict[Any, int] = {}
    unique: list[Any] = []
    mapping = []
    for request in requests:
        if request not in index:
            index[request] = len(unique)
            unique.append(request)
        mapping.append(index[request])
    return unique, mapping


def run_task(model: Model, prepared: PreparedTask, progress: ProgressHook | None = None) -> TaskOutcome:
    spec = prepared.task.spec
    handler = prepared.handler or kind_handler(spec.kind)
    started = time.perf_counter()
    if prepared.use_chat and not model.has_chat_template:
        raise ProctorError(f"task '{spec.name}' asks for the chat template, but model '{model.name}' has none")
    prompts = [sample.prompt.render(model) if spec.kind != "perplexity" else "" for sample in prepared.samples]
    done = 0

    def on_progress(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(spec.name, done, total)

    model_started = time.perf_counter()
    if hasattr(handler, "predict_samples"):  # a custom task class calls the model itself
        total = len(prepared.samples)
        if progress:
            progress(spec.name, 0, total)
        pairs = handler.predict_samples(model, prepared.samples, prompts, on_progress)
        request_info = {"total": total, "unique": total, "type": "custom"}
    else:
        per_sample = [handler.requests(spec, sample, text) for sample, text in zip(prepared.samples, prompts)]
        flat = [r for requests in per_sample for r in requests]
        unique, mapping = _dedupe(flat)
        total = len(unique)
        if progress:
            progress(spec.name, 0, total)
        results = getattr(model, handler.request_type)(unique, on_progress) if unique else []
        pairs, position = [], 0
        for sample, requests in zip(prepared.samples, per_sample):
            sample_results = [results[mapping[position + k]] for k in range(len(requests))]
            position += len(requests)
            pairs.append(handler.outcome(spec, sample, sample_results))
        request_info = {"total": len(flat), "unique": len(unique), "type": handler.request_type}
    model_seconds = time.perf_counter() - model_started
    values: dict[str, list[Any]] = {m.name: [] for m, _ in prepared.metrics}
    records: list[dict] = []
    for sample, (outcome, details), text in zip(prepared.samples, pairs, prompts):
        metric_values = {}
        for metric, kwargs in prepared.metrics:
            value = metric.compute(outcome, **kwargs)
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
                **details,
                "metrics": metric_values,
            }
        )
    metric_defs = [m for m, _ in prepared.metrics]
    result: dict[str, Any] = {
        "kind": spec.kind,
        "dialect": prepared.task.dialect,
        "source": str(prepared.task.file) if prepared.task.file else None,
        "version": spec.version,
        "changes": spec.changes,
        "hash": prepared.content_hash,
        "group": spec.group,
        "n_samples": len(prepared.samples),
        "data": prepared.data,
        "metrics": aggregate_metrics(metric_defs, values),
        "higher_is_better": {m.name: m.higher_is_better for m in metric_defs},
        "requests": request_info,
        "timing": {"model_seconds": round(model_seconds, 3), "total_seconds": round(time.perf_counter() - started, 3)},
    }
    if spec.breakdown:
        result["breakdown"] = {
            key: breakdown(metric_defs, values, [s.sample.fields.get(key) for s in prepared.samples]) for key in spec.breakdown
        }
        result["breakdown_stats"] = {key: breakdown_stats(parts) for key, parts in result["breakdown"].items()}
    return TaskOutcome(spec.name, result, records)
