"""Labels and references changed by a type on their way in: a label that ``| int`` turns into another index (1.5,
True), a digit text that is another choice's text, a reference that is a truth value, a float or a list written as
text, a list's filter read over a text ('Santiago' | first is 'S')."""

from __future__ import annotations

import math
from operator import itemgetter, methodcaller
from typing import Iterator

from proctor.audit.subject import AuditSubject, near
from proctor.audit.target_rules import _FIELDS, _INTEGER, _read_field
from proctor.core.audit import AuditRule, Hit
from proctor.prompts.builder import PreparedSample


def _changed_by_int(value: object) -> bool:
    """Whether ``int`` would make another number of this value (or a number of what is none)."""
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return False
    if isinstance(value, float):
        return not math.isfinite(value) or not value.is_integer()
    if isinstance(value, str):
        if _INTEGER.match(value):
            return False
        try:
            number = float(value)
        except ValueError:
            return True  # "B": int(0) makes it 0
        return not math.isfinite(number) or not number.is_integer()
    return True


def _index_text(value: str, choices: tuple[str, ...]) -> str | None:
    """Why a digit text with spaces or leading zeros misleads: read as an index, it is another choice's text."""
    if value == value.strip() and not (value.strip().startswith("0") and len(value.strip()) > 1):
        return None
    index = int(value)
    key = near(value)
    same = [i for i, c in enumerate(choices) if near(c) == key]
    if same and index not in same:
        return f"the text {value!r} is read as choice index {index}, but it is choice {same[0]}'s text up to spacing"
    return None


# filters made for a list of answers, which on a text read its characters ('Paris' | first is 'P')
_SEQUENCE_FILTERS = frozenset({"first", "last", "random", "list", "join", "reverse", "sort", "unique"})


def _coercion(value: object, filters: tuple[str, ...], sample: PreparedSample) -> str | None:
    """What reading ``value`` as the row's target changes without a word, or None."""
    if sample.choices:  # an index, or a choice's text
        if "int" in filters and _changed_by_int(value):
            return (
                f"the target's '| int' turns {value!r:.40} ({type(value).__name__}) into a choice index without a "
                "word (1.5 becomes 1, True becomes 1, a text with a default becomes it): the label is not a whole "
                "number"
            )
        if isinstance(value, bool):
            return f"the label is {value!r}, a truth value, read as choice index {int(value)}"
        if isinstance(value, str) and _INTEGER.match(value):
            return _index_text(value, sample.choices)
        return None
    taken = _SEQUENCE_FILTERS.intersection(filters)
    if isinstance(value, str) and len(value) > 1 and taken:  # a reference: a list's filter on one text
        kept = {"first": value[:1], "last": value[-1:]}.get(sorted(taken)[0], "its characters")
        return (
            f"the target's '| {sorted(taken)[0]}' reads {value!r:.40} as a sequence of characters and keeps {kept!r} "
            f"(the field is a text in this row, where '| {sorted(taken)[0]}' expects a list of answers)"
        )
    if isinstance(value, bool):  # a reference
        return f"the reference is the truth value {value!r}, compared as the text {str(value)!r}"
    if isinstance(value, float):
        shown = f"{value:g}"
        return (
            f"the reference is the number {value!r}, compared as the text {str(value)!r} (an answer {shown!r} misses)"
        )
    if isinstance(value, str) and value.strip()[:1] == "[" and value.strip()[-1:] == "]":
        return f"the reference {value!r:.60} is a list written as text: it is compared as one answer, brackets included"
    return None


def _coercions(subject: AuditSubject, choices: bool) -> Iterator[Hit]:
    """Rows whose target field is changed on its way in: multiple-choice labels (``choices``) or references."""
    if not subject.templated or not subject.spec.target:
        return
    read = _read_field(subject.spec.target)
    if read is None:
        return
    name, filters = read
    if subject.spec.kind != ("multiple_choice" if choices else "generate"):
        return
    rows = subject.columns.rows
    try:  # in C: 100,000 rows add up (an item read is cheaper than a method call)
        values = list(map(itemgetter(name), map(_FIELDS, rows)))
    except KeyError:  # a row without the field: read as None, which the rows below look at
        values = list(map(methodcaller("get", name), map(_FIELDS, rows)))
    types = set(map(type, values))
    if choices and types == {int}:
        return  # indices as they are (most tasks)
    as_texts = not choices and types == {str} and not _SEQUENCE_FILTERS.intersection(filters)
    if as_texts and not any(map(methodcaller("startswith", "["), values)):
        return  # references as texts
    for sample in subject.samples:
        if name not in sample.sample.fields or sample.text is not None or bool(sample.choices) != choices:
            continue
        why = _coercion(sample.sample.fields[name], filters, sample)
        if why is not None:
            yield Hit(
                why,
                file=sample.sample.file or subject.file,
                row=sample.sample.row,
                field=name,
                sample=sample.sample.id,
            )


def coerced_target(subject: AuditSubject) -> Iterator[Hit]:
    yield from _coercions(subject, choices=True)


def coerced_reference(subject: AuditSubject) -> Iterator[Hit]:
    yield from _coercions(subject, choices=False)


RULES = (
    AuditRule(
        "target.coerced",
        "error",
        "A label is changed on its way to a choice index: int of 1.5 or True, a truth value, a digit text that "
        "is another choice's text.",
        coerced_target,
    ),
    AuditRule(
        "references.coerced",
        "warning",
        "A reference answer is a truth value, a float (3.0) or a list written as text: compared as that text.",
        coerced_reference,
    ),
)
