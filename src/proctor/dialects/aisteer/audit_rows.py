"""What a use case's rows list as choices, for the audit's choice rules (``proctor.audit.listed_choices``).

A use case builds its prompts in Python, so its samples carry no choices; the rows themselves do, in the shape
AISteer360's multiple-choice use cases read (CommonsenseMCQA: a ``choices`` list of texts and an ``answer`` that is
one of them). A row of another shape (no list of texts) is left alone: the use case's own code is the only one that
knows what it means.
"""

from __future__ import annotations

import string
from typing import Mapping, Sequence

from proctor.audit.row_choices import RowChoices
from proctor.prompts.builder import PreparedSample

CHOICE_FIELDS = ("choices", "options")
ANSWER_FIELDS = ("answer", "label", "gold", "answerKey", "target")
QUESTION_FIELDS = ("question", "query", "prompt", "stem", "goal")  # what the row asks, where the prompt shows it


def _gold(answer: object, choices: Sequence[str]) -> int | None:
    """The choice ``answer`` names: its text (the first choice with it, as ``list.index`` takes it), an index, or a
    lone option letter (A is choice 0) that is no choice's text; None where it names none."""
    if isinstance(answer, bool):
        return None
    if isinstance(answer, int):
        return answer
    if not isinstance(answer, str):
        return None
    if answer in choices:
        return choices.index(answer)
    letter = answer.strip()
    if len(letter) == 1 and letter in string.ascii_uppercase:
        return string.ascii_uppercase.index(letter)
    return None


def row_choices(samples: Sequence[PreparedSample], file: str | None) -> list[RowChoices]:
    """Each row that lists choices as texts; ``file``: the data file the use case read (None: rows given in Python)."""
    out = []
    for prepared in samples:
        sample = prepared.sample
        fields: Mapping[str, object] = sample.fields
        name = next((f for f in CHOICE_FIELDS if isinstance(fields.get(f), list)), None)
        if name is None:
            continue
        listed = fields[name]
        assert isinstance(listed, list)
        if len(listed) < 2 or not all(isinstance(c, str) for c in listed):
            continue
        answer_field = next((f for f in ANSWER_FIELDS if fields.get(f) is not None), None)
        answer = fields[answer_field] if answer_field else None
        row = sample.row + 1 if sample.row is not None else None  # the use case counts its rows from 0
        question = next((f for f in QUESTION_FIELDS if isinstance(fields.get(f), str)), None)
        gold = _gold(answer, listed)
        out.append(RowChoices(sample, tuple(listed), name, row, answer, answer_field, gold, file, question))
    return out
