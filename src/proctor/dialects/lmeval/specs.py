"""One lm-eval leaf task -> one proctor ``TaskSpec`` run by the handler in ``handler.py``.

Metric names are lm-eval's result keys, ``metric,filter`` (``acc,none``, ``exact_match,strict-match``);
each is registered as a proctor metric that reads lm-eval's per-sample value, and the task's
lm-eval aggregation replaces the value in the results (``corpus_metrics``).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from pydantic import ValidationError

from proctor.core.errors import TaskDefinitionError
from proctor.core.task import Task
from proctor.core.task_spec import HandlerSpec, TaskSpec
from proctor.dialects.lmeval.catalogue import Leaf
from proctor.dialects.lmeval.task_options import LmEvalTaskOptions
from proctor.scoring.metrics import MetricDef
from proctor.scoring.stats import sample_variance, stderr_from_variance

KINDS = {  # lm-eval's output_type -> proctor's kind, and the registered handler (plugins/lmeval.py) that runs it
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

    def compute(outcome: Any, **_: Any) -> Any:
        value = getattr(outcome, "values", {}).get(key)
        return float(value) if isinstance(value, (int, float)) else None

    return MetricDef(key, frozenset(_ALL_KINDS), compute, _numeric, _default_direction(key.split(",", 1)[0]))


def _default_direction(name: str) -> bool:
    from lm_eval.api.registry import is_higher_better

    try:
        return bool(is_higher_better(name))
    except Exception:
        return True


def metric_keys(config: Mapping[str, Any]) -> list[tuple[str, bool]]:
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


def check_metric_names(config: Mapping[str, Any], name: str, source: Path | None) -> None:
    """A metric_list name lm-eval does not know would score every sample as nothing (a NaN result): refuse it.
    Only where lm-eval computes the metric itself (no custom ``process_results``, no ``hf_evaluate``)."""
    import difflib

    from lm_eval.api.registry import METRIC_REGISTRY

    if config.get("process_results") is not None:
        return
    if not METRIC_REGISTRY:
        import lm_eval.api.metrics  # noqa: F401 - registers lm-eval's metrics
    for index, item in enumerate(config.get("metric_list") or []):
        metric = item.get("metric") if isinstance(item, dict) else item
        if (
            not isinstance(metric, str)
            or (isinstance(item, dict) and item.get("hf_evaluate"))
            or metric in METRIC_REGISTRY
        ):
            continue
        close = difflib.get_close_matches(metric, list(METRIC_REGISTRY), n=3)
        hint = (
            f"; did you mean {', '.join(close)}?"
            if close
            else f"; lm-eval's metrics: {', '.join(sorted(METRIC_REGISTRY))}"
        )
        raise TaskDefinitionError(
            f"task '{name}': lm-eval has no metric '{metric}'{hint}", file=source, field=f"metric_list[{index}].metric"
        )


def _number(value: Any, low: float, high: float) -> bool:
    """A number (not a bool) in [low, high]; NaN never is."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and low <= value <= high


_GENERATION_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "until": (
        lambda v: isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)),
        "a string or a list of strings",
    ),
    "max_gen_toks": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1, "a whole number, 1 or more"),
    "temperature": (lambda v: _number(v, 0.0, sys.float_info.max), "a finite number, 0 or more"),
    "top_p": (lambda v: _number(v, sys.float_info.min, 1.0), "a number above 0 and at most 1"),
    "do_sample": (lambda v: isinstance(v, bool), "true or false"),
}


