"""What a scored answer and its references share, read after an exact-match metric has scored them: the tally's
(runs/outcome_tally.py) answer-form outcomes.

- ``near_miss``: scored 0, yet equal to a reference but for typography (``loose``: case, compatibility forms,
  punctuation and decorative symbols set aside; what changes a value kept);
- ``holds_reference``: scored 0, yet holding a reference as a whole word or number inside more text ('The answer
  is 7.', ``\\boxed{7}``, '答案是7'): exact match compares the whole answer, so the number measures the reply's form;
- ``digits_joined``: scored 1, yet another number than the reference: SQuAD's normalisation deletes the mark
  between digits, so '4.2' matches '42';
- ``cut_wrong``: stopped at its max_tokens and scored 0: the answer may have been cut before it was given.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Mapping

EXACT_METRICS = frozenset({"exact_match", "em", "quasi_exact_match"})
_DOT_ABOVE = "\u0307"  # what casefold leaves of the Turkish capital İ beside its i


# a minus sign before a digit, in any of its forms ('-', U+2212, '‒', '–'): part of the number, not typography
_SIGN = re.compile(r"[-\u2212\u2012\u2013](?=\d)")
_NUMBER_SIGN = "\x00"  # what the sign becomes: no punctuation, so kept, and one character for every form
_GROUPING = re.compile(r"(?<=\d)[ \u00a0\u202f\u2009](?=\d{3}(?!\d))")  # '1 234': a thousands separator
_DECIMAL = re.compile(r"(?<=\d)[.,](?=\d)")  # a mark between digits: a decimal point or a thousands separator
_NUMBER_MARKS = {".": "\x01", ",": "\x02"}


def _folded(text: str) -> str:
    """Case folded, compatibility forms composed (NFKC), digits of any script as ASCII ('١٢٣' is '123')."""
    folded = unicodedata.normalize("NFKC", text.casefold().replace(_DOT_ABOVE, ""))
    if not folded.isascii():
        folded = "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in folded)
    return folded


def _numbers_marked(folded: str) -> str:
    """A number's sign and the mark between its digits kept as characters no typography filter removes: '5' is
    not '−5', '3.5' is not '35', nor '1,000' '1000'."""
    folded = _SIGN.sub(_NUMBER_SIGN, folded)
    return _DECIMAL.sub(lambda m: _NUMBER_MARKS[m.group()], folded)


def loose(text: str) -> str:
    """A text with case, compatibility forms and Unicode punctuation and decorative symbols removed: what an answer
    and a reference share when only their typography differs. What changes a value is kept: a number's sign in
    any form ('5' is not '−5'), a mark between digits ('3.5' is not '35'), math and currency symbols ('+', '=',
    '$'), the percent sign."""
    folded = _GROUPING.sub("", _folded(text))  # a grouping space dropped: '1 234' (NFKC made a no-break space one)
    folded = _numbers_marked(folded)
    kept = "".join(c for c in folded if c == "%" or unicodedata.category(c) not in _TYPOGRAPHY)
    return " ".join(kept.split())


_TYPOGRAPHY = frozenset({"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sk", "So"})  # Sm and Sc are kept


# containment: typography becomes a space (so '\\boxed{7}' reads 'boxed 7'), a mark between digits stays part of
# the number ('7.5' holds no '7'), and a reference counts only where no ASCII letter or digit touches it
_EDGE = "(?<![a-z0-9\x00-\x02])", "(?![a-z0-9\x00-\x02])"


def _spaced(text: str) -> str:
    folded = _numbers_marked(_folded(text))
    kept = "".join(
        " " if unicodedata.category(c) in _TYPOGRAPHY or unicodedata.category(c) == "Cf" else c for c in folded
    )
    return " ".join(kept.split())


def holds_reference(answer: str, references: list[str]) -> bool:
    """The answer holds one of the references as a whole word or number inside more text, or beside invisible
    format characters (a single ASCII letter, which 'a' or 'I' would hold by chance, is not looked for)."""
    text = _spaced(answer)
    invisible = any(unicodedata.category(c) == "Cf" for c in answer)
    for reference in references:
        ref = _spaced(reference) if isinstance(reference, str) else ""
        if not ref or (len(ref) == 1 and ref.isascii() and ref.isalpha()):
            continue
        if ref == text and not invisible:  # the reference's own marks differ (the audit's references.unwritable)
            continue
        if re.search(_EDGE[0] + re.escape(ref) + _EDGE[1], text):
            return True
    return False


_NUMBERS = re.compile(r"\d+(?:[.,]\d+)*")


def _value(token: str) -> float | None:
    """A number as written: '1,234' is 1234 (a comma before three digits groups them), '4.2' and '4,2' are 4.2."""
    grouped = re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", token)
    try:
        return float(token.replace(",", "") if grouped else token.replace(",", ".", 1).replace(",", ""))
    except ValueError:
        return None


def digits_joined(answer: str, references: list[str]) -> bool:
    """Scored right, yet a number of the same digits and another value than its reference: '4.2' for '42'. Only
    an answer and references of one number each are read (a worked solution's many numbers say nothing here),
    and a reference of the answer's own value clears it."""
    mine = _NUMBERS.findall(unicodedata.normalize("NFKC", answer))
    if len(mine) != 1:
        return False
    value, digits = _value(mine[0]), re.sub(r"\D", "", mine[0])
    joined = False
    for reference in references:
        theirs = _NUMBERS.findall(unicodedata.normalize("NFKC", reference)) if isinstance(reference, str) else []
        if len(theirs) != 1:
            continue
        if _value(theirs[0]) == value:
            return False
        joined = joined or re.sub(r"\D", "", theirs[0]) == digits
    return joined


def scored_zero(record: Mapping[str, Any]) -> bool:
    """Every per-sample metric of the record is 0 (none above it)."""
    scores = record.get("metrics")
    if not isinstance(scores, Mapping):
        return False
    values = [v for v in scores.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return bool(values) and all(v == 0 for v in values)
