"""The surface forms ``choices.gold-form`` reads besides a choice's whitespace and end punctuation: a mark that tells
the right choice apart (a leading '*' or '✓' a quiz export left, a trailing '(correct)'), quotes around it alone,
its case ('Quit eating lunch out' among lower-case distractors, an annotation artefact), and a word every right
choice begins or ends with that no other choice has ('Answer: Paris', 'Paris <-- right').

Marks and quotes are rare in real choices, so the rule's usual test (the odd choice is the gold far more often than
chance) holds for them as for a full stop. Case is not rare (a proper name, 'DNA'), so a form of case speaks only
over more rows and a larger share of them (``STRICT_ROWS``, ``STRICT_SHARE``); on the real ARC, OpenBookQA,
CommonsenseQA, HellaSwag, MMLU, PIQA, Winogrande and XCOPA rows the gold is the odd-cased choice in about a third
of the rows that have one, near chance."""

from __future__ import annotations

import unicodedata
from collections import Counter
from typing import Callable, Sequence

STRICT_ROWS = 10  # a form of case: at least this many rows with an odd choice
STRICT_SHARE = 0.9  # and the gold is it in at least this share of them
WORD_SHARE = 0.9  # the right choices that begin (or end) with one word: at least this share of the rows

# what a choice may begin with and still be plain text: quotes, brackets, signs, currency, an ellipsis, a blank
_PLAIN_START = "\"'`‘’“”«»‹›([{-−–—+±~≈<>≤≥=$€£¥.…_¿¡/\\#%&@"
_OPENING_QUOTES = "\"'`‘“«‹"
_CLOSING_QUOTES = "\"'`’”»›"


def begins_with_mark(text: str) -> bool:
    """A symbol before the text ('*Paris', '✓ Paris', '→ Paris'); not a quote, bracket or sign."""
    first = text.lstrip()[:1]
    return bool(first) and first not in _PLAIN_START and unicodedata.category(first)[0] in "PS"


def ends_with_mark(text: str) -> bool:
    """A note in brackets or a symbol after the text ('Paris (correct)', 'Paris *', 'Paris ✓')."""
    last = text.rstrip()[-1:]
    return bool(last) and (last in ")]*" or (unicodedata.category(last) in ("So", "Sm", "Sk") and last not in "°%"))


def quoted(text: str) -> bool:
    """The whole text in quotes ('"Paris"')."""
    text = text.strip()
    return len(text) >= 2 and text[0] in _OPENING_QUOTES and text[-1] in _CLOSING_QUOTES


def capitalised(text: str) -> bool:
    return text.lstrip()[:1].isupper()


def in_capitals(text: str) -> bool:
    """Written in capitals ('PARIS'), two letters or more."""
    return text.isupper() and sum(c.isalpha() for c in text) >= 2


# (what the form is, in a message; whether a choice has it; whether it is a form of case: see STRICT_*)
MARKS: tuple[tuple[str, Callable[[str], bool], bool], ...] = (
    ("begins with a mark (a symbol such as * or ✓)", begins_with_mark, False),
    ("ends with a mark or a note in brackets (such as * or '(correct)')", ends_with_mark, False),
    ("is in quotes", quoted, False),
)
CASES: tuple[tuple[str, Callable[[str], bool], bool], ...] = (
    ("is written in capitals", in_capitals, True),
    ("begins with a capital letter", capitalised, True),
)


def _words(text: str) -> tuple[str, str]:
    words = text.split()
    return (words[0], words[-1]) if words else ("", "")


def gold_word(rows: Sequence[tuple[Sequence[str], int]]) -> tuple[str, str, int] | None:
    """('begins'/'ends', the word, the first row holding it) where the right choice begins (or ends) with one word
    in at least ``WORD_SHARE`` of ``rows`` ((choices, gold) pairs) and no other choice of those rows does; else None.
    A word every right answer shares and no distractor has is an annotation left in the data ('Answer:',
    '(correct)', '<--'), whatever its characters."""
    if len(rows) < STRICT_ROWS:
        return None
    head = [_words(choices[gold]) for choices, gold in rows[:STRICT_ROWS]]
    for end, where in ((0, "begins"), (1, "ends")):
        if Counter(words[end] for words in head).most_common(1)[0][1] < WORD_SHARE * len(head):
            continue  # the first rows' right choices share no word: most rows' cannot
        counts = Counter(_words(choices[gold])[end] for choices, gold in rows)
        word, count = counts.most_common(1)[0]
        if not word or count < WORD_SHARE * len(rows):
            continue
        holding = [
            r
            for r, (choices, gold) in enumerate(rows)
            if _words(choices[gold])[end] == word
            and not any(_words(c)[end] == word for i, c in enumerate(choices) if i != gold)
        ]
        if len(holding) >= WORD_SHARE * len(rows):
            return where, word, holding[0]
    return None
