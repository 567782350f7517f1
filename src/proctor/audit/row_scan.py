"""One pass over a task's prepared rows that finds the few rows the per-row rules need to look at closely.

A task may have 100,000 rows and the audit may add at most 5% to ``proctor validate`` (issue 45): so the rules
that compare texts within a row (choices a reader takes for one), across rows (an item asked twice, ids that
look alike: ``look_alike_ids.py``) or look for damaged text do not each walk every row in Python. Each choice
has a cheap key that every near-duplicate shares (lower case, spaces and punctuation dropped; a non-ASCII row's
keys are ``subject.near``'s); the rows where two keys meet are kept, and the rules check them with the exact
comparisons of ``subject.loose`` / ``subject.near``, which decide.

Nor does the pass make an object per row or per choice where it can help it: the task's choices (prompts, ids)
are joined into texts that single calls of C lower, strip and split, and the keys are compared by a fingerprint
that equal keys share (their length and five of their bytes, in numpy arrays: ``choice_keys.py``). Only the rows
whose fingerprints meet are compared again, exactly, in Python. What the pass finds is what the plain per-row
definitions find (``tests/audit/test_row_scan.py`` holds them and compares).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, replace
from itertools import chain, repeat
from typing import Any, Callable, Sequence

import numpy as np
import numpy.typing as npt

from proctor.audit.choice_keys import (
    ITEM,
    LOWER,
    PIECE,
    WIDE_SPACES,
    Choices,
    Fingerprints,
    Flags,
    cheap_key,
    encode,
    fingerprints,
    flags_of,
)
from proctor.audit.columns import ROW, Columns
from proctor.audit.look_alike_ids import SPACING, id_clashes
from proctor.prompts.builder import PreparedSample

# what a CSV or pandas reader makes of a missing value, as the cheap key writes it
PLACEHOLDER_KEYS = frozenset({b"na", b"nan", b"none", b"null", b"nil", b"undefined"})
TRUTH_KEYS = frozenset({b"true", b"false"})  # what str() makes of a truth value, as a cheap key
# options that point at other options by place or letter ('All of the above', 'Both A and B'), as cheap keys
_PAIRS = [(a, b) for i, a in enumerate("abcde") for b in "abcde"[i + 1 :]]
REFERRING_KEYS = frozenset(
    {
        f"{quantifier}of{the}{where}".encode()
        for quantifier in ("all", "none", "both", "neither", "any")
        for the in ("the", "")
        for where in ("above", "following", "these", "thesechoices", "theseoptions", "theabovechoices")
    }
    | {f"{x}{a}{y}{b}".encode() for a, b in _PAIRS for x, y in (("both", "and"), ("", "and"), ("neither", "nor"))}
    | {f"{x}{a}{y}{b}".encode() for a, b in _PAIRS for x, y in (("either", "or"), ("", "or"))}
    | {b"alloftheabovearecorrect", b"noneoftheaboveiscorrect", b"noneoftheabovearecorrect"}
)
# two or more choices that are numbers: "4" and "4.0" are one answer, which the cheap key does not see
_NUMBERS = re.compile(r"(?:^|\x00)\s*[+-]?(?:\d+\.?\d*|\.\d+)\s*(?=\x00|$)")
_ROW = ROW  # between rows in a joined column (a text holding it is read row by row)

PAIRWISE_WIDTH = 8  # rows of up to this many choices have each pair compared; wider ones are sorted
FEW_ROWS = 0.125  # rows of shared choices up to this share of a task have their prompts read one by one
_MIX = np.uint64(0x9E3779B97F4A7C15)  # an odd constant: spreads a fingerprint's bits before they are summed


@dataclass
class RowScan:
    """Row positions (into ``subject.samples``) that a rule should look at."""

    choice_collisions: list[int] = field(default_factory=list)  # two choices share a cheap key
    placeholder_choices: list[int] = field(default_factory=list)  # a choice reads NA, nan, None, null
    repeats: list[tuple[int, int]] = field(default_factory=list)  # (row, the earlier row of the same item)
    id_clashes: list[tuple[int, int]] = field(default_factory=list)  # (row, the earlier row whose id looks alike)
    unusual_text: list[int] = field(default_factory=list)  # non-ASCII, '&' or a backslash in a prompt or choice
    truth_choices: list[int] = field(default_factory=list)  # a choice reads True or False
    # (row, the earlier row) of one multiple-choice item up to case and the choices' order, not a repeat as above
    reorders: list[tuple[int, int]] = field(default_factory=list)
    referring_choices: list[int] = field(default_factory=list)  # a choice reads 'All of the above', 'A and B'


def _positions(flags: Flags) -> list[int]:
    """The positions of the flags that are set, as Python ints."""
    positions: list[int] = np.flatnonzero(flags).tolist()
    return positions


# -- choices that collide within a row ----------------------------------------------------------------------


def _meeting_rows(choices: Choices) -> Flags:
    """Per row: two of its choices' fingerprints are equal."""
    widths, fingerprints, n = choices.widths, choices.fingerprints, len(choices.rows)
    width = int(widths[0])
    if bool((widths == width).all()):  # most tasks: every row has as many choices
        by_row = fingerprints.reshape(n, width)
        meeting: Flags = np.zeros(n, dtype=np.bool_)
        if width <= PAIRWISE_WIDTH:  # each pair of positions compared in whole columns (cheaper than a sort per row)
            for a in range(width):
                for b in range(a + 1, width):
                    meeting |= by_row[:, a] == by_row[:, b]
        else:
            in_order = np.sort(by_row, axis=1)
            meeting = (in_order[:, 1:] == in_order[:, :-1]).any(axis=1)
        return meeting
    order = np.lexsort((fingerprints, choices.row_of))
    rows, in_order = choices.row_of[order], fingerprints[order]
    same = (rows[1:] == rows[:-1]) & (in_order[1:] == in_order[:-1])
    return np.bincount(rows[1:][same], minlength=n) > 0


