"""Checks of one lm-eval document's choices and target, made while proctor reads the task's samples, before
any model runs: what lm-eval would crash on while scoring, or score silently wrong. Each error names the
task's file, the document (as a 1-based row) and the key (``doc_to_choice`` / ``doc_to_target``)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from proctor.core.errors import TaskDefinitionError

if TYPE_CHECKING:
    from lm_eval.api.instance import Instance
    from lm_eval.api.task import ConfigurableTask


def check_choices(task: ConfigurableTask, doc_id: int, doc: object, name: str, source: Path | None) -> None:
    """A ``multiple_choice`` document's choices and target, before any model runs: lm-eval would crash while
    scoring it (a choice that is not text, no choices, a target that is neither an index nor a choice) or
    score it silently (an empty choice is only the delimiter, which a model nearly always prefers; a text
    target that is none of the choices is wrong whatever the model says)."""

    def fail(message: str, field: str) -> TaskDefinitionError:
        return TaskDefinitionError(
            f"task '{name}', document {doc_id}: {message}",
            file=source,
            row=doc_id + 1,
            field=field,
        )

    given = task.doc_to_choice(doc)
    if isinstance(given, Mapping):
        keys = ", ".join(repr(k) for k in list(given)[:4])
        raise fail(
            f"doc_to_choice gave a mapping (keys {keys}), not a list of choices: lm-eval would read its keys as "
            "the choices; give the list of texts it holds (for ARC's rows in the hub's shape: choices.text)",
            "doc_to_choice",
        )
    try:  # lm-eval iterates whatever it is given (a text's letters, a mapping's keys)
        choices = list(given)
    except TypeError:
        choices = []
    if not choices:
        raise fail(f"doc_to_choice gave {given!r:.120}, not a list of one or more choices", "doc_to_choice")
    for index, choice in enumerate(choices):
        if not isinstance(choice, str):
            raise fail(
                f"doc_to_choice gave {type(choice).__name__} {choice!r:.40} (number {index}) among "
                f"{choices!r:.120}; every choice is a text",
                "doc_to_choice",
            )
        if not choice.strip():
            raise fail(f"doc_to_choice gave an empty choice (number {index}) among {choices!r:.120}", "doc_to_choice")
    if task.multiple_input:  # the gold is the document's doc_to_text (one context per choice)
        return
    target = task.doc_to_target(doc)
    golds = target if isinstance(target, list) else [target]
    for gold in golds:
        if (
            isinstance(gold, str)
            and isinstance(given, (list, tuple))
            and gold not in choices
            and not isinstance(target, list)
        ):
            raise fail(
                f"doc_to_target gave {gold!r:.60}, which is none of its choices {choices!r:.120}", "doc_to_target"
            )
        if not isinstance(gold, (int, str)):
            raise fail(
                f"doc_to_target gave {type(gold).__name__} {gold!r:.60}; for multiple_choice it is the index of "
                f"the right choice (a whole number) or its text",
                "doc_to_target",
            )
        if isinstance(target, list) and (isinstance(gold, str) or not 0 <= gold < len(choices)):
            raise fail(
                f"doc_to_target gave {gold} among {target!r:.60}, out of range for its {len(choices)} choices "
                f"{choices!r:.120}",
                "doc_to_target",
            )


def diagnose_documents(
    task: ConfigurableTask,
    limit: int | None,
    name: str,
    source: Path | None,
    templates: Callable[[], contextlib.AbstractContextManager[None]],
) -> None:
    """Where lm-eval failed building the requests, check each document's choices as the handler's samples would
    (``templates``: the task's templates compiled, as it reads them), so that a choice list of the wrong shape (a
    mapping) is named at its document and field, not as lm-eval's ``KeyError``. Returns where every document passes
    (the failure is elsewhere)."""
    if task.config.doc_to_choice is None or task.OUTPUT_TYPE != "multiple_choice":
        return
    try:
        documents = list(task.doc_iterator(limit=limit))
    except Exception:  # noqa: BLE001 - the documents themselves do not read: lm-eval's own error is named
        return
    with templates():
        for doc_id, doc in documents:
            try:
                check_choices(task, doc_id, doc, name, source)
            except TaskDefinitionError:
                raise
            except Exception:  # noqa: BLE001 - not this check's to explain
                return


def check_target_in_range(target: object, choices: list[str], doc_id: int, name: str, source: Path | None) -> None:
    """An index target out of range for the document's choices: lm-eval would score this document as wrong
    whatever the model says (a silent number)."""
    if choices and isinstance(target, int) and not isinstance(target, bool) and not 0 <= target < len(choices):
        raise TaskDefinitionError(
            f"task '{name}', document {doc_id}: doc_to_target gave {target}, out of range for "
            f"its {len(choices)} choices {choices!r:.120}",
            file=source,
            row=doc_id + 1,
            field="doc_to_target",
        )


def check_request_texts(
    task: ConfigurableTask, doc_id: int, instances: list[Instance], name: str, source: Path | None
) -> None:
    """A ``loglikelihood`` / ``loglikelihood_rolling`` document's scored text must be a text: lm-eval hands
    ``doc_to_target``'s value to the model as is (an index such as 1 makes the model's tokeniser fail, after it
    loaded). Named here, with the key that gave it."""
    kind = task.OUTPUT_TYPE
    if kind not in ("loglikelihood", "loglikelihood_rolling"):
        return
    position = 1 if kind == "loglikelihood" else 0
    for instance in instances:
        arguments = instance.arguments if isinstance(instance.arguments, tuple) else (instance.arguments,)
        value = arguments[position] if len(arguments) > position else None
        if not isinstance(value, str):
            raise TaskDefinitionError(
                f"task '{name}', document {doc_id}: doc_to_target gave {type(value).__name__} {value!r:.60}; "
                f"a {kind} task scores it as text (the {'continuation' if position else 'document'}), "
                "so it must be a text",
                file=source,
                row=doc_id + 1,
                field="doc_to_target",
            )
