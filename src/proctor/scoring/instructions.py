"""Counting primitives of SEA-HELM's SEA-IFEval checks (AISteer360's Google IFEval checks, which differ
in detail, live in ``proctor.dialects.aisteer.ifeval_checks``)."""

from __future__ import annotations

import re

RELATIONS = ("exactly", "at least", "less than")
_WORD = re.compile(r"\w+", re.UNICODE | re.MULTILINE | re.DOTALL)  # IFEval's NLTK RegexpTokenizer(r"\w+")


def count_words(text: str) -> int:
    """Words as IFEval counts them: runs of word characters (a hyphenated word counts twice)."""
    return len(_WORD.findall(text))


def compare(count: int, relation: str, target: int, allowed: tuple[str, ...] = RELATIONS) -> bool:
    """``count`` against ``target`` under an IFEval relation; an unknown relation is a ValueError."""
    if relation not in allowed:
        raise ValueError(f"relation must be one of {', '.join(repr(r) for r in allowed)}, got {relation!r}")
    if relation == "exactly":
        return count == target
    if relation == "at least":
        return count >= target
    return count < target
