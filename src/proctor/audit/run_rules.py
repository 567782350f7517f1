"""Rules over how a run cuts and groups a task's rows: a ``limit`` larger than the data, a fraction that leaves
a row or two, the first rows of a file sorted by its answer, one task twice in a group under two names.

The run's ``--limit`` and the other tasks of a command are not part of the audit subject: ``engine/prepare``
asks ``limit_notes`` what it makes of the limit it was given, and ``duplicate_notes`` whether an earlier task
of the task's group asks the same rows, and hands the hits over with what the data reader noticed
(``subject.source_hits``), which these rules yield; a task file's own ``limit`` they read from the spec.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from proctor.audit import group_names
from proctor.audit.fallback import first_found
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit
from proctor.core.task import Task
from proctor.prompts.builder import PreparedSample

TINY_KEPT = 3  # a fraction of the rows that leaves fewer: a number with no standard error to speak of
LIMIT_EXCEEDS = "data.limit-exceeds"
LIMIT_TINY = "data.limit-tiny"
TASK_DUPLICATE = "task.duplicate"
GROUP_OVERLAP = "group.overlap"


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
    if isinstance(limit, float) and kept < TINY_KEPT < total:
        return {
            LIMIT_TINY: [
                Hit(
                    f"--limit {limit:g} keeps {kept} of the {total} rows: the task's number is {kept} row(s)' score, "
                    "with no standard error worth the name (give a whole number of rows, or a larger fraction)",
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


def _fingerprint(samples: Sequence[PreparedSample]) -> str:
    """What a task asks and counts as right, row by row (its name and file aside)."""
    digest = hashlib.sha256()
    for sample in samples:
        own = sample.text or ""
        parts = (sample.prompt.plain_text, own, "\x00".join(sample.choices), repr(sample.gold), *sample.references)
        digest.update("\x01".join(parts).encode("utf-8", "surrogatepass") + b"\x02")
    return digest.hexdigest()


def _cheap_key(samples: Sequence[PreparedSample]) -> str:
    """The row count and the first, middle and last rows: tasks that differ almost always differ here, so the
    whole fingerprint is computed only for tasks that share it."""
    picks = [samples[0], samples[len(samples) // 2], samples[-1]]
    return f"{len(samples)}:{_fingerprint(picks)}"


@dataclass
class GroupMembers:
    """What the tasks prepared so far in one command ask (``engine/prepare`` keeps one for all the tasks it
    prepares): a group's whole tasks by a cheap key (``task.duplicate``) and its rows (``group.overlap``), and
    every task's rows with their answers (``samples.conflict`` across tasks)."""

    tasks: dict[tuple[str, str], tuple[str, Sequence[PreparedSample]]] = field(default_factory=dict)
    rows: dict[str, dict[bytes, str]] = field(default_factory=dict)  # group -> a row's digest -> its first task
    # group -> a source row's key (its file and row, what it scores) -> its first task (group.overlap)
    sources: dict[str, dict[int, str]] = field(default_factory=dict)
    # group -> the data its members read (each member's files), known before any is prepared (``of``)
    data_of: dict[str, set[str]] = field(default_factory=dict)
    odd_groups: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # group.look-alike (group_names)
    # task name -> (its dialect and folder, what its rows ask): samples.conflict across tasks (conflict_rules)
    asked: dict[str, tuple[object, Any]] = field(default_factory=dict)
    # group -> (task name, rows evaluated, file, line) of its equally weighted members so far (group.tiny-member)
    sizes: dict[str, list[tuple[str, int, str | None, int | None]]] = field(default_factory=dict)

    @classmethod
    def of(cls, tasks: Sequence[Task]) -> GroupMembers:
        """A store for the command's ``tasks``, knowing each group's members' data before any is prepared."""
        seen = cls(odd_groups=group_names.odd_spellings(tasks))
        for task in tasks:
            for group in task.spec.group:
                seen.data_of.setdefault(group, set()).add(_data_of(task))
        return seen


