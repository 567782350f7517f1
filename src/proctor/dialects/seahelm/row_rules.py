"""The SEA-HELM dialect's audit rules over its rows as its dataloader reads them: rows in another language than
the task's, and ids that repeat.

SEA-HELM reads one language's rows for each task (``languages: {id: ...}``); each row says its own language in
``metadata.language``. A row whose language is another (English rows copied under ``/id``, English examples shown
to the Indonesian task) is scored as that task's: the number is not the language's. SEA-HELM joins a run's
inferences to its rows by ``id``; two rows of one id are one in that join (and in proctor's sample ids, which end
with it).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from proctor.core.audit import Hit
from proctor.dialects.seahelm.audit_rules import _base_examples, at_examples
from proctor.dialects.seahelm.rows import as_rows

if TYPE_CHECKING:
    from proctor.audit.subject import AuditSubject

_SUBTAGS = re.compile(r"[-_\s]+")


def _row_language(row: object) -> str | None:
    metadata = row.get("metadata") if isinstance(row, dict) else None
    language = metadata.get("language") if isinstance(metadata, dict) else None
    return language if isinstance(language, str) and language.strip() else None


def other_language(code: str, task: str) -> bool:
    """Whether a row's language code names another language than the task's: its first subtag is a code of the
    task's form (two letters for 'id') and no subtag is the task's ('en-id', a pair a translation row names, is
    the task's too). A name ('Indonesian') or a code of another form ('ind') is not compared."""
    parts = _SUBTAGS.split(code.strip().casefold())
    task = task.strip().casefold()
    if not task.isalpha() or task in parts:
        return False
    return parts[0].isalpha() and parts[0].isascii() and len(parts[0]) == len(task)


def _others(rows: Sequence[object], task: str) -> list[tuple[int, str]]:
    return [(i, code) for i, row in enumerate(rows) if (code := _row_language(row)) and other_language(code, task)]


def _shown(found: list[tuple[int, str]]) -> str:
    counts = Counter(code for _, code in found)
    return ", ".join(f"{code!r} ({n})" for code, n in counts.most_common(3))


def rows_in_another_language(subject: AuditSubject) -> Iterator[Hit]:
    handler = subject.handler
    task = getattr(handler, "lang", None)
    if not isinstance(task, str):
        return
    rows = as_rows(getattr(getattr(handler, "dataloader", None), "dataset", None))
    found = _others(rows, task)
    if found and len(rows) == len(subject.samples):
        at = found[0][0]
        yield subject.at_row(
            subject.samples[at].sample,
            f"{len(found)} of the {len(rows)} rows evaluated as language '{task}' say they are in another "
            f"(metadata.language: {_shown(found)}): they are scored as '{task}' rows, so the number is not that "
            "language's; read the language's own rows",
            "metadata.language",
        )
    read = _base_examples(handler)
    if read is None:
        return
    examples = read.rows[: read.shown]
    found = _others(examples, task)
    if found:
        yield at_examples(
            subject,
            f"{len(found)} of the {len(examples)} few-shot examples SEA-HELM shows a base model for language '{task}' "
            f"(the 'examples' split of {read.base.specific_task_config.get('example_filepath')}) say they are in "
            f"another (metadata.language: {_shown(found)}): the examples teach another language's texts",
        )


def repeated_ids(subject: AuditSubject) -> Iterator[Hit]:
    """Rows whose ``id`` an earlier row has: SEA-HELM joins inferences to rows by id, so the two are one there."""
    ids = subject.columns.ids
    if len(set(ids)) == len(ids):
        return  # (told in C: nearly every task)
    first: dict[str, int] = {}
    repeats = []
    for i, sample_id in enumerate(ids):
        earlier = first.setdefault(sample_id, i)
        if earlier != i:
            repeats.append((i, earlier))
    i, earlier = repeats[0]
    row = subject.samples[i].sample
    yield subject.at_row(
        row,
        f"the row's id ({row.id.rsplit('/', 1)[-1]!r}) is the id of row {subject.samples[earlier].sample.row} too "
        f"({len(repeats)} rows repeat an earlier row's id): SEA-HELM joins a run's answers to its rows by id, so "
        "those rows' answers are taken for one another's; give each row its own id",
        "id",
    )


def example_answers(handler: Any) -> Any:
    """The labels of the few-shot examples SEA-HELM shows a base model (its examples split's first rows), a
    ``ShownAnswers`` for ``fewshot.constant-label``; None where a base model is shown none."""
    from proctor.audit.shown_answers import ShownAnswers

    read = _base_examples(handler)
    if read is None:
        return None
    examples = read.rows[: read.shown]
    labels = tuple(row.get("label") if isinstance(row, dict) else None for row in examples)
    path = read.base.specific_task_config.get("example_filepath")
    return ShownAnswers(labels, f"the 'examples' split of {path} a base model is shown", "example_filepath", read.shown)


def examples_outnumber_rows(subject: AuditSubject) -> Iterator[Hit]:
    """The examples split holds more rows than the split evaluated (30 examples, 10 rows): SEA-HELM's examples are
    a handful of rows and its test split the benchmark, so the two files are likely swapped: the benchmark's rows
    are shown as examples and a few others are scored."""
    if getattr(subject.handler, "row_limit", None) is not None:
        return  # a limit cuts the rows read: their count says nothing of the split's
    read = _base_examples(subject.handler)
    if read is None:
        return
    evaluated = as_rows(getattr(read.loader, "dataset", None))
    if not evaluated or len(read.rows) <= max(len(evaluated), read.shown):
        return
    yield at_examples(
        subject,
        f"the examples split ({read.base.specific_task_config.get('example_filepath')}) holds {len(read.rows)} rows, "
        f"more than the {len(evaluated)} rows evaluated: the two files swapped? The number would be those "
        f"{len(evaluated)} rows' and a base model is shown the benchmark's rows as examples",
    )
