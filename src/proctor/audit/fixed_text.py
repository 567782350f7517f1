"""The template's own text: what every prompt of a task shares at its start and its end (whole lines), the text
around each row's own part (``prompt.empty``, ``prompt.contains-gold`` and ``target.not-a-choice`` read it)."""

from __future__ import annotations

import re
from itertools import repeat
from typing import Sequence

from proctor.audit.columns import ROW

_PROBE = 64  # texts a candidate is tried on first: most candidates fail on the second text, at once


def _all_start(texts: Sequence[str], prefix: str, joined: str | None) -> bool:
    if not prefix:
        return True
    if not all(map(str.startswith, texts[:_PROBE], repeat(prefix))):
        return False
    if joined is not None:  # each text but the first starts right after a row mark: one search of C
        return joined.startswith(prefix) and joined.count(ROW + prefix) == len(texts) - 1
    return all(map(str.startswith, texts, repeat(prefix)))


def _all_end(texts: Sequence[str], suffix: str, joined: str | None) -> bool:
    if not all(map(str.endswith, texts[:_PROBE], repeat(suffix))):
        return False
    if joined is not None:  # each text but the last ends right before a row mark
        return joined.endswith(suffix) and joined.count(suffix + ROW) == len(texts) - 1
    return all(map(str.endswith, texts, repeat(suffix)))


def fixed_text(texts: Sequence[str], joined: str | None = None) -> tuple[str, str]:
    """(prefix, suffix) every text shares, cut back to whole lines: the template's own text around the row's.
    The prefix is the longest of the first text's line starts that every text starts with (what the common
    prefix of all texts, cut back to a line end, is), the suffix the longest of its line ends that every text
    ends with. ``joined``: the texts joined by ``ROW``, none of which holds it, where the caller has it (a
    task may have 100,000 prompts: each check is then one search of the joined text, in C)."""
    if len(texts) < 2:
        return "", ""
    first = texts[0]
    prefix = ""
    end = first.rfind("\n")
    while end >= 0:
        if _all_start(texts, first[: end + 1], joined):
            prefix = first[: end + 1]
            break
        end = first.rfind("\n", 0, end)
    start = first.find("\n")
    while start >= 0:
        suffix = first[start:]
        if _all_end(texts, suffix, joined):
            return prefix, suffix
        start = first.find("\n", start + 1)
    return prefix, ""


def said_in(text: str, fixed: str) -> bool:
    """Whether ``fixed`` names ``text`` as a word of its own (not inside a longer word)."""
    return re.search(r"(?<!\w)" + re.escape(text) + r"(?!\w)", fixed) is not None
