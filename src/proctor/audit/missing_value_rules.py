"""A missing value read back as text where the row's own text belongs: a passage or question that is 'nan' or
'None' (pandas and Python write a missing cell so), a reference that is 'nan'. Such a row is asked without its
passage, or can never be answered right, and nothing fails: the text is a text. ``choices.placeholder`` reads the
choices; this reads the fields a prompt template prints and the references."""

from __future__ import annotations

from statistics import median
from typing import Iterator

from proctor.audit.probe_rows import PRINTED_ROWS
from proctor.audit.source_rows import printed_values
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

# what a reader, pandas or Python writes for a missing value, never an answer or a passage
_NEVER_TEXT = frozenset({"nan", "NaN", "null", "NULL", "#N/A", "<NA>", "NaT"})
# ... and what can be a short answer too ('None' of them, 'N/A'): a placeholder only among long texts
_PLACEHOLDER = _NEVER_TEXT | {"None", "N/A", "NA"}
LONG_WORDS = 3  # the median value of a field of passages or questions is longer than this


def _placeholder(value: object, long_field: bool) -> bool:
    if not isinstance(value, str):
        return False
    text = value.strip()
    return text in _NEVER_TEXT or (long_field and text in _PLACEHOLDER)


def missing_in_text(subject: AuditSubject) -> Iterator[Hit]:
    probe = min(len(subject.samples), PRINTED_ROWS)
    if probe < 2:
        return
    for name, values in printed_values(subject):
        texts = [v for v in values if isinstance(v, str)]
        if len(texts) < 2:
            continue
        long_field = median(len(t.split()) for t in texts) > LONG_WORDS
        missing = [i for i, v in enumerate(values) if _placeholder(v, long_field)]
        if missing and len(missing) < len(texts):
            yield subject.at_row(
                subject.samples[missing[0]].sample,
                f"the '{name}' the prompt prints is {values[missing[0]]!r} in {len(missing)} of the {probe} rows read, "
                "what a reader writes for a missing value: those rows are asked without it",
                name,
            )
            return
    rows = [s for s in subject.samples[:probe] if s.references and not s.choices]
    if len(rows) < 2:
        return
    lengths = [len(r.split()) for s in rows for r in s.references]
    long_refs = median(lengths) > LONG_WORDS
    lost = [s for s in rows if all(_placeholder(r, long_refs) for r in s.references)]
    if lost and len(lost) < len(rows):
        yield subject.at_row(
            lost[0].sample,
            f"the reference is {lost[0].references[0]!r} in {len(lost)} of the {len(rows)} rows read, what a reader "
            "writes for a missing answer: those rows can never be answered right (drop them with a filter)",
            "target",
        )


RULES = (
    AuditRule(
        "data.missing-as-text",
        "warning",
        "A field the prompt prints, or a reference, is 'nan', 'None' or 'null' in some rows (a missing value read "
        "back as text): those rows are asked without it, or can never be answered right.",
        missing_in_text,
    ),
)