def _numbers_clash(joined: str, choices: Sequence[str]) -> bool:
    if "." not in joined or len(_NUMBERS.findall(joined)) < 2:  # "4" and "4.0": a point is needed
        return False
    values = []
    for choice in choices:
        try:
            values.append(float(choice))
        except ValueError:
            continue
    return len(set(values)) < len(values)


def _maybe_numbers(choices: Choices) -> Flags:
    """Per row: two choices may be numbers (made of a number's characters only; or a non-ASCII choice)."""
    n = len(choices.rows)
    if not choices.point:
        return np.zeros(n, dtype=np.bool_)  # "4" and "4.0": a point is needed (most tasks have none)
    if choices.numeric is None:  # not aligned
        return np.ones(n, dtype=np.bool_)
    return (np.bincount(choices.row_of[choices.numeric], minlength=n) >= 2) | choices.foreign


def _choice_collisions(choices: Choices, near: Callable[[str], str]) -> list[int]:
    """Rows where two choices share a cheap key or are one number: the candidates, checked exactly."""
    if not len(choices.row_of):
        return []
    maybe = _meeting_rows(choices) | choices.foreign if choices.aligned else np.ones(len(choices.rows), np.bool_)
    numbers = _maybe_numbers(choices)
    out = []
    for row in np.flatnonzero((maybe | numbers) & (choices.widths >= 2)).tolist():
        keys = choices.exact_keys(row, near)
        repeated = len(set(keys)) < len(keys)
        if repeated or (numbers[row] and _numbers_clash(ITEM.join(choices.rows[row]), choices.rows[row])):
            out.append(row)
    return out


def _fingerprint_of(key: bytes) -> int:
    return int(fingerprints(key + b"\x00")[1][0])


def _prints_of(keys: frozenset[bytes]) -> npt.NDArray[np.uint64]:
    return np.array(sorted(_fingerprint_of(k) for k in keys), dtype=np.uint64)


_PLACEHOLDER_PRINTS = _prints_of(PLACEHOLDER_KEYS)
_TRUTH_PRINTS = _prints_of(TRUTH_KEYS)
_REFERRING_PRINTS = np.sort(_prints_of(REFERRING_KEYS))  # sorted: looked up by binary search


