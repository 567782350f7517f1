"""One row's choices as its data lists them (``RowChoices``), for rows whose prepared samples carry none: what a
handler's ``audit_choices(samples)`` hands the audit (``listed_choices.py`` holds the rules that read them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from proctor.data.sources import Sample


@dataclass(frozen=True)
class RowChoices:
    """One row's choices as its data lists them, and the answer it gives."""

    sample: Sample
    choices: tuple[str, ...]
    field: str  # the row's field that lists them
    row: int | None  # the row's line in its file (counted from 1)
    answer: object = None  # the row's answer as it gives it (a text, a letter, an index); None: it gives none
    answer_field: str | None = None
    gold: int | None = None  # the choice the answer names (may be past the last one); None: it names none
    file: str | None = None  # the data file the row is read from, where not the sample's file
    question_field: str | None = None  # the row's field that holds what it asks (its question), where it has one

    @property
    def question(self) -> str | None:
        """What the row asks, as its question field holds it (None: no such field, or not a text)."""
        value = self.sample.fields.get(self.question_field) if self.question_field else None
        return value if isinstance(value, str) else None

    @property
    def gold_text(self) -> str | None:
        """The text of the choice the answer names (None: it names none)."""
        return self.choices[self.gold] if self.gold is not None and 0 <= self.gold < len(self.choices) else None


def listed(handler: object, samples: Sequence[object]) -> Sequence[RowChoices]:
    """What the handler's ``audit_choices`` says its rows list (nothing for a handler without one)."""
    hook = getattr(handler, "audit_choices", None)
    if not callable(hook):
        return ()
    rows = hook(samples)
    return [r for r in rows if isinstance(r, RowChoices)] if rows else ()
