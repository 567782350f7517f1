"""Whether a row-aligned join really is aligned: a key column that lists the same rows in another order.

A ``join`` adds a file's columns row by row, by position. When the joined file carries a key of its own (an id
column, under any name) holding the same set of values as a column of the data but in another order, its
rows belong to other questions: every label would be misaligned without a word.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from proctor.core.audit import Hit
from proctor.data.readers import ROW_KEY, Row
from proctor.data.reserved_names import RESERVED


def _keys(rows: Sequence[Row], near: bool = False) -> dict[str, list[str]]:
    """The columns whose values are all present and distinct (a key), as texts ("7" and 7 are one id); with
    ``near``, those with at most a fifth of their values repeated (a key with a row copied over another)."""
    columns: dict[str, list[str]] = {}
    names = [k for k in rows[0] if k not in RESERVED] if rows else []
    for name in names:
        values = [row.get(name) for row in rows]
        if any(v is None or isinstance(v, (dict, list)) for v in values):
            continue
        texts = [str(v).strip() for v in values]
        distinct = len(set(texts))
        if distinct == len(texts) or (near and distinct >= NEAR_KEY_SHARE * len(texts)):
            columns[name] = texts
    return columns


NEAR_KEY_SHARE = 0.8


def join_misalignment(rows: Sequence[Row], joined: Sequence[Row], file: Path, joined_file: Path) -> Hit | None:
    """A hit naming the first row whose key differs, when a key column of ``joined`` lists the keys of a column of
    ``rows`` in another order; None when no key column pairs up, or every pair is in the same order."""
    if len(rows) != len(joined) or len(rows) < 2:
        return None
    ours = _keys(rows)
    if not ours:
        return None
    by_set: dict[frozenset[str], str] = {frozenset(v): k for k, v in ours.items()}
    for name, theirs in _keys(joined).items():
        match = by_set.get(frozenset(theirs))
        if match is None:
            continue
        mine = ours[match]
        if mine == theirs:
            return None  # one key pair in the same order: aligned
        return _misaligned(
            mine,
            theirs,
            joined,
            joined_file,
            name,
            lambda row, a, b: f"the joined file's '{name}' lists the rows of {file.name}'s '{match}' in another "
            f"order (row {row} joins {b!r:.30} to {a!r:.30}): a join adds rows by position, so its columns would "
            "belong to other rows; sort the joined file like the data",
        )
    return _repeated_keys(ours, joined, file, joined_file)


def _repeated_keys(ours: dict[str, list[str]], joined: Sequence[Row], file: Path, joined_file: Path) -> Hit | None:
    """A joined column that is the data's key in the same order except where a key repeats in place of another
    (q1, q1, q3 for q1, q2, q3): the repeated row's columns are joined to the row it replaced."""
    for name, theirs in _keys(joined, near=True).items():
        if len(set(theirs)) == len(theirs):
            continue  # a true key: the order check above decided
        for match, mine in ours.items():
            if not set(theirs) <= set(mine):
                continue
            same = sum(a == b for a, b in zip(mine, theirs))
            if same * 2 < len(mine):
                continue
            return _misaligned(
                mine,
                theirs,
                joined,
                joined_file,
                name,
                lambda row, a, b: f"the joined file's '{name}' repeats {b!r:.30} where {file.name}'s '{match}' has "
                f"{a!r:.30} (row {row}): a join adds rows by position, so that row's columns belong to another "
                "row; give each row of the data its own row in the joined file",
            )
    return None


def _misaligned(
    mine: Sequence[str],
    theirs: Sequence[str],
    joined: Sequence[Row],
    joined_file: Path,
    name: str,
    why: Callable[[Any, str, str], str],
) -> Hit:
    """The hit at the first position where the joined key column ``theirs`` leaves the data's ``mine``: its
    joined row (as the reader numbered it) and ``why(row, the data's key, the joined key)``."""
    first = next(i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b)
    row: Any = joined[first].get(ROW_KEY, first + 1)
    return Hit(
        why(row, mine[first], theirs[first]),
        file=str(joined_file),
        row=row if isinstance(row, int) else None,
        field=name,
    )