def _rows_withcheap_key(choices: Choices, keys: frozenset[bytes], prints: npt.NDArray[np.uint64]) -> list[int]:
    """Rows of two or more choices one of which has one of ``keys`` as its cheap key (placeholders, truth values;
    and every non-ASCII row: its keys are near()'s, which the rule reads again)."""
    if not len(choices.row_of):
        return []
    if choices.aligned:
        maybe = np.flatnonzero(np.isin(choices.fingerprints, prints)).tolist()
        flags = np.zeros(len(choices.row_of), dtype=np.bool_)
        flags[[i for i in maybe if choices.key_at(i) in keys]] = True
    else:
        flags = flags_of(lambda c: cheap_key(c) in keys, choices.items)
    marked = choices.rows_where(flags) | choices.foreign
    return _positions(marked & (choices.widths >= 2))


def _rows_with_key(choices: Choices, keys: frozenset[bytes], prints: npt.NDArray[np.uint64]) -> list[int]:
    """Rows with a choice whose cheap key is one of ``keys``, told by the fingerprints alone (a non-ASCII row's
    ASCII choices keep their cheap keys; a task whose choices hold a NUL is read choice by choice)."""
    if not len(choices.row_of):
        return []
    if not choices.aligned:
        return _positions(choices.rows_where(flags_of(lambda c: cheap_key(c) in keys, choices.items)))
    # a binary search of the sorted prints: np.isin sorts the whole column for a hundred keys (three times the cost)
    at = np.searchsorted(prints, choices.fingerprints)
    at[at == len(prints)] = 0
    maybe = np.flatnonzero(prints[at] == choices.fingerprints)
    rows = choices.row_of[maybe]
    offsets = maybe - np.searchsorted(choices.row_of, rows)  # the choice's place in its row (row_of is sorted)
    found = {r for r, k in zip(rows.tolist(), offsets.tolist()) if cheap_key(choices.rows[r][k]) in keys}
    return sorted(found)


# -- items asked twice --------------------------------------------------------------------------------------


def _bare(text: str) -> str:
    """A text as the scan compares prompts: case and whitespace dropped."""
    return "".join(text.casefold().split())


def _text_hashes(texts: Sequence[str], whole: str) -> npt.NDArray[np.int64]:
    """Per text, a hash that texts equal up to case and spacing share (of ``_bare``'s text); ``whole``: the texts
    joined by the row separator."""
    if not whole.isascii():
        whole = WIDE_SPACES.sub("", whole).casefold()  # (ASCII letters are lowered below, as casefold lowers them)
    bare: list[Any] = encode(whole).translate(LOWER, SPACING).split(_ROW.encode())
    if len(bare) != len(texts):  # a text holds the row separator
        bare = list(map(_bare, texts))
    return np.fromiter(map(hash, bare), dtype=np.int64, count=len(texts))


def _choice_row_prints(choices: Choices) -> Fingerprints:
    """Per row, a fingerprint that rows of the same choices share, in any order and up to case (a copy of a row
    with its choices reordered or lowered is the same item: ``reorders``)."""
    n = len(choices.rows)
    if not choices.aligned:
        keys = (ITEM.join(sorted(map(loose_choice, row))) for row in choices.rows)
        return np.fromiter(map(hash, keys), dtype=np.int64, count=n).view(np.uint64)
    starts = np.cumsum(choices.widths) - choices.widths
    # each item's fingerprint * _MIX, mixed and summed per row (a sum does not see the order), made in place
    mixed = choices.fingerprints * _MIX
    mixed ^= mixed >> np.uint64(29)
    total = np.zeros(len(mixed) + 1, dtype=np.uint64)
    np.cumsum(mixed, out=total[1:])
    prints: Fingerprints = total[starts + choices.widths] - total[starts]
    return prints


def _item(sample: PreparedSample, text: str) -> tuple[str, ...]:
    """What an item is, as ``samples.duplicate`` compares it: the prompt (spacing aside) and choices, or text."""
    if sample.text is not None:
        return (" ".join(sample.text.split()),)
    return (" ".join(text.split()), ITEM.join(sample.choices))


