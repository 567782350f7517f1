"""Every row's choices as the audit's pass over every row (``row_scan.py``) compares them: each choice's cheap key
(lower case, spaces and punctuation dropped), by a fingerprint that equal keys share (their length and five of their
bytes, in numpy arrays), made over the choices joined a piece at a time; and what the joined text holds (a point,
'&', a NUL, a non-ASCII choice), so that the pass reads choices one by one only where that may find something."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, islice
from typing import Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from proctor.audit.look_alike_ids import SPACING

# dropped from the cheap key: spacing and punctuation (any pair near() equates collides here too)
_DROP = b" \t\n\r\f\v\"'`.,;:!?()[]{}<>-_/\\|*#"
# ASCII letters lowered, as str.lower() lowers them (other letters are in rows whose keys are near()'s)
LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
# what an ASCII number's spelling (as row_scan._NUMBERS reads it) is made of: a choice with anything else is none
_NUMBER_CHARS = b"0123456789+-." + SPACING
ITEM = "\x00"  # between a row's choices, and after each cheap key
# the rest of what str.split() takes for whitespace (test_row_scan checks the list against str.isspace)
WIDE_SPACES = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")

Rows = npt.NDArray[np.intp]
Flags = npt.NDArray[np.bool_]
Fingerprints = npt.NDArray[np.uint64]

PIECE = 1 << 14  # choices joined and keyed at a time (about 400 KB of text at 25 characters a choice)


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def cheap_key(choice: str) -> bytes:
    """An ASCII choice's cheap key."""
    return encode(choice).translate(LOWER, _DROP)


def fingerprints(keys: bytes) -> tuple[Rows, Fingerprints]:
    """(where each key ends, each key's fingerprint) of keys written one after another, each ended by NUL:
    equal keys have equal fingerprints (their length, and their bytes at 0, 1/4, 1/2, 3/4 and the end)."""
    data = np.frombuffer(keys, dtype=np.uint8)
    ends = np.flatnonzero(data == 0)
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts
    packed = np.empty((len(ends), 8), dtype=np.uint8)  # a fingerprint's eight bytes, made in place
    packed[:, :3] = lengths.astype("<u4").view(np.uint8).reshape(-1, 4)[:, :3]
    # one sampled position at a time: each array of positions is as long as the keys, and fresh memory costs
    # (an empty key reads its own NUL and the one before, or the last byte, a NUL: the same for every empty key)
    for quarter in range(4):
        packed[:, 3 + quarter] = data[starts + ((quarter * lengths) >> 2)]
    packed[:, 7] = data[ends - 1]
    return ends, packed.view(np.uint64).reshape(-1)


def _joined(items: list[str]) -> bytes:
    """Items in UTF-8, each followed by NUL (as each cheap key must be)."""
    items.append("")
    return encode(ITEM.join(items) if len(items) > 1 else ITEM)


def _keyed(joined: bytes) -> bytes:
    """The cheap keys of joined items. Where one is non-ASCII (its row's keys are near()'s, so these only find
    candidates) they are case-folded and its wide spaces dropped too: rows of one set of choices up to case and
    spacing then share their fingerprints (``row_scan``'s ``reorders``)."""
    if not joined.isascii():
        joined = encode(WIDE_SPACES.sub("", joined.decode("utf-8", "surrogatepass").casefold()))
    return joined.translate(LOWER, _DROP)


def _numeric(joined: bytes) -> Flags:
    """Per item of a joined text: made of a number's characters only (nothing else between two NULs)."""
    ends = np.flatnonzero(np.frombuffer(joined.translate(None, _NUMBER_CHARS), dtype=np.uint8) == 0)
    numeric: Flags = np.diff(ends, prepend=-1) == 1
    return numeric


@dataclass
class Choices:
    """Every row's choices: each choice's row and cheap key's fingerprint, and what their joined text holds."""

    rows: Sequence[Sequence[str]]  # per row, as the samples hold them
    widths: Rows  # how many each row has
    row_of: Rows  # each choice's row
    fingerprints: Fingerprints  # each choice's cheap key's, where aligned (non-ASCII ones: ASCII letters lowered)
    aligned: bool  # no choice holds a NUL, so the joined keys split back into one key per choice
    ascii: bool  # every choice is ASCII
    plain: bool  # and none holds '&'
    point: bool  # a choice holds a point
    numeric: Flags | None  # per choice, where one holds a point and they are aligned: a number's characters only

    @classmethod
    def of(cls, rows: Sequence[Sequence[str]], widths: Rows) -> Choices:
        row_of = np.repeat(np.arange(len(rows), dtype=np.intp), widths)
        # the choices listed, joined and keyed a piece at a time: the temporaries of one piece (its list, text, keys
        # and arrays) are reused by the next, where those of the whole task would be fresh memory as large as it
        # (a page fault per 4 KiB), and a piece's choices are read twice while they are in the cache
        pieces = range(0, len(row_of), PIECE)
        prints_all = np.empty(len(row_of), dtype=np.uint64)  # each piece's written in place (where aligned)
        numeric: list[Flags | None] = []  # per piece, where it holds a point
        aligned, ascii, amp = len(row_of) > 0, True, False  # (no choice at all: one empty key, as joined)
        every = chain.from_iterable(rows)
        for at in pieces:
            joined = _joined(list(islice(every, PIECE)))
            ends, prints = fingerprints(_keyed(joined))
            aligned = aligned and len(ends) == min(PIECE, len(row_of) - at)
            if aligned:
                prints_all[at : at + len(prints)] = prints
            ascii, amp = ascii and joined.isascii(), amp or b"&" in joined
            numeric.append(_numeric(joined) if b"." in joined else None)
        point = any(n is not None for n in numeric)
        numbers = None
        if point and aligned:  # every piece's choices: those without a point are read again (few tasks)
            every, parts = chain.from_iterable(rows), []
            for n in numeric:
                items = list(islice(every, PIECE))  # read past, or read again
                parts.append(_numeric(_joined(items)) if n is None else n)
            numbers = np.concatenate(parts)
        return cls(rows, widths, row_of, prints_all, aligned, ascii, ascii and not amp, point, numbers)

    @cached_property
    def items(self) -> list[str]:
        """All of them, row after row (read one by one in a few tasks only)."""
        return list(chain.from_iterable(self.rows))

    @cached_property
    def foreign(self) -> Flags:
        """Per row: a choice is non-ASCII (the row's keys are near()'s)."""
        if self.ascii:
            return np.zeros(len(self.rows), dtype=np.bool_)
        return np.bincount(self.row_of[~flags_of(str.isascii, self.items)], minlength=len(self.rows)) > 0

    def rows_where(self, flags: Flags) -> Flags:
        """Per row: whether one of its choices is flagged."""
        return np.bincount(self.row_of[flags], minlength=len(self.rows)) > 0

    def exact_keys(self, row: int, near: Callable[[str], str]) -> list[str | bytes]:
        choices = self.rows[row]
        return [near(c) for c in choices] if self.foreign[row] else [cheap_key(c) for c in choices]

    def key_at(self, item: int) -> bytes:
        return cheap_key(self.items[item])  # what the joined keys hold there, where they are aligned


def flags_of(test: Callable[..., object], items: Sequence[object], *args: Iterable[object]) -> Flags:
    """``test`` of each item, as a boolean array (the calls made by ``map``, in C)."""
    return np.fromiter(map(test, items, *args), dtype=np.bool_, count=len(items))
