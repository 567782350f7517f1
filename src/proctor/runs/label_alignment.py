"""Labels that the model's own picks say are misaligned: after a multiple-choice task is scored, would its
answers be right far more often if each label named another choice, or belonged to the next row?

The audit (proctor.audit) reads a task before any model loads and cannot see a label map that is valid but
wrong: BoolQ's 0/1 read against choices listed as ['yes', 'no'], a 1-based answer column read as 0-based, a
labels file joined one line off. Each leaves the data well formed, and the run ends with a plausible number
below what the model knows. The model's picks can tell: a model that knows anything agrees with the true
labels, so if shifting every label by one choice (or reversing the choices, or taking the neighbouring row's
label) turns many wrong rows right and few right rows wrong, the labels as given are the suspect. Only the
discordant rows count (right one way, wrong the other), as in McNemar's test: the shift must win at least
twice as many as it loses, at a one-sided binomial p below 1e-6, so a model at chance (which wins and loses
alike) or one with a mild preference never triggers it. A model that picks one position nearly always is left
out: its hits follow the labels' spread, not their alignment.

Reads the records every dialect's multiple-choice kind writes (``choices``, ``target`` as one index,
``prediction``); rows with several right choices, or no pick, are left out.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

MIN_ROWS = 30  # fewer rows cannot make the case at the p below
MIN_WINS = 10
RATIO = 2.0  # the shift wins at least this many discordant rows per one it loses
P_VALUE = 1e-6  # one-sided binomial tail of the wins among the discordant rows under no difference
ONE_POSITION = 0.8  # a model that picks one position for this share of rows says nothing of alignment

Row = tuple[int, int, int]  # prediction, gold, number of choices


def _index(value: object, k: int) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < k else None


def _rows(records: Sequence[Mapping[str, Any]]) -> list[Row | None]:
    """One entry per record in order (None where the record is not a one-answer multiple-choice row)."""
    out: list[Row | None] = []
    for r in records:
        choices = r.get("choices")
        k = len(choices) if isinstance(choices, list) else 0
        gold, pick = _index(r.get("target"), k), _index(r.get("prediction"), k)
        out.append((pick, gold, k) if k >= 2 and gold is not None and pick is not None else None)
    return out


def _tail(wins: int, n: int) -> float:
    """P(X >= wins) for X ~ Binomial(n, 1/2): exact up to 1,000 rows (sums of whole numbers), then the normal
    approximation with continuity correction (the exact sum over 100,000 rows would take minutes)."""
    if n <= 1000:
        return float(sum(math.comb(n, k) for k in range(wins, n + 1)) / 2**n)
    return 0.5 * math.erfc((wins - 0.5 - n / 2) / math.sqrt(n / 4) / math.sqrt(2))


def _alternatives(rows: list[Row | None], widest: int) -> list[tuple[str, Callable[[int], int | None]]]:
    """(how the labels would be read, row index -> the gold index under that reading or None)."""

    def shifted(step: int) -> Callable[[int], int | None]:
        def gold(i: int) -> int | None:
            row = rows[i]
            return (row[1] + step) % row[2] if row else None

        return gold

    def reversed_(i: int) -> int | None:
        row = rows[i]
        return row[2] - 1 - row[1] if row else None

    def neighbour(step: int) -> Callable[[int], int | None]:
        def gold(i: int) -> int | None:
            row, other = rows[i], rows[i + step] if 0 <= i + step < len(rows) else None
            return other[1] if row and other and other[1] < row[2] else None

        return gold

    if widest == 2:
        readings = [(INVERTED, shifted(1))]
    else:
        readings = [(NEXT, shifted(1)), (PREVIOUS, shifted(-1)), (MIRRORED, reversed_)]
    return [*readings, (NEXT_ROW, neighbour(1)), (PREVIOUS_ROW, neighbour(-1))]


INVERTED = "named the other of the two choices (an inverted label map: 0/1 against choices listed the other way)"
NEXT = "named the next choice (0-based indices read as 1-based, or the choices listed one place off)"
PREVIOUS = "named the previous choice (1-based indices read as 0-based)"
MIRRORED = "named the choice at the mirrored position (the choices listed in reverse)"
NEXT_ROW = "were the next row's label (a labels file joined one row off)"
PREVIOUS_ROW = "were the previous row's label (a labels file joined one row off)"


def misaligned_labels(records: Sequence[Mapping[str, Any]]) -> str | None:
    """A warning when another reading of the labels makes the model's picks far more often right, else None."""
    rows = _rows(records)
    usable = {i: row for i, row in enumerate(rows) if row is not None}
    if len(usable) < MIN_ROWS:
        return None
    picks = [pick for pick, _, _ in usable.values()]
    if max(picks.count(p) for p in set(picks)) >= ONE_POSITION * len(picks):
        return None
    given = sum(pick == gold for pick, gold, _ in usable.values())
    found = []
    for how, gold_at in _alternatives(rows, max(k for _, _, k in usable.values())):
        wins = losses = 0
        for i, (pick, gold, _) in usable.items():
            hit, right = pick == gold_at(i), pick == gold
            wins += hit and not right
            losses += right and not hit
        if wins >= MIN_WINS and wins >= RATIO * max(losses, 1) and _tail(wins, wins + losses) < P_VALUE:
            found.append((wins - losses, wins, losses, how))
    if not found:
        return None
    gain, wins, losses, how = max(found, key=lambda f: f[0])
    n, alt = len(usable), given + gain
    return (
        f"the model's picks match {given} of {n} labels ({given / n:.2f}), but {alt} ({alt / n:.2f}) "
        f"if each label {how}; of the {wins + losses} rows the two readings disagree on, that reading wins {wins}: the "
        "labels may be misaligned with the choices or rows, or the model prefers one wrong answer systematically; "
        "check a few rows' target against their choices (samples.jsonl)"
    )