def loose_choice(choice: str) -> str:
    """A choice as ``reorders`` compares it: case and runs of whitespace aside."""
    return " ".join(choice.casefold().split())


def _loose_item(sample: PreparedSample, text: str) -> tuple[str, ...]:
    """A multiple-choice item up to case, spacing and the choices' order: its prompt and its choices, sorted."""
    return (" ".join(text.casefold().split()), *sorted(map(loose_choice, sample.choices)))


def _meeting(prints: Fingerprints) -> Flags:
    """Per row: whether another row has the same print."""
    meeting = np.zeros(len(prints), dtype=np.bool_)
    if bool((np.diff(np.sort(prints)) != 0).all()):
        return meeting  # all differ (most tasks)
    order = np.argsort(prints, kind="stable")
    same = prints[order][1:] == prints[order][:-1]
    meeting[order[1:][same]] = True
    meeting[order[:-1][same]] = True
    return meeting


def _repeats(
    samples: Sequence[PreparedSample], own: list[str | None], texts: Sequence[str], choices: Choices
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(row, the earlier row) for items asked twice: the same prompt (spacing aside) and choices, or text
    (``own``: each sample's own text); and for multiple-choice items asked twice up to case and the choices' order
    (``reorders``). Rows of the same choices (in any order, up to case) are found first (in most multiple-choice
    tasks a row's choices tell it apart, and no prompt need be read); their prompts then."""
    n = len(samples)
    texts_only = own.count(None) != n  # perplexity rows: the item is the text alone
    choice_prints = _choice_row_prints(choices)
    if texts_only:
        choice_prints[np.fromiter((o is not None for o in own), dtype=np.bool_, count=n)] = 0
    rows = np.flatnonzero(_meeting(choice_prints))
    if not len(rows):
        return [], []
    asked = [o if o is not None else t for o, t in zip(own, texts)] if texts_only else texts
    if len(rows) < FEW_ROWS * n:  # a few rows: their texts one by one
        hashes = np.fromiter((hash(_bare(asked[i])) for i in rows.tolist()), np.int64, count=len(rows))
    else:
        hashes = _text_hashes(asked, _ROW.join(asked))[rows]
    rows = rows[_meeting(hashes.view(np.uint64) * _MIX + choice_prints[rows])]
    first: dict[tuple[str, ...], int] = {}
    loose: dict[tuple[str, ...], int] = {}
    out, reorders = [], []
    for i in rows.tolist():  # every row of an item asked twice (and a few others), in order
        sample = samples[i]
        item = _item(sample, texts[i])
        if item == ("", "") or item == ("",):
            continue  # nothing asked (BLiMP-style rows are told apart by their choices)
        earlier = first.setdefault(item, i)
        if earlier != i:
            out.append((i, earlier))
        elif sample.text is None and len(sample.choices) >= 2:  # a generated answer's case may be what is asked
            earlier = loose.setdefault(_loose_item(sample, texts[i]), i)
            if earlier != i:
                reorders.append((i, earlier))
    return out, reorders


def _decomposed(text: str) -> bool:
    return not text.isascii() and not unicodedata.is_normalized("NFC", text)  # (isascii reads a flag: O(1))


def _composed(
    samples: Sequence[PreparedSample], texts: Sequence[str], columns: Columns, choices: Choices, ascii_texts: bool
) -> tuple[Sequence[PreparedSample], Sequence[str], Columns, Choices]:
    """The rows as ``_repeats`` compares them: a row typed in decomposed accents (Unicode NFD, 'Tích' as 'Ti' and
    two combining marks) is the same item to a reader as its composed twin, so such rows' prompts and choices are
    composed (NFC) first. Most tasks hold none: their own columns are returned, at one flag read per row."""
    odd = [] if ascii_texts else [i for i, t in enumerate(texts) if _decomposed(t)]
    if not choices.ascii:
        odd += [i for i, row in enumerate(columns.choices) if any(map(_decomposed, row))]
    if not odd:
        return samples, texts, columns, choices
    nfc = unicodedata.normalize
    samples, texts = list(samples), list(texts)
    for i in set(odd):
        s = samples[i]
        text = None if s.text is None else nfc("NFC", s.text)
        samples[i] = replace(s, choices=tuple(nfc("NFC", c) for c in s.choices), text=text)
        texts[i] = nfc("NFC", texts[i])
    composed = Columns(samples)
    composed.prompt_texts = texts
    return samples, texts, composed, Choices.of(composed.choices, composed.choice_counts)


# -- text a reader should look at -----------------------------------------------------------------------------


def _plain(whole: str | bytes, backslash: bool) -> bool:
    """Whether a joined column (a text, or its UTF-8) is ASCII without '&' (nor, with ``backslash``, a backslash)."""
    if isinstance(whole, bytes):
        return whole.isascii() and b"&" not in whole and not (backslash and b"\\" in whole)
    return whole.isascii() and "&" not in whole and not (backslash and "\\" in whole)


def _odd(items: Sequence[str], backslash: bool) -> Flags:
    """Per item: non-ASCII, or holding '&' (or, with ``backslash``, a backslash)."""
    flags = ~flags_of(str.isascii, items) | flags_of(str.__contains__, items, repeat("&"))
    return flags | flags_of(str.__contains__, items, repeat("\\")) if backslash else flags


def _unusual(references: Sequence[Sequence[str]], texts: Sequence[str], choices: Choices) -> tuple[list[int], bool]:
    """Rows whose prompt, a choice or a reference is non-ASCII or holds '&', or whose prompt holds a backslash;
    and whether every prompt is ASCII (``_composed`` then has no prompt to compose)."""
    rows = np.zeros(len(texts), dtype=np.bool_)
    ascii_texts = True
    # the prompts joined a piece at a time, as the choices are: one text of them all would be fresh memory
    if not all(_plain(_ROW.join(texts[at : at + PIECE]), backslash=True) for at in range(0, len(texts), PIECE)):
        non_ascii = ~flags_of(str.isascii, texts)
        ascii_texts = not non_ascii.any()
        rows |= (
            non_ascii | flags_of(str.__contains__, texts, repeat("&")) | flags_of(str.__contains__, texts, repeat("\\"))
        )
    if not choices.plain:
        rows |= choices.rows_where(_odd(choices.items, backslash=False))
    items = list(chain.from_iterable(references))
    if not _plain("".join(items), backslash=False):
        widths = np.fromiter(map(len, references), dtype=np.intp, count=len(references))
        item_rows = np.repeat(np.arange(len(references)), widths)
        rows |= np.bincount(item_rows[_odd(items, backslash=False)], minlength=len(texts)) > 0
    return _positions(rows), ascii_texts


def scan_rows(
    samples: Sequence[PreparedSample], texts: Sequence[str], near: Callable[[str], str], columns: Columns | None = None
) -> RowScan:
    """The pass (``stage.audit`` runs it with the cyclic collector off); ``columns``: the samples' columns,
    where the subject has read them already."""
    if not samples:
        return RowScan()
    if columns is None:
        columns = Columns(samples)
        columns.prompt_texts = list(texts)  # the texts as given
    choices = Choices.of(columns.choices, columns.choice_counts)
    unusual, ascii_texts = _unusual(columns.references, texts, choices)
    # a row asked twice is the same question, whatever few-shot examples each copy is shown before it
    asked = texts if samples[0].question is None else [s.question or t for s, t in zip(samples, texts)]
    same, same_texts, same_columns, same_choices = _composed(samples, asked, columns, choices, ascii_texts)
    repeats, reorders = _repeats(same, same_columns.own_texts, same_texts, same_choices)
    return RowScan(
        choice_collisions=_choice_collisions(choices, near),
        placeholder_choices=_rows_withcheap_key(choices, PLACEHOLDER_KEYS, _PLACEHOLDER_PRINTS),
        repeats=repeats,
        reorders=reorders,
        id_clashes=id_clashes(columns.ids),
        unusual_text=unusual,
        truth_choices=_rows_withcheap_key(choices, TRUTH_KEYS, _TRUTH_PRINTS),
        referring_choices=_rows_with_key(choices, REFERRING_KEYS, _REFERRING_PRINTS),
    )
