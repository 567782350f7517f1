"""One pass over a task's prepared rows that finds the few rows the per-row rules need to look at closely.

A task may have 100,000 rows and the audit may add at most a few percent to ``proctor validate``: so the rules
that compare texts within a row (choices a reader takes for one), across rows (an item asked twice, ids that
look alike) or look for damaged text do not each walk every row in Python. This pass computes, per row, a cheap
key that every near-duplicate shares (ASCII text: lower case, spaces and punctuation dropped, as bytes) and
keeps the rows where keys collide; the rules then check those rows with the exact comparisons of
``subject.loose`` / ``subject.near``, which decide.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

# dropped from the cheap key: spacing and punctuation (any pair near() equates collides here too)
_DROP = b" \t\n\r\f\v\"'`.,;:!?()[]{}<>-_/\\|*#"
# what a CSV or pandas reader makes of a missing value, as the cheap key writes it
PLACEHOLDER_KEYS = frozenset({b"na", b"nan", b"none", b"null", b"nil", b"undefined"})
# two or more choices that are numbers: "4" and "4.0" are one answer, which the cheap key does not see
_NUMBERS = re.compile(r"(?:^|\x00)\s*[+-]?(?:\d+\.?\d*|\.\d+)\s*(?=\x00|$)")


@dataclass
class RowScan:
    """Row positions (into ``subject.samples``) that a rule should look at."""

    choice_collisions: list[int] = field(default_factory=list)  # two choices share a cheap key
    placeholder_choices: list[int] = field(default_factory=list)  # a choice reads NA, nan, None, null
    repeats: list[tuple[int, int]] = field(default_factory=list)  # (row, the earlier row of the same item)
    id_clashes: list[tuple[int, int]] = field(default_factory=list)  # (row, the earlier row whose id looks alike)
    unusual_text: list[int] = field(default_factory=list)  # non-ASCII, '&' or a backslash in a prompt or choice


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


def _id_key(sample_id: str) -> str:
    """An id as a reader compares it: case and spacing aside, a number by its value ("1.0" is "1")."""
    key = " ".join(sample_id.split()).lower()
    try:
        number = float(key)
    except ValueError:
        return key
    return repr(number) if number == number else key


def _choice_collisions(samples: Sequence[Any], joined: list[str], near: Any) -> tuple[list[int], list[int]]:
    """(rows where two choices share a cheap key, rows that may hold a placeholder choice): the whole task's
    ASCII choices lowered and stripped in one pass of C (a task may have 100,000 rows)."""
    whole = "\x01".join(joined)
    if whole.isascii():
        cheap = whole.lower().encode().translate(None, _DROP)
        rows: list[list[Any]] = [row.split(b"\x00") for row in cheap.split(b"\x01")]
        maybe_placeholder = not PLACEHOLDER_KEYS.isdisjoint(cheap.replace(b"\x01", b"\x00").split(b"\x00"))
    else:
        rows = [
            j.lower().encode().translate(None, _DROP).split(b"\x00") if j.isascii() else [near(c) for c in s.choices]
            for s, j in zip(samples, joined)
        ]
        maybe_placeholder = True
    collisions = [
        i
        for i, (row, j) in enumerate(zip(rows, joined))
        if len(row) > 1 and (len(set(row)) < len(row) or ("." in j and _numbers_clash(j, samples[i].choices)))
    ]
    placeholders = (
        [
            i
            for i, row in enumerate(rows)
            if len(row) > 1 and (not isinstance(row[0], bytes) or not PLACEHOLDER_KEYS.isdisjoint(row))
        ]
        if maybe_placeholder
        else []
    )
    return collisions, placeholders


def _repeats(samples: Sequence[Any], texts: Sequence[str], joined: list[str]) -> list[tuple[int, int]]:
    """(row, the earlier row) for items asked twice: the same prompt (spacing aside) and choices, or text."""
    items = [
        (" ".join(s.text.split()),) if s.text is not None else (" ".join(t.split()), j)
        for s, t, j in zip(samples, texts, joined)
    ]
    if len(set(items)) == len(items):
        return []
    first: dict[tuple[Any, ...], int] = {}
    out = []
    for i, item in enumerate(items):
        if item == ("", "") or item == ("",):
            continue  # nothing asked (BLiMP-style rows are told apart by their choices)
        earlier = first.setdefault(item, i)
        if earlier != i:
            out.append((i, earlier))
    return out


def _id_clashes(samples: Sequence[Any]) -> list[tuple[int, int]]:
    ids = [s.sample.id for s in samples]
    if "." not in "".join(ids):  # no id a number's spelling could tell apart ("1.0" and "1"): case and ends only
        quick = [i.strip().lower() for i in ids]
        if len(set(quick)) == len(quick) and " " not in "".join(quick):
            return []
    keys = [_id_key(i) for i in ids]
    if len(set(keys)) == len(keys):
        return []
    first: dict[str, int] = {}
    out = []
    for i, key in enumerate(keys):
        earlier = first.setdefault(key, i)
        if earlier != i and samples[earlier].sample.id != samples[i].sample.id:
            out.append((i, earlier))
    return out


def _unusual(samples: Sequence[Any], texts: Sequence[str], joined: list[str]) -> list[int]:
    references = ["\x00".join(s.references) for s in samples]
    whole = "\x01".join([*texts, *joined, *references])
    if whole.isascii() and "&" not in whole and "\\" not in whole:
        return []
    return [
        i
        for i, (t, j, r) in enumerate(zip(texts, joined, references))
        if not (t.isascii() and j.isascii() and r.isascii()) or "&" in t or "&" in j or "&" in r or "\\" in t
    ]


def scan_rows(samples: Sequence[Any], texts: Sequence[str], near: Any) -> RowScan:
    """The pass, run with the cyclic collector off (``stage.audit``): it makes a few hundred thousand small
    lists and tuples."""
    joined = ["\x00".join(s.choices) for s in samples]
    collisions, placeholders = _choice_collisions(samples, joined, near)
    return RowScan(
        choice_collisions=collisions,
        placeholder_choices=placeholders,
        repeats=_repeats(samples, texts, joined),
        id_clashes=_id_clashes(samples),
        unusual_text=_unusual(samples, texts, joined),
    )
