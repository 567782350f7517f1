"""Rules over the rows as read: joins that misalign them, repeated items, breakdown parts that merge or split."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterator

from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

FILE_KEY = "_file"  # the reader's file label (its name without suffix); "_source" is its path below the glob


def join_alignment(subject: AuditSubject) -> Iterator[Hit]:
    """What the reader noticed while joining files (``data.sources``: a key column in another order)."""
    yield from subject.source_hits.get("data.join", ())


def _key(sample: Any, text: str) -> tuple[Any, ...]:
    return (text, sample.choices, sample.gold, sample.references, sample.text)


def duplicate_samples(subject: AuditSubject) -> Iterator[Hit]:
    seen: dict[tuple[Any, ...], Any] = {}
    for sample, text in zip(subject.samples, subject.prompt_texts):
        if not text and sample.text is None and not sample.choices:
            continue
        key = _key(sample, text)
        earlier = seen.setdefault(key, sample.sample)
        if earlier is not sample.sample:
            yield Hit(
                f"the row repeats sample '{earlier.id}' (row {earlier.row}): the same prompt, "
                + ("choices and answer" if sample.choices else "text" if sample.text is not None else "answer")
                + "; it counts twice in every mean and its standard error",
                file=sample.sample.file or subject.file,
                row=sample.sample.row,
                field="data",
                sample=sample.sample.id,
            )


def mixed_breakdown(subject: AuditSubject) -> Iterator[Hit]:
    for key in subject.spec.breakdown:
        if key.startswith("_"):
            continue  # the reader's own fields are always there, of one type
        kinds: dict[str, set[str]] = defaultdict(set)
        missing = 0
        first_missing = None
        for sample in subject.samples:
            value = sample.sample.fields.get(key)
            if value is None or value == "":
                missing += 1
                first_missing = first_missing or sample.sample
                continue
            kinds[str(value)].add(type(value).__name__)
        mixed = sorted(name for name, types in kinds.items() if len(types) > 1)
        if mixed:
            yield Hit(
                f"breakdown '{key}' has the part {mixed[0]!r} as values of different types "
                f"({', '.join(sorted(kinds[mixed[0]]))}): the rows of one part are reported as two",
                file=subject.file,
                line=subject.line("breakdown"),
                field="breakdown",
            )
        if missing and first_missing is not None:
            yield Hit(
                f"breakdown '{key}' is missing or empty in {missing} of {len(subject.samples)} rows: they are "
                "reported as a part of their own (None)",
                file=first_missing.file or subject.file,
                row=first_missing.row,
                field=key,
                sample=first_missing.id,
            )


def merged_files(subject: AuditSubject) -> Iterator[Hit]:
    if FILE_KEY not in subject.spec.breakdown:
        return
    paths: dict[Any, set[str]] = defaultdict(set)
    for sample in subject.samples:
        paths[sample.sample.fields.get(FILE_KEY)].add(str(sample.sample.fields.get("_path")))
    merged = sorted((str(label), sorted(p)) for label, p in paths.items() if len(p) > 1)
    if merged:
        label, files = merged[0]
        yield Hit(
            f"breakdown '_file' reports {len(files)} files named '{label}' ({files[0]}, {files[1]}, ...) as one "
            "part: files from different folders are merged; break down by '_source' (the path below the glob)",
            file=subject.file,
            line=subject.line("breakdown"),
            field="breakdown",
        )


RULES = (
    AuditRule(
        "data.join",
        "error",
        "A joined file lists its rows in another order than the data (a key column shows it): labels misalign.",
        join_alignment,
    ),
    AuditRule(
        "samples.duplicate",
        "warning",
        "The same item (prompt, choices, answer) appears in more than one row: it weighs twice.",
        duplicate_samples,
    ),
    AuditRule(
        "breakdown.mixed",
        "warning",
        "A breakdown field mixes types for one value (1 and '1') or is missing in some rows: parts split.",
        mixed_breakdown,
    ),
    AuditRule(
        "data.glob-merge",
        "warning",
        "A breakdown by '_file' over a glob reaching files of one name in several folders merges their parts.",
        merged_files,
    ),
)
