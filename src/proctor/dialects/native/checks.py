"""What a valid native task may still say by mistake, refused with the line of the key: a metric or group given
twice or empty, a field the task's kind never reads, generation settings that cannot fit its own window."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from proctor.core.errors import TaskDefinitionError
from proctor.core.names import first_repeat
from proctor.core.task_spec import TaskSpec
from proctor.core.yaml_lines import LineDict, LineList

# fields only some kinds read: given in a task of another kind they would do nothing, without a word
_KINDS_READING = {
    "choices": ("multiple_choice",),
    "choice_temperature": ("multiple_choice",),
    "generation": ("generate",),
    "extraction": ("generate",),
    "text": ("perplexity",),
    "perplexity": ("perplexity",),
    "prompt": ("multiple_choice", "generate"),
    "target": ("multiple_choice", "generate"),
}


def _line(entry: Mapping[str, Any], key: str, index: int | None = None) -> int | None:
    if not isinstance(entry, LineDict):
        return None
    value = entry.get(key)
    if index is not None and isinstance(value, LineList) and index < len(value.item_lines):
        return value.item_lines[index]
    return entry.line_of(key)


def check_task(entry: Mapping[str, Any], merged: Mapping[str, Any], spec: TaskSpec, path: Path) -> None:
    """``entry``: the task's own keys (a ``defaults:`` block may set keys for tasks of several kinds);
    ``merged``: with the defaults, as validated into ``spec``."""

    def fail(message: str, field: str, key: str, index: int | None = None) -> TaskDefinitionError:
        where = entry if key in entry else {}
        return TaskDefinitionError(message, file=path, line=_line(where, key, index), field=field)

    if spec.handled_by is None:
        for key, kinds in _KINDS_READING.items():
            if key in entry and spec.kind not in kinds:
                readers = " and ".join(f"'{k}'" for k in kinds)
                raise fail(
                    f"a '{spec.kind}' task does not use '{key}' (only {readers} tasks do): it would do nothing; "
                    "remove it or check the task's 'kind'",
                    key,
                    key,
                )
    if not spec.data:
        raise fail("'data' names no source: give a path or a hub dataset", "data", "data")
    if spec.choices == [] and spec.kind == "multiple_choice":
        raise fail("'choices' lists no choice: give two or more templates, or one giving a list", "choices", "choices")
    if isinstance(spec.choices, list) and len(spec.choices) == 1 and spec.kind == "multiple_choice":
        raise fail(
            "'choices' lists one template: a multiple choice task needs two or more choices (or one template "
            "giving the row's list, without brackets)",
            "choices",
            "choices",
        )
    if merged.get("metrics") == []:
        raise fail(
            "the list of metrics is empty: leave 'metrics' out for the kind's default metrics", "metrics", "metrics"
        )
    for index, group in enumerate(spec.group):
        if not group.strip():
            raise fail(
                f"a group name is empty ({group!r}): name the group or leave 'group' out", "group", "group", index
            )
    # results are keyed by metric name (the second would silently replace the first), a group would count its
    # task twice, a breakdown would be reported twice
    for field, what, names in (
        ("metrics", "metric", [m.name for m in spec.metrics]),
        ("group", "group", list(spec.group)),
        ("breakdown", "field", list(spec.breakdown)),
    ):
        repeat = first_repeat(names)
        if repeat is not None:
            raise fail(f"the {what} '{repeat[1]}' is listed twice", field, field, repeat[0])
    _check_generation(spec, fail)


def _check_generation(spec: TaskSpec, fail: Any) -> None:
    g = spec.generation
    if spec.kind != "generate" or spec.handled_by is not None:
        return
    if g.min_tokens > g.max_tokens:
        raise fail(
            f"min_tokens ({g.min_tokens}) is more than max_tokens ({g.max_tokens}): generation stops at max_tokens, "
            "so min_tokens could never be reached",
            "generation.min_tokens",
            "generation",
        )
    if spec.max_length is not None and g.max_tokens >= spec.max_length:
        raise fail(
            f"asks for up to {g.max_tokens} new tokens, but the task's max_length is {spec.max_length} tokens "
            "(prompt and generation together): no room is left for the prompt",
            "generation.max_tokens",
            "generation",
        )
