"""A missing value read back as text where the row's own text belongs: a passage or question that is 'nan' or
'None' (pandas and Python write a missing cell so), a reference that is 'nan'. Such a row is asked without its
passage, or can never be answered right, and nothing fails: the text is a text. ``choices.placeholder`` reads the
choices; this reads the fields a prompt template prints and the references."""

from __future__ import annotations

from statistics import median
from typing import Any, Iterator, Mapping, Sequence

from proctor.audit.probe_rows import PRINTED_ROWS
from proctor.audit.source_rows import documents, templates
from proctor.audit.subject import READER_FIELDS, AuditSubject
from proctor.audit.target_rules import template_fields
from proctor.core.audit import AuditRule, Hit

# what a reader, pandas or Python writes for a missing value, never an answer or a passage
_NEVER_TEXT = frozenset({"nan", "NaN", "null", "NULL", "#N/A", "<NA>", "NaT"})
# ... and what can be a short answer too ('None' of them, 'N/A'): a placeholder only among long texts
_PLACEHOLDER = _NEVER_TEXT | {"None", "N/A", "NA"}
SHOWN = 0.8  # of the rows with a text in a field, those whose prompt holds it: the prompt prints the field
LONG_WORDS = 3  # the median value of a field of passages or questions is longer than this


def _placeholder(value: object, long_field: bool) -> bool:
    if not isinstance(value, str):
        return False
    text = value.strip()
    return text in _NEVER_TEXT or (long_field and text in _PLACEHOLDER)


def _printed_fields(subject: AuditSubject) -> list[str]:
    prompt, _, _ = templates(subject)
    return sorted(template_fields(prompt)) if prompt else []


def _missing_question(subject: AuditSubject) -> Iterator[Hit]:
    """A use case's rows (which its code prompts: no template to read) whose question is a missing value: the
    field the handler says holds what a row asks (``RowChoices.question_field``), read as a prompt's field."""
    rows = [r for r in subject.listed_choices[:PRINTED_ROWS] if r.question_field]
    if len(rows) < 2:
        return
    name = rows[0].question_field or "question"
    values = [r.sample.fields.get(r.question_field or name) for r in rows]
    texts = [v for v in values if isinstance(v, str)]
    long_field = len(texts) >= 2 and median(len(t.split()) for t in texts) > LONG_WORDS
    # a float NaN (pandas' missing cell kept as a number) is missing too
    missing = [i for i, v in enumerate(values) if _placeholder(v, long_field) or (isinstance(v, float) and v != v)]
    if missing and len(missing) < len(rows):
        row = rows[missing[0]]
        yield Hit(
            f"the '{name}' the use case asks is {values[missing[0]]!r} in {len(missing)} of the {len(rows)} rows "
            "read, what a reader writes for a missing value: those rows are asked nothing, and their answer is a "
            "guess among the choices",
            file=row.file or row.sample.file or subject.file,
            row=row.row,
            field=name,
            sample=row.sample.id,
        )


def _shown(subject: AuditSubject, probe: int) -> tuple[list[str], Sequence[Mapping[str, Any]]]:
    """(the fields the prompt prints, each probed row's fields): a Jinja template's variables over the rows; a
    dialect's own view of its rows (SEA-HELM's ``task_template`` fields); else, where a dialect's code made the
    prompt from the row (GLM-130B's inputs, a probsem context's text), the text fields whose value the prompt
    holds in most rows."""
    from proctor.audit.field_pairs import field_view

    names = _printed_fields(subject)
    if names:
        return names, documents(subject)
    if subject.templated:
        return [], []
    view = field_view(subject)
    if view is not None and view.prompt_fields:
        return sorted(view.prompt_fields), [row for _, row in view.rows[:probe]]
    docs = documents(subject)
    texts = subject.prompt_texts
    found = []
    for name, value in docs[0].items() if probe else ():
        if not isinstance(value, str) or name in READER_FIELDS:
            continue
        held = [v in texts[i] for i in range(probe) if isinstance(v := docs[i].get(name), str) and len(v.strip()) >= 4]
        if len(held) >= 2 and sum(held) >= SHOWN * len(held):
            found.append(name)
    return found, docs


def missing_in_text(subject: AuditSubject) -> Iterator[Hit]:
    yield from _missing_question(subject)
    probe = min(len(subject.samples), PRINTED_ROWS)
    if probe < 2:
        return
    names, docs = _shown(subject, probe)
    for name in names:
        values = [docs[i].get(name) for i in range(probe)]
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
