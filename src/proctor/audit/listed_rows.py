"""The rules that read a row as a handler lists it (a Python use case's rows: ``listed_choices.py``) beyond its
choices: its question against its own answer, and against the other rows.

A use case builds its prompts in Python, so its samples carry no prompt the audit could read, and the rules over
prompts and repeated items (``prompt.empty``, ``prompt.contains-gold``, ``samples.duplicate``,
``samples.conflict``) saw nothing there. Where the handler says which field holds what a row asks
(``RowChoices.question_field``: AISteer360's ``question``), these read it as they read a prompt. A use case has a
few hundred or thousand rows: each rule walks them once.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Iterator

from proctor.audit.row_choices import RowChoices
from proctor.audit.target_rules import GOLD_IN_PROMPT_SHARE, GOLD_MIN_ROWS, shows_gold
from proctor.core.audit import Hit

if TYPE_CHECKING:
    from proctor.audit.subject import AuditSubject


def _hit(subject: AuditSubject, row: RowChoices, message: str, field: str) -> Hit:
    return Hit(
        message, file=row.file or row.sample.file or subject.file, row=row.row, field=field, sample=row.sample.id
    )


def _loose(text: str) -> str:
    """Case, spacing and the accents' Unicode form (a row typed in decomposed accents, NFD) aside."""
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    return " ".join(text.casefold().split())


def _asked(subject: AuditSubject) -> list[tuple[RowChoices, str]]:
    """The listed rows with a question, and that question."""
    return [(row, q) for row in subject.listed_choices if (q := row.question) is not None]


def repeated(subject: AuditSubject, same_answer: bool) -> Iterator[Hit]:
    """Rows that ask what an earlier row asks (its question and choices, up to case, spacing and the choices'
    order) with the same answer's text (``same_answer``: it weighs twice) or another (one is scored wrong)."""
    first: dict[tuple[str, ...], RowChoices] = {}
    for row, question in _asked(subject):
        if not question.strip():
            continue  # prompt.empty speaks of it
        other = first.setdefault((_loose(question), *sorted(map(_loose, row.choices))), row)
        answer, earlier = row.gold_text, other.gold_text
        if other is row or answer is None or earlier is None or (_loose(answer) == _loose(earlier)) != same_answer:
            continue
        where = f"row {other.row} (id '{other.sample.id}')"
        if same_answer:
            yield _hit(
                subject,
                row,
                f"the row repeats {where}: the same '{row.question_field}', choices and answer ({answer!r:.40}), up "
                "to case, spacing and the choices' order; it counts twice in every mean and its standard error",
                "data",
            )
        else:
            yield _hit(
                subject,
                row,
                f"the row asks what {where} asks (the same '{row.question_field}' and choices, up to case, spacing and "
                f"order) with another answer: {answer!r:.40} here, {earlier!r:.40} there: one of the two is scored "
                "wrong whatever the model says",
                row.answer_field or row.field,
            )


def blank_questions(subject: AuditSubject) -> Iterator[Hit]:
    """``prompt.empty``: some rows' question is empty or whitespace while the others' is not."""
    asked = _asked(subject)
    blank = [row for row, question in asked if not question.strip()]
    if blank and len(blank) < len(asked):
        row = blank[0]
        yield _hit(
            subject,
            row,
            f"the row's '{row.question_field}' is blank ({row.question!r}) in {len(blank)} of {len(asked)} rows, and "
            "not in the others: those rows' answers are scored without a question",
            row.question_field or "question",
        )


def answer_in_question(subject: AuditSubject) -> Iterator[Hit]:
    """``prompt.contains-gold``: most rows' question holds the text of their answer and of no other choice (a
    hint written into the question): the model can copy it."""
    asked = [(row, q) for row, q in _asked(subject) if row.gold is not None and 0 <= row.gold < len(row.choices)]
    if len(asked) < GOLD_MIN_ROWS:
        return
    told = [row for row, question in asked if shows_gold(question, row.choices, (row.gold or 0,), ())]
    if len(told) >= GOLD_MIN_ROWS and len(told) >= GOLD_IN_PROMPT_SHARE * len(asked):
        row = told[0]
        yield _hit(
            subject,
            row,
            f"the row's '{row.question_field}' holds its answer's text ({row.gold_text!r:.40}) and no other choice's, "
            f"in {len(told)} of {len(asked)} rows: the model can copy the answer",
            row.question_field or "question",
        )