def _data_of(task: Task) -> str:
    """The data a task reads (its files, from its folder), as one text."""
    folder = str(Path(task.file).parent) if task.file else ""
    return "\x00".join(sorted(f"{folder}/{d.path}|{d.hub}|{d.subset}|{d.split}" for d in task.spec.data))


def _row_digest(sample: PreparedSample) -> bytes:
    parts = (sample.prompt.plain_text, sample.text or "", "\x00".join(sample.choices), repr(sample.gold))
    text = "\x01".join((*parts, *sample.references))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _source_key(sample: PreparedSample) -> int | None:
    """A row as its source gave it (its file and row) with what it scores; None for a row of no file."""
    row = sample.sample
    if not row.file or row.row is None:
        return None
    return hash((row.file, row.row, sample.choices, sample.gold, sample.references))


def _source_overlap(
    task: Task, samples: Sequence[PreparedSample], group: str, seen: GroupMembers
) -> tuple[list[str], int] | None:
    """The earlier members of ``group`` that evaluate the same source rows as ``task`` (each row's first), and the
    first such row: members that read one file with other few-shot examples or another prompt (0-shot and 5-shot).
    Only in a group whose members read other data too (a suite): a group of one file's prompt variants averages
    those variants, which is its purpose."""
    if len(seen.data_of.get(group, ())) < 2:
        return None
    keys = [_source_key(s) for s in samples]
    owners = seen.sources.setdefault(group, {})
    shared = [owners[k] for k in keys if k is not None and owners.get(k, task.spec.name) != task.spec.name]
    for key in keys:
        if key is not None:
            owners.setdefault(key, task.spec.name)
    if not shared:
        return None
    first = next(i for i, k in enumerate(keys) if k is not None and owners[k] == shared[0])
    return shared, first


def duplicate_notes(task: Task, samples: Sequence[PreparedSample], seen: GroupMembers) -> dict[str, list[Hit]]:
    """A task of a group whose rows ask and score exactly what an earlier task of that group does, or some of
    them (``seen``: the tasks prepared so far in this command): the group's mean counts them twice."""
    if not task.spec.group or not samples:
        return {}
    key = _cheap_key(samples)
    file, line = (str(task.file) if task.file else None), task.lines.get("name", task.line)
    hits, overlaps = [], []
    digests: list[bytes] | None = None
    for group in task.spec.group:
        earlier = seen.tasks.setdefault((group, key), (task.spec.name, samples))
        name, rows = earlier
        if name != task.spec.name and _fingerprint(rows) == _fingerprint(samples):
            hits.append(
                Hit(
                    f"the task's {len(samples)} rows ask and score exactly what task '{name}' of the same group "
                    f"'{group}' does: the group's mean counts that task twice (the same task under another name?)",
                    file=file,
                    line=line,
                    field="name",
                )
            )
            continue
        digests = digests or [_row_digest(s) for s in samples]
        owners = seen.rows.setdefault(group, {})
        shared = [owners[d] for d in digests if owners.get(d, task.spec.name) != task.spec.name]
        for digest in digests:
            owners.setdefault(digest, task.spec.name)
        same_rows = _source_overlap(task, samples, group, seen)  # (kept for later members even where told below)
        if shared:
            first = samples[next(i for i, d in enumerate(digests) if owners[d] == shared[0])]
            overlaps.append(
                Hit(
                    f"{len(shared)} of the task's {len(samples)} rows ask and score exactly what rows of task "
                    f"'{shared[0]}' of the same group '{group}' do (sample {first.sample.id!r}): the group's mean "
                    "counts those rows twice (members whose filters or slices overlap?)",
                    file=file,
                    line=line,
                    field="name",
                    sample=first.sample.id,
                )
            )
        elif same_rows is not None:
            names, at = same_rows
            first = samples[at]
            overlaps.append(
                Hit(
                    f"{len(names)} of the task's {len(samples)} rows are rows task '{names[0]}' of the same group "
                    f"'{group}' evaluates too (the same data rows and answers, shown with other few-shot examples or "
                    f"another prompt; sample {first.sample.id!r}), while the group's other members read other data: "
                    "the group's mean counts those rows twice; keep one of the two in the group",
                    file=file,
                    line=line,
                    field="name",
                    sample=first.sample.id,
                )
            )
    notes = {TASK_DUPLICATE: hits} if hits else {}
    notes.update(group_names.look_alike_notes(task, seen.odd_groups))
    return {**notes, GROUP_OVERLAP: overlaps} if overlaps else notes


