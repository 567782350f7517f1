"""Rules over how a run cuts a task's rows: a ``limit`` larger than the data, a fraction that leaves a row or two,
the first rows of a file sorted by its answer, of one part, or of the first files of several.

The run's ``--limit`` is not part of the audit subject: ``engine/prepare`` asks ``limit_notes`` what it makes of
the limit it was given and hands the hits over (``subject.source_hits``), which these rules yield; a task file's own
``limit`` they read from the spec.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator, Sequence

from proctor.audit.fallback import first_found
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

TINY_KEPT = 3  # a fraction of the rows that leaves fewer: a number with no standard error to speak of
LIMIT_EXCEEDS = "data.limit-exceeds"
LIMIT_TINY = "data.limit-tiny"
LIMIT_NO_PARTS = "data.limit-no-parts"


def limit_notes(file: str | None, limit: int | float | None, total: int | None, kept: int) -> dict[str, list[Hit]]:
    """What the run's ``--limit`` does to a task of ``total`` rows (None: not known) that keeps ``kept``, by
    rule id."""
    if limit is None or isinstance(limit, bool) or total is None:
        return {}
    if isinstance(limit, int) and limit > total:
        return {
            LIMIT_EXCEEDS: [
                Hit(
                    f"--limit {limit} is more than the {total} rows the task has: it evaluates all {total}, not {limit}"
                    " (a smaller file than meant?)",
                    file=file,
                    field="--limit",
                )
            ]
        }
    if kept < TINY_KEPT < total:  # a fraction or a count: either way one or two rows' score
        advice = "give a whole number of rows, or a larger fraction" if isinstance(limit, float) else "a smoke test?"
        return {
            LIMIT_TINY: [
                Hit(
                    f"--limit {limit:g} keeps {kept} of the {total} rows: the task's number is {kept} row(s)' score, "
                    f"with no standard error worth the name ({advice})",
                    file=file,
                    field="--limit",
                )
            ]
        }
    return {}


def limit_exceeds(subject: AuditSubject) -> Iterator[Hit]:
    yield from subject.source_hits.get(LIMIT_EXCEEDS, ())
    limit, total = subject.spec.limit, len(subject.rows)
    if limit is not None and limit > total and not hasattr(subject.handler, "load_samples"):
        yield subject.at_line(
            "limit",
            f"limit is {limit}, more than the {total} rows the data has: the task evaluates all {total} (a smaller "
            "file than meant, or a filter that drops more?)",
            "limit",
        )


def limit_tiny(subject: AuditSubject) -> Iterator[Hit]:
    yield from subject.source_hits.get(LIMIT_TINY, ())


def no_parts_note(file: str | None, limit: int | float, why: str, kept: int) -> dict[str, list[Hit]]:
    """``--limit-per-part`` on a task it cannot cut part by part (``why``): the whole task was cut, as ``--limit``."""
    return {
        LIMIT_NO_PARTS: [
            Hit(
                f"--limit-per-part {limit:g} on a task without parts ({why}): its first {kept} rows were taken as a "
                f"whole, as --limit {limit:g} takes them, not {limit:g} of each part",
                file=file,
                field="--limit-per-part",
            )
        ]
    }


def limit_no_parts(subject: AuditSubject) -> Iterator[Hit]:
    yield from subject.source_hits.get(LIMIT_NO_PARTS, ())


# a target template that reads one field: "{{ label }}", "{{ answer | int }}"
_ONE_FIELD = re.compile(r"^\s*\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\|[^}]*)?\}\}\s*$")
SORTED_MIN_ROWS = 5  # fewer rows fall in order by chance too often to say the file is sorted


def _sortable(values: Sequence[object]) -> bool:
    kinds = {type(v) for v in values}
    return len(kinds) == 1 and kinds.pop() in (int, str, float)


def limit_on_sorted_answers(subject: AuditSubject) -> Iterator[Hit]:
    """The data is sorted by the field its answers come from, and the limit keeps its first rows: the evaluated
    rows hold some answers only (all 'A' first), so the number says how the model does on those."""
    if not subject.templated or len(subject.samples) >= len(subject.rows) or len(subject.rows) < SORTED_MIN_ROWS:
        return
    target = subject.spec.target
    match = _ONE_FIELD.match(target) if isinstance(target, str) else None
    if match is None:
        return
    key = match.group(1)
    values: list[Any] = [row.fields.get(key) for row in subject.rows]
    if not _sortable(values) or len(set(values)) < 2:
        return
    if any(a > b for a, b in zip(values, values[1:])) and any(a < b for a, b in zip(values, values[1:])):
        return  # neither ascending nor descending
    kept = set(values[: len(subject.samples)])
    missing = sorted(set(values) - kept, key=str)
    if missing:
        first = subject.samples[0].sample
        yield subject.at_row(
            first,
            f"the rows are sorted by '{key}', the field the answers come from, and the limit keeps the first "
            f"{len(subject.samples)} of {len(subject.rows)}: no evaluated row has the answer "
            f"{', '.join(map(repr, missing[:4]))}, so the number measures some answers only",
            key,
        )


# fields that say what part of a benchmark a row is from: a limit that keeps one of their values keeps one part
_PART_FIELDS = re.compile(r"^(subject|category|domain|topic|language|lang|task|source|subset|genre|type)$", re.I)
PART_MIN_VALUES = 2


GROUPED_MAX_VALUES = 20  # blocks of a field the file is ordered by: levels, difficulties, categories; not ids
GROUPED_LEFT_OUT = 0.2  # of the rows: the values the limit never reaches hold this share or more


def _grouped_fields(rows: Sequence[Any], skip: set[str]) -> Iterator[tuple[str, list[Any]]]:
    """(field, values) of each field the rows are ordered by: a few values (2 to 20), each in one block of two rows
    or more (level 1s, then 2s, then 3s; 'easy' before 'medium' before 'hard'), as a file sorted by it is."""
    for key in rows[0].fields:
        if key.startswith("_") or key in skip:
            continue
        values: list[Any] = []
        blocks: list[Any] = []
        for row in rows:
            value = row.fields.get(key)
            if not values or value != values[-1]:
                if len(blocks) >= GROUPED_MAX_VALUES or not isinstance(value, (str, int)) or isinstance(value, bool):
                    break
                blocks.append(value)
            values.append(value)
        else:
            if len(blocks) >= 2 and len(set(blocks)) == len(blocks) and all(values.count(b) >= 2 for b in blocks):
                yield key, values


def _only_part_message(key: str, evaluated: set[Any], every: set[Any], kept: int, total: int) -> str:
    (only,) = evaluated
    return (
        f"the limit keeps {kept} of {total} rows, and every one has {key} {only!r}, one of the data's "
        f"{len(every)} values of '{key}': the number is that part's only (a limit per part: --limit-per-part "
        f"with a breakdown by {key}, or shuffle the rows)"
    )


def limit_on_one_part(subject: AuditSubject) -> Iterator[Hit]:
    """The limit keeps the first rows of data ordered by its parts (one file of MMLU's subjects in turn): every
    evaluated row has one value of a breakdown field, or of a field such as 'subject', that the data has several
    of, so the number is that part's, under the whole task's name. Or the data is ordered by any field of a few
    values (level 1 before 2 before 3, 'easy' before 'hard') and the limit leaves the later ones out."""
    kept, rows = len(subject.samples), subject.rows
    if kept >= len(rows) or not kept or not rows:
        return
    first_fields = rows[0].fields
    candidates = list(dict.fromkeys([*subject.spec.breakdown, *(k for k in first_fields if _PART_FIELDS.match(k))]))
    for key in candidates:
        if key.startswith("_"):
            continue  # _file: limit_on_some_files speaks of files
        values = [row.fields.get(key) for row in rows]
        if not all(isinstance(v, (str, int)) for v in values):
            continue
        evaluated = {s.sample.fields.get(key) for s in subject.samples}
        every = set(values)
        if len(evaluated) == 1 and len(every) >= PART_MIN_VALUES:
            yield subject.at_row(
                subject.samples[0].sample, _only_part_message(key, evaluated, every, kept, len(rows)), key
            )
            return
    if len(rows) < SORTED_MIN_ROWS:
        return
    for key, values in _grouped_fields(rows, set(candidates)):
        evaluated = {s.sample.fields.get(key) for s in subject.samples}
        left_out = [v for v in dict.fromkeys(values) if v not in evaluated]
        rows_left = sum(1 for v in values if v not in evaluated)
        if left_out and rows_left >= GROUPED_LEFT_OUT * len(rows):
            shown = ", ".join(map(repr, left_out[:4]))
            yield subject.at_row(
                subject.samples[0].sample,
                f"the rows are ordered by '{key}' ({', '.join(map(repr, list(dict.fromkeys(values))[:5]))} in "
                f"turn), and the limit keeps the first {kept} of {len(rows)}: no evaluated row has {key} {shown} "
                f"({rows_left} rows), so the number is the first parts' only (a harder or easier part left out); "
                f"a limit per part (--limit-per-part with a breakdown by {key}) or shuffled rows keep every part",
                key,
            )
            return


def limit_on_some_files(subject: AuditSubject) -> Iterator[Hit]:
    """The data reads several files (a glob, a list of splits) and the limit keeps rows of the first ones only:
    the number covers those files' rows (one subject of many), and nothing says the others were left out."""
    if len(subject.samples) >= len(subject.rows):
        return
    files = list(dict.fromkeys(row.file for row in subject.rows if row.file))
    if len(files) < 2:
        return
    kept = {s.sample.file for s in subject.samples}
    missing = [f for f in files if f not in kept]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        names = ", ".join(Path(f).name for f in missing[:3]) + more
        message = (
            f"the limit keeps {len(subject.samples)} of {len(subject.rows)} rows, all from {len(kept)} of the "
            f"{len(files)} files the data reads: no row of {names} is evaluated, so the number covers the first "
            "files only (a limit per file: --limit-per-part with a breakdown by file, or shuffle the rows)"
        )
        if subject.spec.limit is not None and subject.spec.limit <= len(subject.samples):  # the task file's limit
            yield subject.at_line("limit", message, "limit")
        else:
            yield Hit(message, file=subject.file, field="--limit")


RULES = (
    AuditRule(
        LIMIT_EXCEEDS,
        "warning",
        "A limit (the task's or --limit) is larger than the data: fewer rows are evaluated than asked for.",
        limit_exceeds,
    ),
    AuditRule(
        LIMIT_TINY,
        "warning",
        "A fractional --limit leaves fewer than 3 rows: the number is one or two rows' score.",
        limit_tiny,
    ),
    AuditRule(
        LIMIT_NO_PARTS,
        "warning",
        "--limit-per-part on a task without parts (no breakdown field, or a class that reads its own rows): the task "
        "was cut as a whole, as --limit cuts it.",
        limit_no_parts,
    ),
    AuditRule(
        "data.limit-biased",
        "warning",
        "A limit keeps the first rows of data sorted by its answer field (some answers are never asked), of the "
        "first files only of several the data reads, or of one part only (one subject of a file ordered by subject), "
        "or of the first values of any field the data is ordered by (level 1 before 2).",
        first_found(limit_on_sorted_answers, limit_on_some_files, limit_on_one_part),
    ),
)
