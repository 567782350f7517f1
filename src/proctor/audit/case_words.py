"""Whether a row writes case as meaning: two choices that differ only in case ('rr' / 'Rr') are two answers where
the row itself uses the differently-cased forms as distinct words.

``subject.reads_alike`` calls 'Paris' / 'PARIS' one answer (a plain change of case), while in allele notation
('RR', 'Rr', 'rr'), a unit ('mS' / 'ms') or an acronym the case is the whole answer. A pair is read as two answers
where the row's question, or its other choices, write two case forms of a differing word away from a sentence's
start (ARC's "A man with an RR allele combination ... a woman with an rr allele combination"), or where three or
more choices are one text only up to case (a notation: no data lists a typo three times). The pair's own texts are
no evidence, nor are the choices as a lettered listing in the prompt repeats them.
"""

from __future__ import annotations

import re
from typing import Sequence

_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?:^|[.!?:;\n])\W*$")  # what precedes a word a sentence or a line starts with
NOTATION = 3  # choices that are one text up to case: a notation, not a typo


def _listed(prompt: str, choice: str) -> str:
    """``prompt`` without ``choice`` where a listing prints it after a label ('A. rr', '(B) Rr', 'C) RR')."""
    if not choice.strip():
        return prompt
    label = r"(?:\(?[A-Za-z0-9]\)|[A-Za-z0-9][.):])"
    return re.sub(rf"(^|\s){label}\s*{re.escape(choice.strip())}(?=\s|$)", r"\1 ", prompt)


def _forms(texts: Sequence[str]) -> dict[str, set[str]]:
    """Each word's case forms (by its casefolded key) as the texts write it away from a sentence's start."""
    forms: dict[str, set[str]] = {}
    for text in texts:
        for match in _WORD.finditer(text):
            if not _SENTENCE_END.search(text[: match.start()]):
                forms.setdefault(match.group().casefold(), set()).add(match.group())
    return forms


def case_is_meaning(first: int, second: int, choices: Sequence[str], prompt: str) -> bool:
    """Whether choices ``first`` and ``second`` (one text up to case) are two answers in this row."""
    a, b = choices[first], choices[second]
    key = a.casefold().split()
    alike = [c.strip() for c in choices if c.casefold().split() == key]
    if len(alike) >= NOTATION and len(set(alike)) == len(alike):
        return True
    differing = {x.casefold() for x, y in zip(_WORD.findall(a), _WORD.findall(b)) if x != y}
    if not differing:
        return False
    for choice in choices:
        prompt = _listed(prompt, choice)
    others = [c for i, c in enumerate(choices) if i not in (first, second)]
    forms = _forms([prompt, *others])
    return any(len(forms.get(word, ())) >= 2 for word in differing)