GROUP_TINY = "group.tiny-member"
SMALL_MEMBER = 20  # rows: a member's mean moves by 0.05 or more with one answer
MEMBER_RATIO = 5  # times as many rows in another member: each of the small one's rows weighs five times as much


def size_notes(task: Task, samples: Sequence[PreparedSample], seen: GroupMembers) -> dict[str, list[Hit]]:
    """A member of an equally weighted group with few rows (under 20) beside a member with five times as many or
    more (a member's own ``limit: 6`` beside a 40-row one): each of its rows weighs five times or more as much in
    the group's mean, whose standard error is then mostly the small member's."""
    spec = task.spec
    if spec.handler is not None or spec.task_class is not None:
        return {}  # a dialect's groups weigh their own way (lm-eval's: group.tiny-member reads them)
    file = str(task.file) if task.file else None
    line = task.lines.get("limit", task.lines.get("name", task.line))
    hits = []
    for group in (g for g in spec.group if g not in spec.size_weighted_groups):
        members = seen.sizes.setdefault(group, [])
        n = len(samples)
        for name, rows, other_file, other_line in members:
            small, large = (
                ((spec.name, n, file, line), (name, rows))
                if n <= rows
                else ((name, rows, other_file, other_line), (spec.name, n))
            )
            if small[1] < SMALL_MEMBER and large[1] >= MEMBER_RATIO * max(small[1], 1):
                hits.append(
                    Hit(
                        f"task '{small[0]}' evaluates {small[1]} rows and task '{large[0]}' {large[1]}, and group "
                        f"'{group}' averages its members with equal weight: each row of '{small[0]}' weighs "
                        f"{large[1] / max(small[1], 1):.1f} times as much as one of '{large[0]}', and the group's "
                        "number moves with a few answers (weigh the group by size, or give the member more rows)",
                        file=small[2],
                        line=small[3],
                        field="group",
                    )
                )
                break
        members.append((spec.name, n, file, line))
    return {GROUP_TINY: hits[:1]} if hits else {}


def duplicate_task(subject: AuditSubject) -> Iterator[Hit]:
    yield from subject.source_hits.get(TASK_DUPLICATE, ())


def overlapping_task(subject: AuditSubject) -> Iterator[Hit]:
    yield from subject.source_hits.get(GROUP_OVERLAP, ())


def look_alike_group(subject: AuditSubject) -> Iterator[Hit]:
    yield from subject.source_hits.get(group_names.RULE, ())


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
        "data.limit-biased",
        "warning",
        "A limit keeps the first rows of data sorted by its answer field (some answers are never asked), of the "
        "first files only of several the data reads, or of one part only (one subject of a file ordered by subject), "
        "or of the first values of any field the data is ordered by (level 1 before 2).",
        first_found(limit_on_sorted_answers, limit_on_some_files, limit_on_one_part),
    ),
    AuditRule(
        TASK_DUPLICATE,
        "warning",
        "Two tasks of one group ask and score the same rows under different names: the group's mean counts it twice.",
        duplicate_task,
    ),
    AuditRule(
        GROUP_OVERLAP,
        "warning",
        "Two tasks of one group share some rows (the same prompt, choices and answer): the group's mean counts those "
        "rows twice.",
        overlapping_task,
    ),
    AuditRule(
        group_names.RULE,
        "warning",
        "Two groups' names differ only in case, spacing or punctuation ('science', 'Science'): each has its own "
        "mean, which leaves the other's members out.",
        look_alike_group,
    ),
)
