"""Errors while lm-eval builds, prompts or scores a task, said in the task file's terms.

An exception from a ``!function`` hook names the hook's file, line and function, and the task file's key
that points at it (``process_docs``, ``doc_to_text``, a metric, a filter); one that lm-eval raises itself
while checking the first document (a ``doc_to_target`` index past the choices, an empty choice) says so
instead of quoting lm-eval's internals.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any, Iterator

from proctor.core.errors import TaskDefinitionError
from proctor.core.user_errors import describe, user_origin


def _callables(config: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(key, callable) for every hook in a task config: top-level keys, metric_list and filter_list entries."""
    for key, value in config.items():
        if callable(value):
            yield key, value
    for index, item in enumerate(config.get("metric_list") or []):
        for name, value in item.items() if isinstance(item, dict) else ():
            if callable(value):
                yield f"metric_list[{index}].{name}", value
    for index, item in enumerate(config.get("filter_list") or []):
        for step, entry in enumerate(item.get("filter") or [] if isinstance(item, dict) else []):
            for name, value in entry.items() if isinstance(entry, dict) else ():
                if callable(value):
                    yield f"filter_list[{index}].filter[{step}].{name}", value


def _hook_key(config: dict[str, Any], exc: BaseException) -> tuple[str, str] | None:
    """The config key whose hook is on the traceback (outermost first), and how the hook is named."""
    codes = [frame.f_code for frame, _ in traceback.walk_tb(exc.__traceback__)]
    for code in codes:
        for key, value in _callables(config):
            if getattr(getattr(value, "__func__", value), "__code__", None) is code:
                return key, getattr(value, "__qualname__", getattr(value, "__name__", "?"))
    return None


def _first_document(exc: BaseException) -> str | None:
    """What lm-eval's check of the task's first document tripped over, from that frame's variables."""
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        names = frame.f_locals
        if "test_doc" not in names:
            continue
        target, choices = names.get("test_target"), names.get("test_choice")
        if isinstance(exc, IndexError) and isinstance(target, int) and isinstance(choices, list):
            return (
                f"doc_to_target gave {target} for the first document, which is out of range for its "
                f"{len(choices)} choice(s) {choices!r:.120}"
            )
        if isinstance(exc, IndexError) and names.get("choice") == "":
            return f"doc_to_choice gave an empty choice for the first document: {choices!r:.120}"
    return None


def task_error(
    exc: BaseException,
    stage: str,
    name: str,
    config: dict[str, Any],
    source: Path | None,
    catalogue: Path | None = None,
) -> TaskDefinitionError:
    """``exc``, raised while lm-eval ``stage`` (e.g. "builds") task ``name``, as a clear error."""
    roots = [p for p in (source.parent if source else None, catalogue) if p is not None]
    origin = user_origin(exc, roots)
    hook = _hook_key(config, exc)
    if origin is not None:
        via = f"; the task's '{hook[0]}' hook ({hook[1]}) in {source}" if hook else f" (task '{name}' in {source})"
        return TaskDefinitionError(
            f"{describe(exc)} (raised in {origin.function} while lm-eval {stage} task '{name}'{via})",
            file=origin.file,
            line=origin.line,
            field=hook[0] if hook else None,
        )
    first = _first_document(exc)
    if first is not None:
        field = "doc_to_choice" if "doc_to_choice" in first.split(" ", 1)[0] else "doc_to_target"
        return TaskDefinitionError(f"task '{name}': {first}", file=source, field=field)
    reading = [
        frame.f_code.co_name
        for frame, _ in traceback.walk_tb(exc.__traceback__)
        if frame.f_code.co_name.startswith("doc_to_")
    ]
    if reading:  # lm-eval could not apply a doc_to_* key to a document (a number where a field or template belongs)
        key = reading[-1]
        return TaskDefinitionError(
            f"task '{name}': lm-eval cannot apply {key} ({config.get(key)!r:.80}) to the documents: "
            f"{describe(exc)}; it names a field, holds a Jinja template or a list",
            file=source,
            field=key,
        )
    return TaskDefinitionError(
        f"lm-eval {stage} task '{name}' and failed: {describe(exc)}", file=source, field=hook[0] if hook else "task"
    )
