"""Names a user lists: the known names closest to a misspelt one, and the first name listed twice.

Every "did you mean" and every "listed twice" check goes through here, so they all answer alike.
"""

from __future__ import annotations

import difflib
from typing import Hashable, Iterable, TypeVar

Name = TypeVar("Name", bound=Hashable)


def close_names(name: str, names: Iterable[str], n: int = 1) -> list[str]:
    """Up to ``n`` of ``names`` closest to ``name``, best first (difflib's ratio of at least 0.6)."""
    return difflib.get_close_matches(name, list(names), n=n, cutoff=0.6)


def first_repeat(names: Iterable[Name]) -> tuple[int, Name] | None:
    """(position, name) of the first name that was listed before it, or None when each is listed once."""
    seen: set[Name] = set()
    for index, name in enumerate(names):
        if name in seen:
            return index, name
        seen.add(name)
    return None
