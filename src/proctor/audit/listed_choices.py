"""Choices a row lists that its prepared samples do not carry, and the choice rules' checks over them.

Most dialects hand the audit each row's choices in its ``PreparedSample``. A handler that builds its own prompts
from the rows (a Python use case shuffles a row's ``choices`` and letters them itself) leaves its samples without
choices, so ``choices.duplicate`` and the others would read nothing and a row listing one answer twice would score
by which copy the use case calls right. Such a handler says what its rows list through ``audit_choices(samples)``
(a sequence of ``RowChoices``), and the choice rules read those as they read a sample's choices. Every other task
has no such method: the rules return at once.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Callable, Iterator

from proctor.audit.row_choices import RowChoices
from proctor.core.audit import Hit

if TYPE_CHECKING:
    from proctor.audit.subject import AuditSubject


def _hit(subject: AuditSubject, row: RowChoices, message: str, field: str) -> Hit:
    return Hit(
        message, file=row.file or row.sample.file or subject.file, row=row.row, field=field, sample=row.sample.id
    )


def duplicates(subject: AuditSubject, key: Callable[[str], str], loose: Callable[[str], str]) -> Iterator[Hit]:
    """Rows listing two choices that are one under ``key``; with ``key`` = ``loose`` the same text up to case and
    spacing (``choices.duplicate``), else those ``loose`` tells apart (``choices.near-duplicate``)."""
    near = key is not loose
    for row in subject.listed_choices:
        keys = [key(c) for c in row.choices]
        if len(set(keys)) == len(keys):
            continue
        seen: dict[str, int] = {}
        for i, k in enumerate(keys):
            j = seen.setdefault(k, i)
            if j == i or (near and loose(row.choices[i]) == loose(row.choices[j])):
                continue
            a, b = row.choices[j], row.choices[i]
            how = (
                "differ only in punctuation, quotes, a number's spelling or look-alike letters"
                if near
                else "are the same text" + ("" if a == b else " up to case and whitespace")
            )
            yield _hit(
                subject,
                row,
                f"the row's '{row.field}' lists choices {j} and {i} that {how} ({a!r:.40} / {b!r:.40}): a model "
                "cannot tell them apart, so the row scores by which copy the data calls right; remove one",
                row.field,
            )
            break


def ambiguous(subject: AuditSubject, loose: Callable[[str], str]) -> Iterator[Hit]:
    """Rows whose answer's text is also another choice's text (``target.ambiguous``)."""
    for row in subject.listed_choices:
        if row.gold is None or not 0 <= row.gold < len(row.choices):
            continue
        keys = [loose(c) for c in row.choices]
        if Counter(keys)[keys[row.gold]] > 1:
            others = [i for i, k in enumerate(keys) if k == keys[row.gold] and i != row.gold]
            yield _hit(
                subject,
                row,
                f"the row's answer, choice {row.gold} ({row.choices[row.gold]!r:.40}), has the text of choice(s) "
                f"{', '.join(map(str, others))} too: the answer is taken as the first, and a model that picks the "
                "other scores 0",
                row.answer_field or row.field,
            )


def empty(subject: AuditSubject) -> Iterator[Hit]:
    """Rows listing an empty or blank choice (``choices.empty``)."""
    for row in subject.listed_choices:
        blank = [i for i, c in enumerate(row.choices) if not c.strip()]
        if blank:
            yield _hit(
                subject,
                row,
                f"the row's '{row.field}' lists an empty choice (choice {blank[0]}, {row.choices[blank[0]]!r}): the "
                "model is offered an answer with no text (a missing value?); fill it in or drop the choice",
                row.field,
            )


def placeholders(
    subject: AuditSubject, missing: frozenset[str], word: Callable[[RowChoices, int], bool]
) -> Iterator[Hit]:
    """Rows listing a choice that reads as a missing value ('None', 'nan': ``missing``, case-folded) read back as
    text (``choices.placeholder``), unless ``word`` says the row's choice is a word there (MMLU's 'None' beside
    'III only')."""
    for row in subject.listed_choices:
        at = next((i for i, c in enumerate(row.choices) if c.strip().casefold() in missing and not word(row, i)), None)
        if at is not None:
            yield _hit(
                subject,
                row,
                f"the row's '{row.field}' lists choice {at} as {row.choices[at]!r}, what a CSV or pandas reader makes "
                "of a missing value: a choice the data does not have is offered and scored as one",
                row.field,
            )


def not_listed(subject: AuditSubject) -> Iterator[Hit]:
    """Rows whose answer names no choice: a text none of them has, a letter or index past the last one
    (``target.not-a-choice``)."""
    for row in subject.listed_choices:
        if row.answer is None or row.answer_field is None:
            continue
        if row.gold is None:
            how = "is none of its choices"
        elif not 0 <= row.gold < len(row.choices):
            how = f"points at choice {row.gold}, past the last of its {len(row.choices)} choices"
        else:
            continue
        yield _hit(
            subject,
            row,
            f"the row's '{row.answer_field}' ({row.answer!r:.40}) {how} ({', '.join(map(repr, row.choices))[:80]}): "
            "no answer the model can give is scored right; correct the answer or the choices",
            row.answer_field,
        )
