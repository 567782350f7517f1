"""Checks of one lm-eval task's config before it is built or any model runs: the shapes of the settings proctor
and lm-eval read (metric_list, filter_list, generation_kwargs, dataset_kwargs, delimiters, ...), the names lm-eval
looks up in its registries (metrics, aggregations, filters, few-shot samplers) and the arguments a metric_list
entry passes to its metric function. Each error names the task's file and the key; lm-eval itself would fail
with a bare exception while building the task, or only while scoring, after the model ran."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Callable

from proctor.core.errors import TaskDefinitionError
from proctor.core.names import close_names
from proctor.dialects.lmeval.task_config import TaskConfig


def check_metric_names(config: TaskConfig, name: str, source: Path | None) -> None:
    """A metric_list name lm-eval does not know would score every sample as nothing (a NaN result): refuse it.
    Only where lm-eval computes the metric itself (no custom ``process_results``, no ``hf_evaluate``)."""
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
        close = close_names(metric, METRIC_REGISTRY, 3)
        hint = (
            f"; did you mean {', '.join(close)}?"
            if close
            else f"; lm-eval's metrics: {', '.join(sorted(METRIC_REGISTRY))}"
        )
        raise TaskDefinitionError(
            f"task '{name}': lm-eval has no metric '{metric}'{hint}", file=source, field=f"metric_list[{index}].metric"
        )


_ENTRY_KEYS = ("metric", "aggregation", "higher_is_better", "hf_evaluate")  # the rest are the metric's arguments


def _accepts(function: Callable[..., object], *args: object, **kwargs: object) -> bool:
    """Whether ``function`` can be called so (its signature; one it hides is taken to accept)."""
    import inspect

    try:
        inspect.signature(function).bind(*args, **kwargs)
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin)
        return True
    return True


def _check_regexes(value: object, name: str, source: Path | None, field: str) -> None:
    """exact_match's ``regexes_to_ignore``: each item (a text's letters, as lm-eval iterates it) is a pattern
    ``re.sub`` applies to every answer; a number or a pattern that does not compile fails while scoring."""
    items = list(value) if isinstance(value, (list, tuple, str)) else None
    odd = next((x for x in items if not isinstance(x, str)), None) if items is not None else value
    if items is None or odd is not None:
        raise TaskDefinitionError(
            f"task '{name}': regexes_to_ignore is a list of regular expressions, got {odd!r:.60}",
            file=source,
            field=field,
        )
    for pattern in items:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise TaskDefinitionError(
                f"task '{name}': regexes_to_ignore pattern {pattern!r:.60} does not compile: {exc}",
                file=source,
                field=field,
            ) from None


def check_metric_arguments(config: TaskConfig, name: str, source: Path | None) -> None:
    """A ``generate_until`` task's metric_list entry passes its other keys to the metric function (lm-eval's
    ``process_results``: ``fn(references=, predictions=, **kwargs)``, then ``fn([gold, result])`` on a TypeError).
    A key the function does not take (``ignroe_case`` under exact_match) fails both calls: a crash only after the
    model ran. Checked against the function's signature (exact_match: lm-eval's ``exact_match_hf_evaluate``);
    a metric that ignores the keys upstream (a passthrough one, reached through the fallback) is left alone."""
    if config.get("output_type") != "generate_until" or config.get("process_results") is not None:
        return
    from lm_eval.api import metrics as M
    from lm_eval.api.registry import METRIC_REGISTRY

    for index, item in enumerate(config.get("metric_list") or []):
        if not isinstance(item, dict) or item.get("hf_evaluate"):
            continue
        metric = item.get("metric")
        kwargs = {str(k): v for k, v in item.items() if k not in _ENTRY_KEYS}
        function = metric if callable(metric) else METRIC_REGISTRY.get(metric) if isinstance(metric, str) else None
        if function is None or not kwargs:
            continue
        target = M.exact_match_hf_evaluate if function is M.exact_match_fn else function
        if target is M.exact_match_hf_evaluate and kwargs.get("regexes_to_ignore") is not None:
            _check_regexes(kwargs["regexes_to_ignore"], name, source, f"metric_list[{index}].regexes_to_ignore")
        if _accepts(target, references=[""], predictions=[""], **kwargs) or _accepts(function, ["", ""]):
            continue
        import inspect

        taken = [
            p.name
            for p in inspect.signature(target).parameters.values()
            if p.name not in ("references", "predictions") and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
        label = metric if isinstance(metric, str) else getattr(metric, "__name__", "the metric")
        odd = [k for k in kwargs if k not in taken] or list(kwargs)
        close = close_names(odd[0], taken, 3)
        hint = f"did you mean {', '.join(close)}?" if close else f"it takes: {', '.join(taken) or 'no other arguments'}"
        raise TaskDefinitionError(
            f"task '{name}': metric '{label}' takes no argument '{odd[0]}' (lm-eval would fail while scoring, after "
            f"the model ran); {hint}",
            file=source,
            field=f"metric_list[{index}].{odd[0]}",
        )


def _number(value: object, low: float, high: float) -> bool:
    """A number (not a bool) in [low, high]; NaN never is."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and low <= value <= high


