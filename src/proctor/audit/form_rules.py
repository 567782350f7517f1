"""``choices.gold-form``: the right choice alone has another surface form than the others: it alone ends with a
carriage return or a line break (a CSV written on Windows), ends with a full stop, or begins with a space; or it
alone carries a mark, quotes, a capital or a word of its own (``gold_marks.py``).
Log-likelihood and acc_norm then score the artefact, which marks (or handicaps) the answer in every row.

Per probed row, a form (a feature of a choice's edges) is *odd* where one choice alone has it (or, of three or
more, one alone lacks it); the rule speaks where, over the rows with an odd choice (``ODD_ROWS`` of them, or
``ODD_SHARE`` of the rows probed), it is the gold far more often than chance (one in the number of choices) would
have it, at a threshold divided among the forms tried. A fixed set of choices (probsem's queries, a label set)
in which one choice alone carries whitespace or a control character is named too: that one answer carries the
artefact in every row.
"""

from __future__ import annotations

import math
import re
from typing import Callable, Iterator, Mapping, Sequence

from proctor.audit import gold_marks
from proctor.audit.order_rules import choices_setting, setting_line
from proctor.audit.probe_rows import MIN_ROWS
from proctor.audit.source_rows import documents
from proctor.audit.subject import READER_FIELDS, AuditSubject
from proctor.core.audit import AuditRule, Hit

FORM_PROBE_ROWS = 1000  # the form of a row's choices is cheap to read: a larger probe gives the test its power
HEAD = 50  # the forms that no search skips are read in all probed rows only where one of these has the gold odd
GOLD_SHARE = 0.75  # of the rows with an odd choice, the gold is it in at least this share
CHANCE = 0.02  # and chance (the odd choice at a random position) gives that share this rarely, over all forms tried
# rows with an odd choice: at least this many, or this share of the probed rows. Real text has a few odd choices
# by nature (MMLU anatomy: 5 of 135 rows, 4 with the gold alone ending in '.'): an artefact of the data's making
# marks many rows, or most of a small task's
ODD_ROWS = 10
ODD_SHARE = 0.05
_END_PUNCTUATION = ".!?;,:"
_CONTROL = re.compile("[\x00-\x1f\x7f]")


def _control(text: str) -> bool:
    return _CONTROL.search(text) is not None


# (what the form is, in a message; whether a choice has it), most telling first
FORMS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("holds a control character (a carriage return, a line break, a tab)", _control),
    ("ends with whitespace", lambda t: t[-1:].isspace()),
    ("begins with whitespace", lambda t: t[:1].isspace()),
    (f"ends with punctuation ({' '.join(_END_PUNCTUATION)})", lambda t: t.rstrip()[-1:] in _END_PUNCTUATION),
)
# per form, a search of the probed choices joined by NUL that finds each choice with the form (\s is what
# str.isspace and str.rstrip take for whitespace): where it finds none, no choice is odd, and the rows need not be
# read one by one (most tasks' choices have none of the forms)
_BLANK_OR_PUNCTUATED = f"(?:[{re.escape(_END_PUNCTUATION)}]|\\A|\\x00)"  # a blank choice too: '' is in any text
_MAY_HAVE = (
    re.compile("[\x01-\x1f\x7f]"),
    re.compile(r"\s(?=\x00|\Z)"),
    re.compile(r"(?:\A|\x00)\s"),
    re.compile(_BLANK_OR_PUNCTUATED + r"\s*(?=\x00|\Z)"),
)


# every form in the order the rule tries them: (form, whether a choice has it, the search that may skip it, whether
# it is a form of case that needs more rows): whitespace first, then a mark, then punctuation and case
_ORDER: tuple[tuple[str, Callable[[str], bool], re.Pattern[str] | None, bool], ...] = (
    *((form, has, search, False) for (form, has), search in zip(FORMS[:3], _MAY_HAVE[:3])),
    *((form, has, None, strict) for form, has, strict in gold_marks.MARKS),
    (FORMS[3][0], FORMS[3][1], _MAY_HAVE[3], False),
    *((form, has, None, strict) for form, has, strict in gold_marks.CASES),
)


def odd_one(choices: Sequence[str], has: Callable[[str], bool]) -> int | None:
    """The one choice whose form differs from all the others' (it alone has it; of three or more, it alone lacks
    it), or None."""
    marks = [has(c) for c in choices]
    count = sum(marks)
    if count == 1:
        return marks.index(True)
    if count == len(marks) - 1 and len(marks) >= 3:
        return marks.index(False)
    return None


def _tail(hits: int, rows: int, p: float) -> float:
    """The chance of at least ``hits`` of ``rows`` with probability ``p`` each (the binomial tail)."""
    total = 0.0
    for k in range(hits, rows + 1):
        log = math.lgamma(rows + 1) - math.lgamma(k + 1) - math.lgamma(rows - k + 1)
        total += math.exp(log + k * math.log(p) + (rows - k) * math.log1p(-p))
    return total


