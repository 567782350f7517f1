"""Ids that look alike: two rows' ids that a reader takes for one (case and spacing aside, "1.0" and "1"), found
for ``ids.look-alike`` within the audit's pass over every row (``row_scan.py``). Most tasks' ids are told apart by
one pass of C over them all joined; only where that cannot tell is each id's key made."""

from __future__ import annotations

# ASCII whitespace as str.split() sees it (\x1c-\x1f too, which bytes.split() keeps)
SPACING = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
_BETWEEN = "\x00"  # between ids, joined


def _id_key(sample_id: str) -> str:
    """An id as a reader compares it: case and spacing aside, a number by its value ("1.0" is "1")."""
    key = " ".join(sample_id.split()).lower()
    try:
        number = float(key)
    except ValueError:
        return key
    return repr(number) if number == number else key


def _ids_plainly_distinct(ids: list[str]) -> bool:
    """Whether no two ids are one up to case and ends, none holds a space and none a point (which a number's
    spelling could tell apart, "1.0" and "1"): most tasks' ids, told in one pass of the joined ids."""
    whole = _BETWEEN.join(ids)
    if "." in whole:
        return False
    if whole.isascii() and whole.count(_BETWEEN) == len(ids) - 1 and not any(c in whole for c in SPACING.decode()):
        lowered = whole.lower()  # no spacing in any id: nothing to strip
        return len(set(ids if lowered == whole else lowered.split(_BETWEEN))) == len(ids)
    quick = [i.strip().lower() for i in ids]
    return len(set(quick)) == len(quick) and " " not in "".join(quick)


def id_clashes(ids: list[str]) -> list[tuple[int, int]]:
    """(row, the earlier row whose id looks alike but is not the same text), in row order."""
    if _ids_plainly_distinct(ids):
        return []
    keys = [_id_key(i) for i in ids]
    if len(set(keys)) == len(keys):
        return []
    first: dict[str, int] = {}
    out = []
    for i, key in enumerate(keys):
        earlier = first.setdefault(key, i)
        if earlier != i and ids[earlier] != ids[i]:
            out.append((i, earlier))
    return out
