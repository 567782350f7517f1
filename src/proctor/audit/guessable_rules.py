"""``choices.gold-guessable``: the right choice is the longest (or the shortest) of its row in nearly every row. A
pipeline that appended an explanation to the answer column only ("Paris, the capital of France"), or cut the
distractors to a width, leaves the answer findable without reading the question: a model that prefers long (or
short) continuations scores well, and the number measures the artefact. Real sets lean the gold towards the longer
choice (CommonsenseQA's is the longest in about 1 row of 5, PIQA's in half of its two-choice rows); a share near
every row is no lean, it is the data's construction. Fixed label sets (the same choices in every row) are the label
prior, which ``target.constant`` reads, and are left alone.
"""

from __future__ import annotations

from typing import Iterator

from proctor.audit.probe_rows import PROBE_ROWS
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

MIN_ROWS = 20  # rows with one longest (shortest) choice: fewer are anecdote
SHARE = 0.9  # of them, the gold is it in at least this share (chance: one in the number of choices)
TWO_CHOICE_SHARE = 0.95  # of two choices one is always the longer: chance is one half, so ask for more


def _extreme(lengths: list[int], pick: int) -> int | None:
    """The index of the one choice of length ``pick`` (the row's greatest or least), or None where two share it."""
    return lengths.index(pick) if lengths.count(pick) == 1 else None


def gold_guessable(subject: AuditSubject) -> Iterator[Hit]:
    if subject.spec.kind != "multiple_choice":
        return
    rows = [s for s in subject.scored[:PROBE_ROWS] if len(s.gold) == 1 and len(s.choices) >= 2]
    if len(rows) < MIN_ROWS or len({s.choices for s in rows[:MIN_ROWS]}) == 1:
        return  # too few rows, or a fixed label set
    for which in ("longest", "shortest"):
        picked, right = 0, []
        for sample in rows:
            lengths = [len(c.strip()) for c in sample.choices]
            index = _extreme(lengths, max(lengths) if which == "longest" else min(lengths))
            if index is None:
                continue
            picked += 1
            if index == sample.gold[0]:
                right.append(sample)
        two = all(len(s.choices) == 2 for s in rows)
        if picked < MIN_ROWS or len(right) < (TWO_CHOICE_SHARE if two else SHARE) * picked:
            continue
        first = right[0]
        yield subject.at_row(
            first.sample,
            f"the right choice is the {which} of its row in {len(right)} of the {picked} probed rows that have one "
            f"{which} choice (chance: about 1 in {round(sum(len(s.choices) for s in rows) / len(rows))}; here "
            f"{first.choices[first.gold[0]].strip()!r:.60}): picking the {which} choice scores that without the "
            "question, so the number measures the data's construction (an answer column with an explanation "
            "appended, distractors cut to a width)",
            "choices",
        )
        return


RULES = (
    AuditRule(
        "choices.gold-guessable",
        "warning",
        "The right choice is the longest (or the shortest) of its row in nearly every row: the answer is found "
        "without the question, and the number measures how the data was built.",
        gold_guessable,
    ),
)
