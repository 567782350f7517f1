"""Rules over the rows as read: joins that misalign them, repeated items, breakdown parts that merge or split."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterator

from proctor.audit import conflict_rules, listed_rows
from proctor.audit.source_file_rules import training_split
from proctor.audit.subject import AuditSubject, near
from proctor.core.audit import AuditRule, Hit
from proctor.data.dataset_folders import SPLIT_RULE
from proctor.data.quote_span import RULE as QUOTE_RULE
from proctor.prompts.builder import PreparedSample

FILE_KEY = "_file"  # the reader's file label (its name without suffix); "_source" is its path below the glob


def join_alignment(subject: AuditSubject) -> Iterator[Hit]:
    """What the reader noticed while joining files (``data.sources``: a key column in another order)."""
    yield from subject.source_hits.get("data.join", ())


def open_quote(subject: AuditSubject) -> Iterator[Hit]:
    """What the CSV reader noticed: a field running over lines that read as rows (``data/quote_span.py``)."""
    yield from subject.source_hits.get(QUOTE_RULE, ())


def _answer(sample: PreparedSample) -> tuple[tuple[int, ...], tuple[str, ...]]:
    return (sample.gold, sample.references)


def duplicate_samples(subject: AuditSubject) -> Iterator[Hit]:
    for i, first in subject.scan.repeats:
        sample, earlier = subject.samples[i], subject.samples[first]
        if _answer(sample) != _answer(earlier):
            continue  # samples.conflict
        yield Hit(
            f"the row repeats sample '{earlier.sample.id}' (row {earlier.sample.row}): the same prompt, "
            + ("choices and answer" if sample.choices else "text" if sample.text is not None else "answer")
            + " (spacing aside); it counts twice in every mean and its standard error",
            file=sample.sample.file or subject.file,
            row=sample.sample.row,
            field="data",
            sample=sample.sample.id,
        )
    yield from conflict_rules.reordered_copies(subject)  # a copy with its choices in another order or case
    yield from listed_rows.repeated(subject, same_answer=True)  # a use case's rows


def conflicting_samples(subject: AuditSubject) -> Iterator[Hit]:
    for i, first in subject.scan.repeats:
        sample, earlier = subject.samples[i], subject.samples[first]
        if _answer(sample) == _answer(earlier):
            continue
        yield subject.at_row(
            sample.sample,
            f"the row asks what sample '{earlier.sample.id}' (row {earlier.sample.row}) asks, with another right "
            "answer: one of the two is scored wrong whatever the model says",
            "target",
        )
    yield from conflict_rules.within_task(subject)  # a copy with its choices in another order or case
    yield from listed_rows.repeated(subject, same_answer=False)  # a use case's rows
    yield from subject.source_hits.get(conflict_rules.RULE, ())  # another task's copy (noticed by engine/prepare)


def look_alike_ids(subject: AuditSubject) -> Iterator[Hit]:
    """Ids a reader takes for one ('Q1' and 'q1', 'q1 ', '1.0' and '1'): comparisons and joins by id mix them."""
    for i, first in subject.scan.id_clashes:
        sample, other = subject.samples[i].sample, subject.samples[first].sample.id
        yield subject.at_row(
            sample,
            f"sample id {sample.id!r} differs from sample id {other!r} only in case, spacing or a number's "
            "spelling: comparisons of runs and joins by id would take them for one sample",
            subject.spec.data[0].id if subject.spec.data and subject.spec.data[0].id else "id",
        )


def mixed_breakdown(subject: AuditSubject) -> Iterator[Hit]:
    for key in subject.spec.breakdown:
        if key.startswith("_"):
            continue  # the reader's own fields are always there, of one type
        spellings: dict[str, set[str]] = defaultdict(set)  # a part as a reader names it -> its values as written
        missing = 0
        first_missing = None
        for sample in subject.samples:
            value = sample.sample.fields.get(key)
            if value is None or value == "":
                missing += 1
                first_missing = first_missing or sample.sample
                continue
            shown = str(int(value)) if isinstance(value, bool) else str(value)  # True and 1 are one dict key
            spellings[near(shown)].add(f"{value!r} ({type(value).__name__})")
        mixed = sorted(name for name, values in spellings.items() if len(values) > 1)
        if mixed:
            yield subject.at_line(
                "breakdown",
                f"breakdown '{key}' spells one part in several ways ({', '.join(sorted(spellings[mixed[0]]))}): "
                "types, case or spacing split its rows into parts, or True and 1 merge two",
                "breakdown",
            )
        if missing and first_missing is not None:
            yield subject.at_row(
                first_missing,
                f"breakdown '{key}' is missing or empty in {missing} of {len(subject.samples)} rows: they are "
                "reported as a part of their own (None)",
                key,
            )


PER_ROW_MIN = 5
SMALL_PART = 5  # rows: a part's mean of fewer moves by 0.2 or more with one answer
SMALL_PARTS_MIN = 4  # parts: two or three parts of a short task are a split, not a breakdown of many


def one_row_parts(subject: AuditSubject) -> Iterator[Hit]:
    """A breakdown whose every part is one row (an id column): each part's number is a single 0 or 1. Or whose
    typical part is a few rows (15 parts of 2): each part's number is 0, 0.5 or 1, which says nothing of it."""
    n = len(subject.samples)
    if n < PER_ROW_MIN:
        return
    for key in subject.spec.breakdown:
        if key in ("_file", "_source"):
            continue
        parts = Counter(str(s.sample.fields.get(key)) for s in subject.samples)
        if len(parts) == n:
            yield subject.at_line(
                "breakdown",
                f"breakdown '{key}' has a different value in each of the {n} rows: every part is one row, so each "
                "part's number is that row's score (an id column?)",
                "breakdown",
            )
            return
        # the parts of the data (before --limit: a smoke run's parts are small by choice)
        whole = Counter(str(r.fields.get(key)) for r in subject.rows) if len(subject.rows) > n else parts
        sizes = sorted(whole.values())
        median = sizes[len(sizes) // 2]
        if len(sizes) >= SMALL_PARTS_MIN and median < SMALL_PART:
            yield subject.at_line(
                "breakdown",
                f"breakdown '{key}' has {len(sizes)} parts over {sum(sizes)} rows, and half of them have {median} "
                f"row(s) or fewer: each such part's number is the mean of {median} 0-or-1 score(s) (0, "
                f"{'0.5, ' if median == 2 else ''}1, ...), which says next to nothing of that part (break down by a "
                "coarser field)",
                "breakdown",
            )
            return


def merged_files(subject: AuditSubject) -> Iterator[Hit]:
    if FILE_KEY not in subject.spec.breakdown:
        return
    paths: dict[object, set[str]] = defaultdict(set)
    for sample in subject.samples:
        paths[sample.sample.fields.get(FILE_KEY)].add(str(sample.sample.fields.get("_path")))
    merged = sorted((str(label), sorted(p)) for label, p in paths.items() if len(p) > 1)
    if merged:
        label, files = merged[0]
        yield subject.at_line(
            "breakdown",
            f"breakdown '_file' reports {len(files)} files named '{label}' ({files[0]}, {files[1]}, ...) as one "
            "part: files from different folders are merged; break down by '_source' (the path below the glob)",
            "breakdown",
        )


def header_as_row(subject: AuditSubject) -> Iterator[Hit]:
    """A CSV whose header line was read as a row (``columns:`` given for a file that has a header)."""
    for sample in subject.samples[:1]:
        fields = {k: v for k, v in sample.sample.fields.items() if not k.startswith("_")}
        same = [k for k, v in fields.items() if isinstance(v, str) and v.strip().casefold() == k.casefold()]
        if fields and len(same) >= max(2, len(fields) // 2):
            yield subject.at_row(
                sample.sample,
                f"the first row's values are its column names ({', '.join(same[:4])}): the file's header line is "
                "read as a question (give 'columns:' only for files without a header)",
                "data.columns",
            )


RULES = (
    AuditRule(
        "data.join",
        "error",
        "A joined file lists its rows in another order than the data, or repeats a key in place of another (a key "
        "column shows it): labels misalign.",
        join_alignment,
    ),
    AuditRule(
        QUOTE_RULE,
        "warning",
        "A CSV field runs over several lines that read as rows of the file: a quote left open swallows the rows "
        "after it; or a field begins with a quote closed before it ends, which the reader drops, gluing the rest.",
        open_quote,
    ),
    AuditRule(
        "samples.duplicate",
        "warning",
        "The same item (prompt, choices, answer) appears in more than one row: it weighs twice.",
        duplicate_samples,
    ),
    AuditRule(
        "samples.conflict",
        "warning",
        "The same item appears twice with different right answers: one of the two is scored wrong regardless.",
        conflicting_samples,
    ),
    AuditRule(
        "ids.look-alike",
        "warning",
        "Two sample ids differ only in case, spacing or a number's spelling: comparisons by id mix them.",
        look_alike_ids,
    ),
    AuditRule(
        SPLIT_RULE,
        "warning",
        "The evaluated rows come from a file named as a training split, or a glob reads a validation split's files "
        "beside the test files, or a dialect evaluates its training split beside a held-out one.",
        training_split,
    ),
    AuditRule(
        "data.header-row",
        "warning",
        "A CSV's header line is read as a row of data.",
        header_as_row,
    ),
    AuditRule(
        "breakdown.mixed",
        "warning",
        "A breakdown field mixes types for one value (1 and '1') or is missing in some rows: parts split.",
        mixed_breakdown,
    ),
    AuditRule(
        "breakdown.per-row",
        "warning",
        "A breakdown field differs in every row, or half its parts have under 5 rows: each part is a row or two's "
        "score.",
        one_row_parts,
    ),
    AuditRule(
        "data.glob-merge",
        "warning",
        "A breakdown by '_file' over a glob reaching files of one name in several folders merges their parts.",
        merged_files,
    ),
)
