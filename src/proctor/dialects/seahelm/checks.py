"""The SEA-HELM config values proctor reads, checked when a config loads (before any model).

Each problem names the config file, the key (``<task>.languages.<lang>.<key>``) and so the language:
a language block without ``prompt_template``, a ``max_tokens`` that is not a positive count (SEA-HELM
would silently use another), a ``fewshot_num_examples`` that is not a count, a ``metric``, ``max_n_runs``,
``temperature`` or ``aggregation_type`` SEA-HELM would fail on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from proctor.core.errors import TaskDefinitionError
from proctor.core.format_bounds import format_problem


def _count(value: Any, *, positive: bool) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and (value > 0 if positive else value >= 0)


_AGGREGATION_TYPES = ("macro-average", "micro-average")  # SEA-HELM's aggregate_metrics knows these two


def _settings(task_id: str, cfg: dict, path: Path) -> None:
    """``metric`` (a text: upstream reads ``results[metric]``), ``max_n_runs`` (a count of runs, 1 or more),
    ``temperature`` (a number, 0 or more) and, under an ``aggregation_group``, ``aggregation_type``: values
    SEA-HELM would fail on (proctor: an internal error after generation, or a run ending on nonsense)."""

    def fail(message: str, key: str) -> TaskDefinitionError:
        return TaskDefinitionError(message, file=path, field=f"{task_id}.{key}")

    metric = cfg.get("metric")
    if metric is not None and not isinstance(metric, str):
        raise fail(
            f"'metric' names the metric the task is scored by, got {type(metric).__name__} {metric!r:.60}", "metric"
        )
    runs = cfg.get("max_n_runs")
    if runs is not None and not _count(runs, positive=True):
        raise fail(f"'max_n_runs' must be a count of runs (1 or more), got {runs!r:.60}", "max_n_runs")
    temperature = cfg.get("temperature")
    if temperature is not None and not (
        isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and 0 <= temperature < float("inf")
    ):
        raise fail(f"'temperature' must be a number, 0 or more, got {temperature!r:.60}", "temperature")
    kind = cfg.get("aggregation_type")
    if cfg.get("aggregation_group") and kind is not None and kind not in _AGGREGATION_TYPES:
        raise fail(
            f"'aggregation_type' must be {' or '.join(_AGGREGATION_TYPES)}, got {kind!r:.60}", "aggregation_type"
        )


def check_task(task_id: str, cfg: dict, path: Path) -> None:
    """Task-level keys: ``fewshot_num_examples`` (a count, or ``{instruct: N, base: N}`` with counts or null),
    and the settings ``_settings`` checks."""
    _settings(task_id, cfg, path)
    counts = cfg.get("fewshot_num_examples")
    if counts is None:
        return
    items = counts.items() if isinstance(counts, dict) else [("", counts)]
    for mode, value in items:
        if value is not None and not _count(value, positive=False):
            key = f"{task_id}.fewshot_num_examples" + (f".{mode}" if mode else "")
            raise TaskDefinitionError(
                f"'fewshot_num_examples' must be a count of examples (0 or more), got {value!r}", file=path, field=key
            )


def check_language(task_id: str, lang: Any, block: Any, path: Path) -> None:
    """One language block: a mapping with a ``prompt_template`` (holding a ``task_template`` text) and, when
    given, a positive ``max_tokens``."""
    where = f"{task_id}.languages.{lang}"
    if not isinstance(block, dict):
        raise TaskDefinitionError(
            f"language '{lang}' must be a mapping of settings, got {type(block).__name__}", file=path, field=where
        )
    template = block.get("prompt_template")
    if template is None:
        raise TaskDefinitionError(
            f"language '{lang}' has no 'prompt_template'", file=path, field=f"{where}.prompt_template"
        )
    if not isinstance(template, dict):
        raise TaskDefinitionError(
            f"language '{lang}': 'prompt_template' must be a mapping (preamble, task_template, ...), "
            f"got {type(template).__name__}",
            file=path,
            field=f"{where}.prompt_template",
        )
    for key in ("task_template", "preamble", "answer_template", "answer_tag"):
        value = template.get(key)
        if key == "task_template" and value is None:
            raise TaskDefinitionError(
                f"language '{lang}': 'prompt_template' has no 'task_template'",
                file=path,
                field=f"{where}.prompt_template.task_template",
            )
        if value is not None and not isinstance(value, str):
            raise TaskDefinitionError(
                f"language '{lang}': '{key}' must be a text, got {type(value).__name__}: {value!r:.60}",
                file=path,
                field=f"{where}.prompt_template.{key}",
            )
        problem = format_problem(value) if isinstance(value, str) and key != "answer_tag" else None
        if problem:  # the template is filled with str.format for every row: found here, not on the first row
            raise TaskDefinitionError(
                f"language '{lang}': '{key}' {problem}", file=path, field=f"{where}.prompt_template.{key}"
            )
    tokens = block.get("max_tokens")
    if tokens is not None and not _count(tokens, positive=True):
        raise TaskDefinitionError(
            f"language '{lang}': 'max_tokens' must be a positive number of tokens, got {tokens!r}",
            file=path,
            field=f"{where}.max_tokens",
        )
