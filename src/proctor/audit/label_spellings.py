"""``target.not-a-choice`` for labels spelled two ways: the references of a generated task name a small set of labels,
and one label is written in two forms that differ only in case or whitespace (``"ခ "`` beside ``"ခ"``, ``positif``
beside ``Positif``).

A scorer that collects the label set from the references (SEA-HELM's F1AccMetric) counts them as two classes: chance
is computed over one label too many, and the answer a model gives is read as one of the two forms, so the rows
written in the other always score 0. The rule that compares references with the labels the prompt offers strips
them first, so it is silent here.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterator

from proctor.audit.probe_rows import PROBE_ROWS
from proctor.audit.source_rows import generated_rows, target_reads
from proctor.audit.subject import AuditSubject, loose
from proctor.core.audit import Hit

LABEL_SET = 20  # more distinct answers than this: free answers, which a scorer compares one by one, not a label set
# not probe_rows.MIN_ROWS (4), on purpose: spellings are compared, not a pattern counted, and three rows are the
# fewest where one spelling of a label outnumbers another
MIN_ROWS = 3


def two_spellings(subject: AuditSubject) -> Iterator[Hit]:
    if subject.spec.kind != "generate":
        return  # multiple-choice rows name their answer by index
    references = subject.columns.references
    if len({loose(r[0]) for r in references[:PROBE_ROWS] if len(r) == 1}) > LABEL_SET:
        return  # free answers (most generated tasks): told in the first rows
    rows = [i for i in generated_rows(subject) if len(subject.samples[i].references) == 1]
    if len(rows) < MIN_ROWS:
        return
    counts = Counter(references[i][0] for i in rows)
    forms: dict[str, list[str]] = defaultdict(list)
    for written in counts:
        forms[loose(written)].append(written)
    if len(forms) > LABEL_SET or all(len(f) == 1 for f in forms.values()):
        return
    odd = {}
    for written in (f for group in forms.values() if len(group) > 1 for f in group):
        usual = max(forms[loose(written)], key=lambda f: (counts[f], f == f.strip()))
        if written != usual:
            odd[written] = usual
    reads = sorted(target_reads(subject))
    field = reads[0] if len(reads) == 1 else "label" if subject.handler is not None else "target"
    for i in rows:
        written = references[i][0]
        if written in odd:
            usual = odd[written]
            yield subject.at_row(
                subject.samples[i].sample,
                f"the label {written!r} is {usual!r} (the label of {counts[usual]} rows) up to case and whitespace: a "
                f"scorer that collects the label set from the references counts them as two labels, and an answer "
                f"matches one form only; write it {usual!r}",
                field,
            )
