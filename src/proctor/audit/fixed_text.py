"""The template's own text: what every prompt of a task shares at its start and its end (whole lines), the text
around each row's own part (``prompt.empty``, ``prompt.contains-gold`` and ``target.not-a-choice`` read it)."""

from __future__ import annotations

import os
import re
from itertools import repeat
from typing import Sequence

_MANY_LINES = 8  # line starts in the first text beyond which the prefix is found from the least and greatest text


def _all_start(texts: Sequence[str], prefix: str) -> bool:
    return all(map(str.startswith, texts, repeat(prefix)))  # in C; most candidates fail on the second text


def _all_end(texts: Sequence[str], suffix: str) -> bool:
    return all(map(str.endswith, texts, repeat(suffix)))


def fixed_text(texts: Sequence[str]) -> tuple[str, str]:
    """(prefix, suffix) every text shares, cut back to whole lines: the template's own text around the row's.
    The prefix is the longest of the first text's line starts that every text starts with (what the common
    prefix of all texts, cut back to a line end, is), the suffix the longest of its line ends that every text
    ends with. Each candidate is checked against every text in C, and the longest first: a candidate that
    fails does so at once (on the second text, mostly), and the one that holds is one pass (a task may have
    100,000 prompts; the least and greatest text, which would give the common prefix at once, take two)."""
    if len(texts) < 2:
        return "", ""
    first = texts[0]
    prefix = ""
    end = first.rfind("\n")
    if first.count("\n", 0, end) >= _MANY_LINES:  # a long template: its common prefix in two passes, at most
        common = os.path.commonprefix([min(texts), max(texts)])
        end = common.rfind("\n")
    while end >= 0:
        if _all_start(texts, first[: end + 1]):
            prefix = first[: end + 1]
            break
        end = first.rfind("\n", 0, end)
    start = first.find("\n")
    while start >= 0:
        suffix = first[start:]
        if _all_end(texts, suffix):
            return prefix, suffix
        start = first.find("\n", start + 1)
    return prefix, ""


def said_in(text: str, fixed: str) -> bool:
    """Whether ``fixed`` names ``text`` as a word of its own (not inside a longer word)."""
    return re.search(r"(?<!\w)" + re.escape(text) + r"(?!\w)", fixed) is not None


def asserted_in(text: str, fixed: str) -> bool:
    """Whether ``fixed`` names ``text`` as a word of its own other than in a question ('The answer is True.', not
    'Is it true?': a question asks about the choice, it does not give it)."""
    return re.search(r"(?<!\w)" + re.escape(text) + r"(?!\w)(?![\s'\"]*\?)", fixed) is not None
