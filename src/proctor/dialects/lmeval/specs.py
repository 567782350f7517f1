"""One lm-eval leaf task -> one proctor ``TaskSpec`` run by the handler in ``handler.py``.

Metric names are lm-eval's result keys, ``metric,filter`` (``acc,none``, ``exact_match,strict-match``);
each is registered as a proctor metric that reads lm-eval's per-sample value, and the task's
lm-eval aggregation replaces the value in the results (``corpus_metrics``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Mapping

from pydantic import ValidationError

from proctor.core.errors import TaskDefinitionError
from proctor.core.names import close_names
from proctor.core.task import GROUP_AGGREGATION, GROUP_METRICS, Task
from proctor.core.task_spec import HandlerSpec, TaskSpec
from proctor.dialects.lmeval.catalogue import Leaf
from proctor.dialects.lmeval.config_checks import (
    check_config_shapes,
    check_metric_arguments,
    check_metric_names,
    check_registered_names,
    check_task_keys,
)
from proctor.dialects.lmeval.task_config import TaskConfig
from proctor.dialects.lmeval.task_options import LmEvalTaskOptions
from proctor.scoring.metrics import MetricDef
from proctor.scoring.stats import sample_variance, stderr_from_variance

KINDS = {  # lm-eval's output_type -> proctor's kind, and the registered handler (declaration.py) that runs it
    "multiple_choice": ("multiple_choice", "lm-eval.choices"),
    "loglikelihood": ("multiple_choice", "lm-eval.choices"),
    "generate_until": ("generate", "lm-eval.generate"),
    "loglikelihood_rolling": ("perplexity", "lm-eval.rolling"),
}
_ALL_KINDS = ("multiple_choice", "generate", "perplexity")


def _numeric(values: list) -> tuple[float, float | None]:
    numbers = [float(v) for v in values if isinstance(v, (int, float))]
    if not numbers:
        return float("nan"), None
    mean = sum(numbers) / len(numbers)
    if len(numbers) < 2:
        return mean, None
    return mean, stderr_from_variance(sample_variance(numbers), len(numbers))


def resolve_metric(key: str) -> MetricDef | None:
    """The proctor metric ``metric,filter`` (an lm-eval task's key): lm-eval's per-sample value (numbers
    only; others None), lm-eval's direction for the metric (a task's ``metric_list`` may state its own)."""
    if "," not in key:
        return None

    def compute(outcome: object, **_: object) -> float | None:
        value = getattr(outcome, "values", {}).get(key)
        return float(value) if isinstance(value, (int, float)) else None

    return MetricDef(key, frozenset(_ALL_KINDS), compute, _numeric, _default_direction(key.split(",", 1)[0]))


def _default_direction(name: str) -> bool:
    from lm_eval.api.registry import is_higher_better

    try:
        return bool(is_higher_better(name))
    except Exception:
        return True


def metric_keys(config: TaskConfig) -> list[tuple[str, bool]]:
    """(``metric,filter``, higher_is_better) for every metric the task reports."""
    from lm_eval.api.registry import DEFAULT_METRIC_REGISTRY, is_higher_better

    output_type = config.get("output_type") or "generate_until"
    metrics: list[tuple[str, bool | None]] = []
    for item in config.get("metric_list") or [{"metric": m} for m in DEFAULT_METRIC_REGISTRY.get(output_type, [])]:
        name = item.get("metric") if isinstance(item, dict) else item
        name = getattr(name, "__name__", name)
        metrics.append((str(name), item.get("higher_is_better") if isinstance(item, dict) else None))
    filters = [str(f.get("name")) for f in config.get("filter_list") or []] or ["none"]
    out = []
    for name, better in metrics:
        if better is None:
            try:
                better = bool(is_higher_better(name))
            except Exception:
                better = True
        out += [(f"{name},{f}", bool(better)) for f in filters]
    return out


def _digest(config: TaskConfig) -> str:
    def stable(value: object) -> str:
        return getattr(value, "__module__", "") + "." + getattr(value, "__qualname__", type(value).__name__)

    return hashlib.sha256(json.dumps(config, sort_keys=True, default=stable).encode()).hexdigest()[:16]


def to_task(leaf: Leaf, mapping: Mapping[str, str], origin: str, options: Mapping[str, Any] | None = None) -> Task:
    """``options``: the dialect options a task records (``bootstrap_iters``: lm-eval's, for standard errors)."""
    config = leaf.config
    if "output_type" in config and config["output_type"] is None:  # lm-eval then makes no requests: a crash
        raise TaskDefinitionError(
            f"task '{leaf.name}': output_type is null; it is one of lm-eval's output types: {', '.join(KINDS)}",
            file=leaf.source,
            field="output_type",
        )
    output_type = str(config.get("output_type") or "generate_until")
    if output_type not in KINDS:
        close = close_names(output_type, KINDS)
        hint = f"did you mean {close[0]}? " if close else ""
        raise TaskDefinitionError(
            f"task '{leaf.name}': unknown output_type '{output_type}'; {hint}lm-eval's output types: "
            f"{', '.join(KINDS)}",
            file=leaf.source,
            field="output_type",
        )
    kind, handler = KINDS[output_type]
    check_task_keys(config, leaf.name, leaf.source)
    check_config_shapes(config, leaf.name, leaf.source)
    check_registered_names(config, leaf.name, leaf.source)
    check_metric_names(config, leaf.name, leaf.source)
    check_metric_arguments(config, leaf.name, leaf.source)
    shots = config.get("num_fewshot")
    if shots is not None and (isinstance(shots, bool) or not isinstance(shots, int) or shots < 0):
        raise TaskDefinitionError(
            f"task '{leaf.name}': num_fewshot is a count of examples (0 or more), got {shots!r}",
            file=leaf.source,
            field="num_fewshot",
        )
    keys = metric_keys(config)
    token = f"{leaf.name}@{_digest(config)}"
    version = (config.get("metadata") or {}).get("version")
    task_options = LmEvalTaskOptions(
        task=leaf.name,
        token=token,
        output_type=output_type,
        config_digest=token.split("@")[1],
        data_map=dict(mapping),
        **{k: v for k, v in (options or {}).items() if v is not None},
    )
    raw: dict[str, object] = {  # TaskSpec's fields
        "name": leaf.name,
        "kind": kind,
        "version": str(version) if version is not None else "0",
        "description": f"lm-evaluation-harness task '{leaf.name}' ({output_type}) from {origin}",
        "group": [g for g, _ in leaf.groups],
        "size_weighted_groups": [g for g, weighted in leaf.groups if weighted is True],
        "data": [{"hub": str(config.get("dataset_path") or "custom"), "subset": config.get("dataset_name")}],
        # a direction other than lm-eval's default for the metric is stated in the spec (else the resolver's)
        "metrics": [
            k
            if better == _default_direction(k.split(",", 1)[0])
            else {"name": k, "kwargs": {"higher_is_better": better}}
            for k, better in keys
        ],
        "handler": HandlerSpec(name=handler, options=task_options),
    }
    try:
        spec = TaskSpec.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise TaskDefinitionError(
            f"{error['msg']} (from lm-eval task '{leaf.name}')",
            file=leaf.source,
            field=".".join(map(str, error["loc"])),
        ) from None
    source = leaf.source
    return Task(
        spec=spec,
        file=source,
        base_dir=source.parent if source else Path.cwd(),
        dialect="lm-eval",
        resources={"leaf": leaf, GROUP_METRICS: leaf.group_metrics, GROUP_AGGREGATION: leaf.aggregation},
    )
