"""Reading the option a lettered reply names (``--mc-format generate``, kinds/mc_generate.py).

A reply is asked for a letter and often gives a sentence. Taking its first standalone letter misreads the forms
real models write: 'It is not C; the correct option is B.' (a negated letter first), 'Between A and B, I choose
B.' (the letters weighed before the pick), 'I think B.' with nine options (the pronoun is option I), the option
list restated before 'Answer: B', '100' among the options '1', '10', '100' (every numeral starts with '1'). So a
reply is read in order of how surely each part names the answer:

1. the letter after an answer cue ('the answer is B', 'Answer: (B)', 'correct option is B', 'I choose B'), the
   first such when there are several (a base model runs on into the next question's 'Answer: C');
2. a leading letter ('B', 'B.', '(B) ...');
3. 'option B' / 'choice B';
4. the option's own text the reply starts with, the longest that ends at a word boundary;
5. the first other standalone letter.

A letter after a negation ('not C', 'rather than C') or inside a restated option list ('A. Paris' lines) names
no answer; the pronoun 'I' followed by a word ('I think', "I'd") is a word, not option I. A reply that still names
several options (or whose letter and the option text it starts with disagree) is read as above and marked
``ambiguous``: runs/outcome_tally.py counts those replies, so a reading the reply does not settle is never
silent.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Sequence

LETTERS = string.ascii_uppercase

_WRAPPERS = re.compile(r"\\(?:boxed|text|textbf|mathrm|mathbf)\{([^{}]*)\}")  # '\boxed{B}' reads as 'B'
_MARKDOWN = re.compile(r"[*_`]")  # '**B**' reads as 'B'
# an answer cue: the letter right after it is the reply's pick
_CUE = re.compile(
    r"(?i:\b(?:(?:final|correct|right|best|true)\s+)?(?:answer|option|choice)"
    r"(?:\s+(?:is|would\s+be|will\s+be|must\s+be|should\s+be|here\s+is))?\s*[:=]"
    r"|\b(?:the\s+)?(?:answer|correct\s+(?:option|choice)|right\s+(?:option|choice)|best\s+(?:option|choice))"
    r"\s+(?:is|would\s+be|will\s+be|must\s+be|should\s+be)"
    r"|\bI\s*(?:'d|’d|\s+would|\s+will|\s+)?\s*(?:choose|chose|pick|picked|select|selected|go\s+with|say))"
    r"\s*[(\[{]?\s*$"
)
_OPTION_WORD = re.compile(r"(?i:\b(?:option|choice))\s+[(\[]?\s*$")
# a negation just before a letter: 'not C', "isn't C", 'rather than C', 'instead of (C)'
_NEGATED = re.compile(
    r"(?i:(?:\b(?:not|never|nor|rather\s+than|instead\s+of|except(?:\s+for)?|other\s+than|unlike)|n't|n’t))"
    r"\s+(?:(?i:option|choice|answer)\s+)?[(\[]?\s*$"
)
# 'I' then a word is the pronoun ('I think', "I'd"); a few words that follow a letter ('I is correct') are not
_PRONOUN_AFTER = re.compile(r"(?:['’]\w|\s+(?!(?:is|was|and|or|because|since|as|seems|looks|fits|matches)\b)[a-z])")
_LOWER_END = re.compile(r"\s*[).,;:\]}]*\s*(?:$|\n)")  # nothing but punctuation after it, to the line's end
_LISTED = re.compile(r"^\s*[(\[]?([A-Z])\s*[.):\]]\s*(.+?)\s*$")


@dataclass(frozen=True)
class Reading:
    position: int | None  # the displayed position (0-based) the reply names; None: no option read
    ambiguous: str | None = None  # why the reply does not settle it ('names B and C; read B'), else None


def _letter_spans(text: str, n: int) -> list[tuple[int, int]]:
    """(start, position) of each standalone offered letter that may name an option: not negated, not the
    pronoun 'I'."""
    found = []
    offered = LETTERS[:n] + LETTERS[:n].lower()
    for match in re.finditer(rf"(?<![A-Za-z0-9'’])([{offered}])(?![A-Za-z0-9'’-])", text):
        before, after = text[: match.start()], text[match.end() :]
        if _NEGATED.search(before):
            continue
        if match.group(1).islower() and not (_CUE.search(before) and _LOWER_END.match(after)):
            continue  # a lower-case letter only as a cue's whole answer ('the answer is b.'), never the article 'a'
        if match.group(1) == "I" and _PRONOUN_AFTER.match(after) and not _CUE.search(before):
            continue
        found.append((match.start(), LETTERS.index(match.group(1).upper())))
    return found


def _without_listing(text: str, choices: Sequence[str]) -> str:
    """The reply without a restated option list (two or more 'A. <option A's text>' lines)."""
    lines = text.split("\n")
    listed = []
    for k, line in enumerate(lines):
        match = _LISTED.match(line)
        if match is None:
            continue
        position = LETTERS.index(match.group(1))
        if position < len(choices) and match.group(2).strip().casefold() == choices[position].strip().casefold():
            listed.append(k)
    if len(listed) < 2:
        return text  # one 'B. Rome' line is the answer itself
    return "\n".join("" if k in listed else line for k, line in enumerate(lines))


def _text_option(text: str, choices: Sequence[str]) -> int | None:
    """The option whose text the reply starts with, the longest ending at a word boundary ('100' is not '1')."""
    lowered = text.strip().casefold()
    best: tuple[int, int] | None = None
    for k, choice in enumerate(choices):
        own = choice.strip().casefold()
        if not own or not lowered.startswith(own):
            continue
        rest = lowered[len(own) :]
        if rest and (rest[0].isalnum() and own[-1].isalnum()):
            continue  # '1' is the start of '100', not the option '1'
        if best is None or len(own) > best[0]:
            best = (len(own), k)
    return None if best is None else best[1]


def read_letter(text: str, n: int, choices: Sequence[str] = ()) -> Reading:
    """The option a reply names (see the module's docstring), and whether the reply leaves it in doubt."""
    n = min(n, len(LETTERS))
    cleaned = _without_listing(_MARKDOWN.sub("", _WRAPPERS.sub(r"\1", text)), choices)
    spans = _letter_spans(cleaned, n)
    cued = [p for start, p in spans if _CUE.search(cleaned[:start])]
    leading = next((p for start, p in spans if not cleaned[:start].strip(" \t\n([")), None)
    worded = [p for start, p in spans if _OPTION_WORD.search(cleaned[:start])]
    texted = _text_option(cleaned, choices)
    if leading is not None:  # 'B. Paris': the text after the letter names an option too
        after = re.sub(rf"^\s*[(\[]?\s*{LETTERS[leading]}\s*[.):\]]?", "", cleaned.strip(), count=1)
        texted = _text_option(after, choices) if after != cleaned.strip() else texted
    position: int | None
    if cued:
        position = cued[0]
        named = set(cued) | ({texted} if texted is not None else set())
    else:
        first = next((p for _, p in spans), None)
        position = next(
            (p for p in (leading, worded[0] if worded else None, texted, first) if p is not None),
            None,
        )
        named = {p for _, p in spans} | ({texted} if texted is not None else set())
    ambiguous = None
    if position is not None and len(named) > 1:
        letters = [LETTERS[p] for p in sorted(named)]
        listed = ", ".join(letters[:-1]) + f" and {letters[-1]}"
        ambiguous = f"names {listed}; read {LETTERS[position]}"
    return Reading(position, ambiguous)