def _unknown(kind: str, value: str, known: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(value, known, n=3)
    hint = f"did you mean {', '.join(close)}?" if close else f"lm-eval's {kind}s: {', '.join(sorted(known))}"
    return f"lm-eval has no {kind} '{value}'; {hint}"


def check_registered_names(config: Mapping[str, Any], name: str, source: Path | None) -> None:
    """Names lm-eval looks up in its registries while it builds or scores the task: each metric_list entry's
    ``metric`` key and ``aggregation``, each filter step's ``function``, the few-shot ``sampler``. An unknown one
    is a bare KeyError while the task is built, or a crash only after the model ran (an unknown aggregation)."""
    from lm_eval.api.registry import AGGREGATION_REGISTRY, FILTER_REGISTRY
    from lm_eval.api.samplers import SAMPLER_REGISTRY

    def fail(message: str, field: str) -> TaskDefinitionError:
        return TaskDefinitionError(f"task '{name}': {message}", file=source, field=field)

    if not AGGREGATION_REGISTRY.keys():
        import lm_eval.api.metrics  # noqa: F401 - registers lm-eval's aggregations
    if not FILTER_REGISTRY.keys():
        import lm_eval.filters  # noqa: F401 - registers lm-eval's filters
    for index, item in enumerate(config.get("metric_list") or []):
        if not isinstance(item, dict) or "metric" not in item:
            raise fail(
                f"a metric_list entry is a mapping with a 'metric' key (and optionally 'aggregation', "
                f"'higher_is_better'), got {item!r:.60}",
                f"metric_list[{index}]",
            )
        aggregation = item.get("aggregation")
        if "aggregation" in item and not callable(aggregation):
            known = list(AGGREGATION_REGISTRY.keys())
            if not isinstance(aggregation, str) or aggregation not in known:
                raise fail(_unknown("aggregation", str(aggregation), known), f"metric_list[{index}].aggregation")
    for index, entry in enumerate(config.get("filter_list") or []):
        for step, item in enumerate(entry.get("filter") or []):
            field = f"filter_list[{index}].filter[{step}]"
            if not isinstance(item, dict) or "function" not in item:
                raise fail(f"a filter step is a mapping with a 'function' key, got {item!r:.60}", field)
            function = item["function"]
            known = list(FILTER_REGISTRY.keys())
            if not callable(function) and (not isinstance(function, str) or function not in known):
                raise fail(_unknown("filter", str(function), known), f"{field}.function")
    sampler = (config.get("fewshot_config") or {}).get("sampler")
    if isinstance(sampler, str) and sampler not in SAMPLER_REGISTRY:
        raise fail(_unknown("few-shot sampler", sampler, list(SAMPLER_REGISTRY)), "fewshot_config.sampler")


def check_config_shapes(config: Mapping[str, Any], name: str, source: Path | None) -> None:
    """The lists and settings proctor reads from the task's config itself, checked before it reads them (else an
    internal error, or one after the model ran): metric_list, filter_list (their regexes compile) and
    generation_kwargs."""

    def fail(message: str, field: str) -> TaskDefinitionError:
        return TaskDefinitionError(f"task '{name}': {message}", file=source, field=field)

    for key in ("metric_list", "filter_list"):
        if config.get(key) is not None and not isinstance(config[key], list):
            raise fail(f"'{key}' is a list, got {type(config[key]).__name__}: {config[key]!r:.60}", key)
    for index, entry in enumerate(config.get("filter_list") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("filter", []), list):
            raise fail(
                "a filter_list entry is a mapping with 'name' and a 'filter' list of steps", f"filter_list[{index}]"
            )
        for step, item in enumerate(entry.get("filter") or []):
            pattern = item.get("regex_pattern") if isinstance(item, dict) else None
            if not isinstance(pattern, str):
                continue
            try:
                re.compile(pattern)
            except re.error as exc:
                field = f"filter_list[{index}].filter[{step}].regex_pattern"
                raise fail(f"regex_pattern {pattern!r} does not compile: {exc}", field) from None
    for key in ("target_delimiter", "fewshot_delimiter"):  # lm-eval joins texts with them (a number: a crash)
        if key in config and not isinstance(config[key], str):
            raise fail(f"'{key}' is a string joining texts, got {type(config[key]).__name__} {config[key]!r:.60}", key)
    repeats = config.get("repeats", 1)
    if repeats is not None and (isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1):
        raise fail(f"'repeats' is a whole number, 1 or more, got {repeats!r:.60}", "repeats")
    fewshot = config.get("fewshot_config")
    if fewshot is not None and not isinstance(fewshot, dict):
        raise fail(
            f"'fewshot_config' is a mapping (sampler, samples, ...), got {type(fewshot).__name__}", "fewshot_config"
        )
    settings = config.get("generation_kwargs")
    if settings is not None and not isinstance(settings, dict):
        raise fail(f"'generation_kwargs' is a mapping, got {type(settings).__name__}", "generation_kwargs")
    for key, (ok, wanted) in _GENERATION_CHECKS.items():
        if settings and key in settings and not ok(settings[key]):
            raise fail(f"generation_kwargs.{key} is {wanted}, got {settings[key]!r:.60}", f"generation_kwargs.{key}")


def _digest(config: Mapping[str, Any]) -> str:
    def stable(value: Any) -> Any:
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
        close = difflib.get_close_matches(output_type, list(KINDS), n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise TaskDefinitionError(
            f"task '{leaf.name}': unknown output_type '{output_type}'; {hint}lm-eval's output types: "
            f"{', '.join(KINDS)}",
            file=leaf.source,
            field="output_type",
        )
    kind, handler = KINDS[output_type]
    check_config_shapes(config, leaf.name, leaf.source)
    check_registered_names(config, leaf.name, leaf.source)
    check_metric_names(config, leaf.name, leaf.source)
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
    raw: dict[str, Any] = {
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
        resources={"leaf": leaf},
    )
