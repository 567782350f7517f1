"""'None' as an answer's word, not a missing value read back as text (for ``choices.placeholder``).

A choice that reads 'None' is what ``str()`` or a CSV reader makes of a missing value, so the rule names it. But
MMLU asks "which of the statements I, II, III are true?" over 'I only', 'II and III only', 'I, II, and III' and
'None': there 'None' is the answer "none of them", written in the data (its CSV has no empty cells). The sibling
choices tell the two apart: beside statement combinations or quantifiers ('Both', 'All of the above') it is a
word of the same kind; beside 'one', 'two', 'four', '7', 'Green' it is a value that went missing. A row whose
source holds a null (JSON null, an empty CSV cell read as None) is named all the same: there the text came from
no value at all.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

# an item a statement combination names: a roman numeral (MMLU's 'I', 'II', 'III', 'IV'), a digit or a capital
_ITEM = re.compile(r"^(?:[IVX]{1,4}|[0-9]|[A-E])$")
# the words that join items or quantify over them ('I and II only', 'Both I and II', 'All of the above')
_JOINS = frozenset(
    {"and", "or", "nor", "&", "only", "both", "neither", "either", "all", "of", "the", "above", "these", "statements"}
)
_QUANTIFIERS = frozenset({"both", "neither", "all"})


def _combination(choice: str) -> bool:
    """Whether a choice is a statement combination ('III only', 'I, II, and III', '1 and 3') or a quantifier
    ('Both', 'All of the above'): every word joins or names items, with two items, an 'only' or a quantifier, or a
    roman numeral (a lone '7' is a number, not a combination)."""
    words = [w for w in re.split(r"[\s,;]+", choice.strip().strip(".")) if w]
    if not words:
        return False
    items = [w for w in words if _ITEM.match(w)]
    joins = [w.casefold() for w in words if not _ITEM.match(w)]
    if any(w not in _JOINS for w in joins):
        return False
    roman = any(re.fullmatch(r"[IVX]{1,4}", w) for w in items)
    return len(items) >= 2 or roman or "only" in joins or bool(_QUANTIFIERS & set(joins))


def answers_none_of_them(choice: int, choices: Sequence[str]) -> bool:
    """Whether choice ``choice`` ('None') stands beside statement combinations or quantifiers: at least half of
    the other choices, and one or more, are such (MMLU's 'None' beside 'III only', 'I and II only')."""
    others = [c for i, c in enumerate(choices) if i != choice]
    combined = sum(_combination(c) for c in others)
    return combined >= 1 and 2 * combined >= len(others)


def holds_null(document: Mapping[str, Any] | None) -> bool:
    """Whether a row's source holds a missing value: a field that is null, or a list field with a null in it."""
    if document is None:
        return False
    return any(v is None or (isinstance(v, (list, tuple)) and any(x is None for x in v)) for v in document.values())
