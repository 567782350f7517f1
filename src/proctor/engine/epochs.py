"""Repeated generation (``--epochs N``): per-sample, per-epoch seeds; per-epoch scores; mean or pass@k.

A sampled request's seed comes from (sampling seed, sample id, epoch) alone, so what a sample
generates never depends on the batch it lands in, the batch size or the number of workers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from typing import TYPE_CHECKING, Any, Sequence

from proctor.core.model_requests import GenerateRequest, Request
from proctor.engine.outcomes import SampleRecord, TaskOutcome
from proctor.engine.task_warnings import warn
from proctor.runs.task_result import Epochs, EpochVariance
from proctor.scoring.aggregate import aggregate_metrics, breakdowns
from proctor.scoring.stats import epoch_variance

if TYPE_CHECKING:
    from proctor.engine.prepare import PreparedTask
    from proctor.scoring.metrics import MetricDef


def epoch_seed(seed: int, sample_id: str, epoch: int) -> int:
    digest = hashlib.sha256(f"{seed}\x00{sample_id}\x00{epoch}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF  # fits every backend's seed type


def seeded(requests: Sequence[Request], sample_id: str, epoch: int) -> list[Request]:
    """Sampled generation requests get their own seed; greedy ones stay as they are (one stored answer)."""
    return [
        dataclasses.replace(r, seed=epoch_seed(r.seed, sample_id, epoch))
        if isinstance(r, GenerateRequest) and r.temperature > 0
        else r
        for r in requests
    ]


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if n - c < k:
        return 1.0
    value = 1.0
    for i in range(n - c + 1, n + 1):
        value *= 1.0 - k / i
    return 1.0 - value


def _binary(values: Sequence[object]) -> bool:
    present = [v for v in values if v is not None]
    return bool(present) and all(v in (0, 1) or isinstance(v, bool) for v in present)


def reduce_sample(values: Sequence[Any], k: int | None) -> Any:
    """One sample's value across epochs: the mean, or pass@k for a 0/1 metric."""
    present = [float(v) for v in values if v is not None]
    if not present:
        return None
    if k is not None and _binary(values):
        return pass_at_k(len(present), int(sum(present)), k)
    return sum(present) / len(present)


def _numeric(value: object) -> bool:  # an int, a float or a bool (0/1), finite
    return isinstance(value, (int, float)) and math.isfinite(value)


def combine_epochs(
    outcomes: Sequence[TaskOutcome],
    prepared: PreparedTask,
    metric_defs: Sequence[MetricDef],
    k: int | None,
    reducer: str,
) -> TaskOutcome:
    """One TaskOutcome from one per epoch (same samples, same order)."""
    base = outcomes[0]
    n_epochs = len(outcomes)
    names = [m.name for m in metric_defs]
    reduced: dict[str, list[Any]] = {name: [] for name in names}
    records: list[SampleRecord] = []
    for i, record in enumerate(base.records):
        per_epoch = [o.records[i] for o in outcomes]
        metrics = {name: reduce_sample([r["metrics"].get(name) for r in per_epoch], k) for name in names}
        for name in names:
            reduced[name].append(metrics[name])
        keep = ("generation", "extracted", "parsed", "finish_reason", "completion_tokens", "metrics")
        records.append({**record, "metrics": metrics, "epochs": [{key: r.get(key) for key in keep} for r in per_epoch]})
    result = base.result.model_copy(deep=True)
    result.set_fields(
        {"metrics": aggregate_metrics(metric_defs, reduced, prepared.clusters())}
    )  # the reduced values replace the first epoch's
    scores = {name: [o.result.metrics[name].value for o in outcomes] for name in names}
    passes = {}
    for name in names:
        columns = [[o.records[i]["metrics"].get(name) for o in outcomes] for i in range(len(base.records))]
        if all(_binary(c) or all(v is None for v in c) for c in columns) and any(_binary(c) for c in columns):
            passes[name] = {
                f"pass@{kk}": sum(reduce_sample(c, kk) for c in columns if _binary(c))
                / sum(1 for c in columns if _binary(c))
                for kk in range(1, n_epochs + 1)
            }
    variance = {}
    for name in names:  # each question's values across the epochs, for the numeric metrics
        columns = [[o.records[i]["metrics"].get(name) for o in outcomes] for i in range(len(base.records))]
        numeric = [[float(v) for v in c if _numeric(v)] for c in columns]
        if any(numeric) and all(len(c) == len([v for v in col if v is not None]) for c, col in zip(numeric, columns)):
            found = epoch_variance(numeric)
            if found is not None:
                variance[name] = EpochVariance.model_validate(found)
    result.epochs = Epochs(n=n_epochs, reducer=reducer, scores=scores, pass_at_k=passes, variance=variance or None)
    spec = prepared.task.spec
    if spec.breakdown:
        result.set_fields(
            breakdowns(metric_defs, reduced, spec.breakdown, [s.sample.fields for s in prepared.samples], spec.cluster)
        )
    outcome = type(base)(base.name, result, records)
    graded = {name for name, values in reduced.items() if any(_numeric(v) and v not in (0, 1) for v in values)}
    averaged = [name for name in names if k is not None and name not in passes and name in graded]
    if averaged:  # pass@K counts answers that are right or wrong: a graded score has no pass
        warn(
            outcome,
            f"--epoch-reducer {reducer} applies to 0/1 metrics only: {', '.join(averaged)} "
            f"{'is' if len(averaged) == 1 else 'are'} not right-or-wrong per answer and "
            f"{'was' if len(averaged) == 1 else 'were'} averaged over the {n_epochs} epochs (the mean reducer)",
        )
    return outcome
