"""A row that carries its own label list beside its key (ARC's ``choices: {text: [...], label: [...]}`` and
``answerKey``) says which choice is right: ``labels.index(key)``. A target that reaches another position there
maps the key by some other rule, most often a letter map with a silent default
(``{'A': 0, ...}.get(answerKey, 0)``, ``'ABCDE'.find(k) if k in 'ABCDE' else 0``): ARC-Challenge keys about 2% of
its rows '1' to '4', and those rows all get choice 0, with no error.

The first rows are read (a label list is a dataset's shape, so it shows in them): no pass over a whole task.
"""

from __future__ import annotations

from typing import Iterator, Mapping

from proctor.audit.probe_rows import FIRST_ROWS
from proctor.audit.source_rows import documents, target_reads
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

# rows read, more than probe_rows.PROBE_ROWS on purpose: a default reaches only the rows of a rarer key, spread
# through the file
PROBE_ROWS = 1000


def _label_lists(fields: Mapping[str, object], width: int) -> Iterator[tuple[str, list[str]]]:
    """(field, its labels) for each mapping of the row holding a list of ``width`` label texts."""
    for name, value in fields.items():
        if isinstance(value, Mapping):
            for key in ("label", "labels", "key", "keys"):
                labels = value.get(key)
                if isinstance(labels, list) and len(labels) == width and all(isinstance(x, str) for x in labels):
                    yield f"{name}.{key}", labels


def own_label_list(subject: AuditSubject) -> Iterator[Hit]:
    """The right choice is not the position the row's own label list gives its key."""
    read = target_reads(subject)
    if not read:
        return
    wrong: list[tuple[int, str, str, str, int, int]] = []  # (sample position, list, key field, key, at, gold)
    probed = 0
    docs = documents(subject)  # a native row's fields, or lm-eval's document
    for i, sample in enumerate(subject.samples[:PROBE_ROWS]):
        if i == FIRST_ROWS and not probed:
            return  # rows that carry their own label list carry it in every row: none of the first does
        if len(sample.gold) != 1 or len(sample.choices) < 2:
            continue
        fields = docs[i]
        keys = [(k, v) for k in read if isinstance(v := fields.get(k), str)]
        found = next(
            (
                (listed, name, key, labels.index(key))
                for listed, labels in _label_lists(fields, len(sample.choices))
                for name, key in keys
                if labels.count(key) == 1
            ),
            None,
        )
        if found is not None:
            probed += 1
            if found[3] != sample.gold[0]:
                wrong.append((i, *found, sample.gold[0]))
    if not wrong:
        return
    i, listed, name, key, at, gold = wrong[0]
    yield subject.at_row(
        subject.samples[i].sample,
        f"the row's '{name}' is {key!r}, which its own label list '{listed}' puts at position {at}, while the "
        f"target makes choice {gold} right ({len(wrong)} of {probed} rows read): the target maps the key by another "
        "rule than the row's labels (a letter map's default, `.get(key, 0)` or `else 0`, gives every row keyed "
        "otherwise choice 0), so those rows are scored against another choice; read the position from the list "
        f"({listed}.index({name}))",
        "target",
    )


RULES = (
    AuditRule(
        "labels.own-list",
        "warning",
        "A row carries its own label list beside its key (ARC's choices.label and answerKey) and the target's "
        "right choice is not labels.index(key) (a letter map with a default, .get(answerKey, 0)): those rows are "
        "scored against another choice.",
        own_label_list,
    ),
)
