"""``target.index-after-transform`` where the data itself was reordered: every row's list of options is in
alphabetical order (a pipeline sorted each row's choices, or wrote its option columns sorted) while the row's gold
index was kept from before. Chance puts a row of k distinct options in order once in k! (1 in 6 for three, 1 in 24
for four), so a task whose rows are nearly all sorted was sorted after it was labelled; if the key was not moved
with the options, it names another option in most rows.

Numbers are left alone (a maths set lists its answers in order by design), and so are rows of two options (sorted
half the time by chance), a row whose own answer text is its gold choice (the key was moved with the options) and
one label set that most rows list (NLI's 'contradiction, entailment, neutral' is in order in every row).
On real ARC, OpenBookQA, CommonsenseQA, HellaSwag and MMLU rows at most a third of the rows are in order."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Iterator, Mapping, Sequence

from proctor.audit.prompt_shape_rules import in_option_order
from proctor.audit.row_lists import row_lists
from proctor.audit.source_rows import documents
from proctor.audit.subject import AuditSubject
from proctor.core.audit import Hit

PROBE_ROWS = 1000
MIN_ROWS = 15  # rows of three options or more, not numbers
SORTED_SHARE = 0.9  # of them, in order (ascending, or descending, throughout)
FIRST_ROWS, FIRST_UNSORTED = 20, 2  # of the first rows, more unsorted than this: not a sorted task
_NUMBER_START = "0123456789+-−$£€¥.%"


def _key(text: str) -> str:
    return text.strip().casefold()


def _plain_texts(items: Sequence[str]) -> bool:
    """Three or more distinct options, each a text rather than a number or a single character, and not marked
    with their own option letters ('A) ...', 'B) ...': in order by their marks)."""
    if len(items) < 3 or in_option_order(items):
        return False
    keys = [_key(t) for t in items]
    return len(set(keys)) == len(keys) and all(len(k) > 1 and k[0] not in _NUMBER_START for k in keys)


def _order(items: Sequence[str]) -> int:
    """1 where the items are in ascending order, -1 in descending order, 0 otherwise."""
    keys = [_key(t) for t in items]
    ordered = sorted(keys)
    return 1 if keys == ordered else -1 if keys == ordered[::-1] else 0


def _lists(doc: Mapping[str, Any], choices: Sequence[str], prompt: str) -> list[str]:
    """The row's own lists that the task offers: the choices themselves, or (choices that are labels: ' A', ' B')
    the options the prompt shows (MMLU's columns A to D)."""
    listed = row_lists(doc, len(choices))
    same = [name for name, items in listed if [t.strip() for t in items] == [c.strip() for c in choices]]
    if same:
        return same
    return [name for name, items in listed if all(t.strip() and t.strip() in prompt for t in items)]


def _answer_kept(doc: Mapping[str, Any], gold_text: str) -> bool:
    """Whether the row also holds its answer as text, equal to its gold option (the key moved with the sort)."""
    return any(isinstance(v, str) and _key(v) == _key(gold_text) for v in doc.values())


def sorted_options(subject: AuditSubject) -> Iterator[Hit]:
    samples = subject.samples
    rows = [i for i, s in enumerate(samples[:PROBE_ROWS]) if len(s.gold) == 1 and len(s.choices) >= 3]
    if len(rows) < MIN_ROWS:
        return
    docs = documents(subject)
    names = _lists(docs[rows[0]], samples[rows[0]].choices, subject.prompt_texts[rows[0]])
    for name in names:
        items_of = dict(row_lists(docs[rows[0]], len(samples[rows[0]].choices)))
        if not _plain_texts(items_of[name]):
            continue
        eligible: list[tuple[int, list[str]]] = []
        unsorted = 0
        for i in rows:
            items = dict(row_lists(docs[i], len(samples[i].choices))).get(name)
            if items is not None and _plain_texts(items):
                eligible.append((i, items))
                unsorted += _order(items) == 0
                if len(eligible) <= FIRST_ROWS and unsorted > FIRST_UNSORTED:
                    break  # sorted rows are the pipeline's doing, in every row: the first ones show it
        if unsorted > FIRST_UNSORTED and len(eligible) <= FIRST_ROWS:
            continue
        if len(eligible) < MIN_ROWS:
            continue
        sets = Counter(tuple(_key(t) for t in items) for _, items in eligible)
        if sets.most_common(1)[0][1] * 2 >= len(eligible):
            continue  # one label set in every row (NLI's contradiction, entailment, neutral): its order is the set's
        orders = [_order(items) for _, items in eligible]
        direction = 1 if orders.count(1) >= orders.count(-1) else -1
        ordered = [(i, items) for (i, items), o in zip(eligible, orders) if o == direction]
        if len(ordered) < SORTED_SHARE * len(eligible):
            continue
        kept = sum(_answer_kept(docs[i], items[samples[i].gold[0]]) for i, items in ordered)
        if kept * 2 >= len(ordered):
            continue  # the rows carry their answer text, which the gold matches: labelled after the sort
        first, items = ordered[0]
        way = "alphabetical" if direction == 1 else "reverse alphabetical"
        yield Hit(
            f"the options of '{name}' are in {way} order in {len(ordered)} of the {len(eligible)} probed rows of "
            f"three or more texts (row {samples[first].sample.row}: {', '.join(map(repr, items))[:120]}); chance "
            f"orders a row of {len(items)} once in {math.factorial(len(items))}: the options were sorted after the "
            "rows were labelled, and a gold index kept from before names another option in most rows; check the key "
            "against the answers",
            file=samples[first].sample.file or subject.file,
            row=samples[first].sample.row,
            field=name,
            sample=samples[first].sample.id,
        )
        return
