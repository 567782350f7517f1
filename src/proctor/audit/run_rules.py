"""Rules over how a run groups tasks: one task twice in a group under two names, members that share rows, a
small member beside a large one, look-alike group names (a run's limits: ``limit_rules.py``).

The other tasks of a command are not part of the audit subject: ``engine/prepare`` asks ``duplicate_notes`` and
``size_notes`` whether an earlier task of the task's group asks the same rows or many more, and hands the hits over
with what the data reader noticed (``subject.source_hits``), which these rules yield.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from proctor.audit import group_metrics, group_names
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit
from proctor.core.task import Task
from proctor.prompts.builder import PreparedSample

TASK_DUPLICATE = "task.duplicate"
GROUP_OVERLAP = "group.overlap"


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
    # task name -> its groups whose members do not all compute one metric (group.metric-not-shared)
    unshared: dict[str, list[Hit]] = field(default_factory=dict)

    @classmethod
    def of(cls, tasks: Sequence[Task], default_metrics: Mapping[str, Sequence[str]] | None = None) -> GroupMembers:
        """A store for the command's ``tasks``, knowing each group's members' data and metrics (``default_metrics``:
        a kind's, for a task that names none) before any is prepared."""
        seen = cls(
            odd_groups=group_names.odd_spellings(tasks),
            unshared=group_metrics.unshared_metrics(tasks, default_metrics or {}),
        )
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
    notes.update(group_metrics.metric_notes(task, seen.unshared))
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


def unshared_metric(subject: AuditSubject) -> Iterator[Hit]:
    yield from subject.source_hits.get(group_metrics.RULE, ())


RULES = (
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
    AuditRule(
        group_metrics.RULE,
        "warning",
        "A group's members do not all compute one metric: the group's number for it is dropped (proctor) or a "
        "subset's (lm-eval's aggregate_metric_list).",
        unshared_metric,
    ),
)