def field_of(doc: Mapping[str, object], text: str, default: str = "choices") -> str:
    """The row's field that holds ``text`` (a column, or a list of choices), else ``default``."""
    for key, value in doc.items():
        if key in READER_FIELDS:
            continue
        if value == text or (isinstance(value, list) and text in value):
            return key
    return default


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:20]) + "..." + repr(text[-12:])


def gold_form(subject: AuditSubject) -> Iterator[Hit]:
    samples = subject.samples
    rows = [r for r, s in enumerate(samples[:FORM_PROBE_ROWS]) if len(s.gold) == 1 and len(s.choices) >= 2]
    if not rows:
        return
    if len({samples[r].choices for r in rows}) == 1:
        yield from _fixed_set(subject, samples[rows[0]].choices)
        return
    probed = [c for r in rows for c in samples[r].choices]
    joined = "\x00".join(probed)
    exact = joined.count("\x00") != len(probed) - 1  # a choice holds a NUL: the search would not tell them apart
    for form, has, may_have, strict in _ORDER:
        if may_have is not None and not exact and may_have.search(joined) is None:
            continue  # no probed choice has the form: none is odd
        if may_have is None and not any(odd_one(samples[r].choices, has) == samples[r].gold[0] for r in rows[:HEAD]):
            continue  # a mark or a case that tells the gold apart does so in most rows: in one of the first ones
        odd = [(r, i) for r in rows if (i := odd_one(samples[r].choices, has)) is not None]
        on_gold = [r for r, i in odd if i == samples[r].gold[0]]
        least, share = (gold_marks.STRICT_ROWS, gold_marks.STRICT_SHARE) if strict else (MIN_ROWS, GOLD_SHARE)
        if len(odd) < least or len(on_gold) < share * len(odd):
            continue
        if len(odd) < ODD_ROWS and len(odd) < ODD_SHARE * len(rows):
            continue  # a few odd rows among many: real text, not an artefact of the data's making
        chance = sum(1 / len(samples[r].choices) for r, _ in odd) / len(odd)
        if _tail(len(on_gold), len(odd), chance) > CHANCE / len(_ORDER):
            continue  # each form tried is one more chance to find a pattern by luck (Bonferroni)
        first = samples[on_gold[0]]
        text = first.choices[first.gold[0]]
        # the right choice is the odd one by having the form, or (of three or more) by lacking it
        which = f"the right choice alone {form}" if has(text) else f"every choice but the right one {form}"
        yield subject.at_row(
            first.sample,
            f"{which} ({_shown(text)}) in {len(on_gold)} of the {len(odd)} probed rows where "
            f"one choice's form differs from the others' (chance: about 1 in {round(1 / chance)}): the scores "
            "compare a formatting artefact that marks the answer (a CSV written on Windows leaves '\\r' on the "
            "last column; a full stop or space added to the answer column only; a '*' or '(correct)' a quiz "
            "export left)",
            field_of(documents(subject)[on_gold[0]], text),
        )
        return
    yield from _gold_word(subject, rows)


def _gold_word(subject: AuditSubject, rows: list[int]) -> Iterator[Hit]:
    """The right choice begins (or ends) with one word in nearly every probed row, which no other choice has."""
    samples = subject.samples
    found = gold_marks.gold_word([(samples[r].choices, samples[r].gold[0]) for r in rows])
    if found is None:
        return
    where, word, at = found
    first = samples[rows[at]]
    text = first.choices[first.gold[0]]
    yield subject.at_row(
        first.sample,
        f"the right choice {where} with {word!r} ({_shown(text)}) in nearly every one of the {len(rows)} probed "
        "rows, and no other choice does: the word marks the answer (an annotation left in the data), so the "
        "scores compare the mark rather than the answers",
        field_of(documents(subject)[rows[at]], text),
    )


def _fixed_set(subject: AuditSubject, choices: Sequence[str]) -> Iterator[Hit]:
    """The same choices in every row, one of them alone with whitespace or a control character at an edge."""
    for form, has in FORMS[:3]:
        i = odd_one(choices, has)
        if i is None or (len(choices) >= 3 and not has(choices[i])):
            continue  # of a label set, the one that has the artefact is named (not the one that lacks it)
        field = choices_setting(subject)
        yield Hit(
            f"the choice {choices[i]!r} alone {form} of the choices every row offers ({', '.join(map(repr, choices))}"
            "): the artefact raises or lowers that one answer's score in every row, whichever is right",
            file=subject.file,
            line=setting_line(subject, field),
            field=field,
        )
        return


RULES = (
    AuditRule(
        "choices.gold-form",
        "warning",
        "The right choice alone has another surface form (a trailing '\\r' or line break, a full stop, a leading "
        "space, a mark such as '*' or '(correct)', quotes, its case, a word of its own) far more often than chance, "
        "or one choice of a fixed set alone carries whitespace.",
        gold_form,
    ),
)