_GENERATION_CHECKS: dict[str, tuple[Callable[[object], bool], str]] = {
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
    close = close_names(value, known, 3)
    hint = f"did you mean {', '.join(close)}?" if close else f"lm-eval's {kind}s: {', '.join(sorted(known))}"
    return f"lm-eval has no {kind} '{value}'; {hint}"


def _check_filter_settings(filter_class: type, step: dict, fail: Callable[[str, str], Exception], field: str) -> None:
    """A filter step's other keys are its filter's settings; lm-eval makes the filter only when it applies it,
    after the model ran (a setting it does not take, or lacks: a TypeError or KeyError then). Made here once."""
    settings = {k: v for k, v in step.items() if k != "function"}
    try:
        filter_class(**settings)
    except Exception as exc:  # the filter's own refusal, whatever its type
        detail = f"missing setting {exc}" if isinstance(exc, KeyError) else str(exc).split("\n")[0]
        raise fail(f"filter '{step['function']}' cannot be made from {settings!r:.80}: {detail:.160}", field) from None


def check_task_keys(config: TaskConfig, name: str, source: Path | None) -> None:
    """Every key of a task is one of lm-eval's ``TaskConfig`` fields: lm-eval passes them all to it, and an
    unknown one (a typo such as ``doc_to_txt``) is a bare TypeError while the task is built."""
    import dataclasses

    from lm_eval.api.task import TaskConfig

    known = [f.name for f in dataclasses.fields(TaskConfig)]
    odd = next((str(k) for k in config if k not in known), None)
    if odd is not None:
        raise TaskDefinitionError(f"task '{name}': {_unknown('task key', odd, known)}", file=source, field=odd)


def check_registered_names(config: TaskConfig, name: str, source: Path | None) -> None:
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
            if isinstance(function, str):
                _check_filter_settings(FILTER_REGISTRY[function], item, fail, field)
    sampler = (config.get("fewshot_config") or {}).get("sampler")
    if isinstance(sampler, str) and sampler not in SAMPLER_REGISTRY:
        raise fail(_unknown("few-shot sampler", sampler, list(SAMPLER_REGISTRY)), "fewshot_config.sampler")


def check_config_shapes(config: TaskConfig, name: str, source: Path | None) -> None:
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
    kwargs = config.get("dataset_kwargs")
    if kwargs is not None and not isinstance(kwargs, dict):  # lm-eval pops keys from it: an AttributeError
        raise fail(f"'dataset_kwargs' is a mapping (data_files, ...), got {type(kwargs).__name__}", "dataset_kwargs")
    if not config.get("dataset_path") and not callable(config.get("custom_dataset")):
        raise fail(
            "'dataset_path' is missing: it names the dataset lm-eval loads (a hub id, or json / csv)", "dataset_path"
        )
    if config.get("description") is not None and not isinstance(config["description"], str):
        raise fail(
            f"'description' is a text (a Jinja template), got {type(config['description']).__name__}", "description"
        )
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
