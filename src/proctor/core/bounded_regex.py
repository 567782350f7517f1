"""A task's own regular expression, searched with a time bound.

A pattern with a nested repeat (``^([\\w ]+)+!``) backtracks catastrophically on a text it almost matches: one
search holds a C call for hours, so ``proctor validate`` (the audit tries the pattern on the references) or a run
(the scorer tries it on every answer) would never end. The ``regex`` package searches with a timeout and, in its
default (version 0) mode, matches as ``re`` does; ``core/template_bounds.py`` bounds ``regex_replace`` the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from proctor.core.errors import ProctorError

SEARCH_SECONDS = 2.0  # far more than any sane pattern needs on any answer; a runaway one is named within it


class RegexTooSlow(ProctorError):
    """A search ran past ``SEARCH_SECONDS``."""


@dataclass(frozen=True)
class BoundedPattern:
    source: str
    ignore_case: bool = False
    _compiled: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        import regex

        flags = regex.IGNORECASE if self.ignore_case else 0
        object.__setattr__(self, "_compiled", regex.compile(self.source, flags))

    def search(self, text: str) -> Any:
        """``re.search``'s match (or None); ``RegexTooSlow`` past the bound."""
        try:
            return self._compiled.search(text, timeout=SEARCH_SECONDS)
        except TimeoutError:
            raise RegexTooSlow(
                f"the regex {self.source!r} takes more than {SEARCH_SECONDS:g} seconds on a {len(text):,}-character "
                f"text ({text[:40]!r}...): it backtracks without end (a repeat inside a repeat, such as (a+)+); "
                "write it without the nested repeat"
            ) from None
