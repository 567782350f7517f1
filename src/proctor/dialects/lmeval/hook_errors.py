"""Errors while lm-eval builds, prompts or scores a task, said in the task file's terms.

An exception from a ``!function`` hook names the hook's file, line and function, and the task file's key
that points at it (``process_docs``, ``doc_to_text``, a metric, a filter); one that lm-eval raises itself
while checking the first document (a ``doc_to_target`` index past the choices, an empty choice) says so
instead of quoting lm-eval's internals.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Callable, Iterator

from proctor.core.errors import TaskDefinitionError
from proctor.core.user_errors import describe, user_origin
from proctor.dialects.lmeval.task_config import TaskConfig


def _callables(config: TaskConfig) -> Iterator[tuple[str, Callable[..., object]]]:
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


def _hook_key(config: TaskConfig, exc: BaseException) -> tuple[str, str] | None:
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
        choice = names.get("choice")
        if isinstance(exc, TypeError) and "choice" in names and not isinstance(choice, str):
            return (
                f"doc_to_choice gave {type(choice).__name__} {choice!r:.40} for the first document, among "
                f"{choices!r:.120}; every choice is a text"
            )
    return None


def _fewshot_draw(exc: BaseException, config: TaskConfig) -> str | None:
    """lm-eval's sampler could not draw ``num_fewshot`` examples from its pool (``random.sample`` larger than the
    population, or first_n's assertion): how many were asked for, and how many the pool holds."""
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        names = frame.f_locals
        if not frame.f_code.co_filename.endswith("samplers.py") or frame.f_code.co_name != "sample":
            continue
        asked, sampler = names.get("n"), names.get("self")
        if not isinstance(asked, int) or sampler is None:
            continue
        try:
            pool = len(sampler.fewshot_docs())
        except Exception:
            pool = len(getattr(sampler, "df", None) or [])
        split = (
            config.get("fewshot_split")
            or (
                (config.get("fewshot_config") or {}).get("split")
                if isinstance(config.get("fewshot_config"), dict)
                else None
            )
            or config.get("training_split")
            or config.get("validation_split")
            or config.get("test_split")
        )
        where = f" (split '{split}')" if split else ""
        own = names.get("eval_doc") is not None
        spare = " and the evaluated document itself, when drawn, is left out" if own else ""
        return (
            f"num_fewshot asks for {asked} few-shot examples, but the few-shot pool{where} holds {pool} "
            f"document(s){spare}; lower num_fewshot (or --num-fewshot) or give a larger few-shot split"
        )
    return None


def _document(exc: BaseException) -> int | None:
    """The document lm-eval was building requests for (its ``doc_id``), when the exception came from one."""
    found = None
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_name == "build_all_requests" and isinstance(frame.f_locals.get("doc_id"), int):
            found = frame.f_locals["doc_id"]
    return found


def task_error(
    exc: BaseException,
    stage: str,
    name: str,
    config: TaskConfig,
    source: Path | None,
    catalogue: Path | None = None,
) -> TaskDefinitionError:
    """``exc``, raised while lm-eval ``stage`` (e.g. "builds") task ``name``, as a clear error."""
    shots = _fewshot_draw(exc, config)
    if shots is not None:
        return TaskDefinitionError(f"task '{name}': {shots}", file=source, field="num_fewshot")
    document = _document(exc)
    row = document + 1 if document is not None else None
    at = f", document {document}" if document is not None else ""
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
        return TaskDefinitionError(f"task '{name}': {first}", file=source, row=1, field=field)
    tried = _first_choices(exc)
    if tried is not None:  # lm-eval's own check of its first document, which logs and then fails on the shape
        return TaskDefinitionError(
            f"task '{name}', document 0: doc_to_choice ({config.get('doc_to_choice')!r:.60}) gave "
            f"{type(tried).__name__} {tried!r:.100}, not a list of choices"
            + (
                " (for rows in the hub's shape, give the list of texts: choices.text)"
                if isinstance(tried, dict)
                else ""
            ),
            file=source,
            row=1,
            field="doc_to_choice",
        )
    reading = [
        frame.f_code.co_name
        for frame, _ in traceback.walk_tb(exc.__traceback__)
        if frame.f_code.co_name.startswith("doc_to_")
    ]
    if reading:  # lm-eval could not apply a doc_to_* key to a document (a number where a field or template belongs)
        key = reading[-1]
        return TaskDefinitionError(
            f"task '{name}'{at}: lm-eval cannot apply {key} ({config.get(key)!r:.80}) to the documents: "
            f"{describe(exc)}; it names a field, holds a Jinja template or a list",
            file=source,
            row=row,
            field=key,
        )
    return TaskDefinitionError(
        f"lm-eval {stage} task '{name}' and failed: {describe(exc)}", file=source, field=hook[0] if hook else "task"
    )


def _first_choices(exc: BaseException) -> object | None:
    """What ``doc_to_choice`` gave lm-eval's check of the first document (``ConfigurableTask.__init__``'s
    ``test_choice``) where it is not a list, the shape lm-eval then fails on; None otherwise."""
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_name == "__init__" and frame.f_code.co_filename.replace("\\", "/").endswith(
            "lm_eval/api/task.py"
        ):
            choices = frame.f_locals.get("test_choice")
            if choices is not None and not isinstance(choices, list):
                return choices
    return None
