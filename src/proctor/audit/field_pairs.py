"""Rules over two fields of the rows that should differ or should agree: two texts the prompt shows that are one
text (``data.fields-identical``: a sentence2 column copied from sentence1), and a label beside its text that do not
name each other one to one (``labels.inconsistent-mapping``: one row's label flipped while its text label still says
the old class).

Which fields: a native task's prompt template and the target's field; lm-eval's ``doc_to_text`` and
``doc_to_target`` over its documents; a dialect whose rows the samples do not carry (SEA-HELM's rows sit in its
dataloader) says it through its handler's ``audit_fields(samples)``, a ``FieldView``. A label's text is a field
named after it (``text_label``, ``label_text``, ``label_name``) or one the dialect pairs with it.

Cheap: ``data.fields-identical`` probes the first rows; ``labels.inconsistent-mapping`` reads every row, only where
a label has such a text field (looked for in the first row), and stops where the label field holds free answers.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Iterator, Mapping, Sequence

from proctor.audit.probe_rows import MIN_ROWS, PROBE_ROWS
from proctor.audit.source_rows import documents, target_reads, templates
from proctor.audit.subject import AuditSubject
from proctor.audit.target_rules import template_fields
from proctor.core.audit import AuditRule, Hit
from proctor.data.sources import Sample

IDENTICAL_SHARE = 0.9  # "every row or nearly every row": a stray copy is a typo, this many is a copied column
LABEL_SET = 50  # more distinct values than this: free answers, not a label set
_TEXT_NAMES = ("text_{}", "{}_text", "{}_name", "{}_str", "{}_string", "{}_word")


@dataclass(frozen=True)
class FieldView:
    """The rows' fields as these rules read them: each sample's row, the fields its prompt shows, and the pairs of a
    label field and its text meant to name each other one to one."""

    rows: Sequence[tuple[Sample, Mapping[str, Any]]]
    prompt_fields: frozenset[str]
    label_pairs: tuple[tuple[str, str], ...] = ()


class _Rows(Sequence[tuple[Sample, Mapping[str, Any]]]):
    """Each sample with its row, read when asked (a probe reads only the first rows)."""

    def __init__(self, subject: AuditSubject) -> None:
        self.samples = subject.samples
        self.docs = documents(subject)

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [(s.sample, d) for s, d in zip(self.samples[i], self.docs[i])]
        return self.samples[i].sample, self.docs[i]


def named_pairs(first: Mapping[str, Any], labels: frozenset[str]) -> tuple[tuple[str, str], ...]:
    return tuple(
        (label, name.format(label))
        for label in sorted(labels)
        for name in _TEXT_NAMES
        if name.format(label) in first and label in first
    )


def field_view(subject: AuditSubject) -> FieldView | None:
    hook = getattr(subject.handler, "audit_fields", None)
    if callable(hook):
        view = hook(subject.samples)
        return view if isinstance(view, FieldView) else None
    prompt, _, _ = templates(subject)
    if not subject.samples or (prompt is None and not target_reads(subject)):
        return None
    rows = _Rows(subject)
    first = rows[0][1]
    return FieldView(
        rows, template_fields(prompt) if prompt else frozenset(), named_pairs(first, target_reads(subject))
    )


def _text(value: object) -> str | None:
    return " ".join(value.split()) if isinstance(value, str) and value.strip() else None


def identical_fields(subject: AuditSubject) -> Iterator[Hit]:
    view = field_view(subject)
    if view is None or len(view.prompt_fields) < 2:
        return
    probe = view.rows[:PROBE_ROWS]
    for a, b in combinations(sorted(view.prompt_fields), 2):
        both = 0
        same: list[tuple[Sample, str]] = []
        for sample, row in probe:
            ta, tb = _text(row.get(a)), _text(row.get(b))
            if ta is None or tb is None:
                continue
            both += 1
            if ta == tb:
                same.append((sample, ta))
        if both < MIN_ROWS or len(same) < IDENTICAL_SHARE * both:
            continue
        sample, text = same[0]
        yield subject.at_row(
            sample,
            f"'{a}' and '{b}', both shown by the prompt, hold the same text in {len(same)} of the {both} rows "
            f"probed ({text!r:.40}): the model is shown one text twice and asked how it relates to itself (a column "
            f"copied into another?); fill '{b}' with its own text",
            b,
        )
        return


def _key(value: object) -> object:
    """A label as the mapping compares it: spacing aside (a label spelled with a space is target.not-a-choice's)."""
    if isinstance(value, str):
        return " ".join(value.split())
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _mapping_hits(subject: AuditSubject, view: FieldView, label: str, text: str) -> Iterator[Hit]:
    pairs: Counter[tuple[object, object]] = Counter()
    first_row: dict[tuple[object, object], Sample] = {}
    for sample, row in view.rows:
        pair = (_key(row.get(label)), _key(row.get(text)))
        if pair[0] is None or pair[1] is None:
            continue
        if pair not in first_row:
            if len(first_row) > LABEL_SET:
                return  # free answers beside their texts, not a label set
            first_row[pair] = sample
        pairs[pair] += 1
    texts: dict[object, Counter[object]] = defaultdict(Counter)
    labels: dict[object, Counter[object]] = defaultdict(Counter)
    for (lab, txt), n in pairs.items():
        texts[lab][txt] += n
        labels[txt][lab] += n
    odd = [
        (n, pair)
        for pair, n in pairs.items()
        if (len(texts[pair[0]]) > 1 and texts[pair[0]].most_common(1)[0][0] != pair[1])
        or (len(labels[pair[1]]) > 1 and labels[pair[1]].most_common(1)[0][0] != pair[0])
    ]
    for n, (lab, txt) in sorted(odd, key=lambda item: (item[0], first_row[item[1]].index)):
        usual = labels[txt].most_common(1)[0] if labels[txt].most_common(1)[0][0] != lab else None
        if usual is None:  # the text's usual label is this one: the label's usual text is another
            other = texts[lab].most_common(1)[0]
            yield subject.at_row(
                first_row[(lab, txt)],
                f"'{text}' {txt!r} goes with '{label}' {lab!r} here ({n} row(s)), while {other[1]} row(s) with "
                f"'{label}' {lab!r} have '{text}' {other[0]!r}: the two fields do not name each other one to one, so "
                f"one of them was changed without the other; the score reads '{label}': correct the row",
                text,
            )
            continue
        yield subject.at_row(
            first_row[(lab, txt)],
            f"'{label}' {lab!r} goes with '{text}' {txt!r} here ({n} row(s)), while {usual[1]} row(s) with '{text}' "
            f"{txt!r} have '{label}' {usual[0]!r}: the two fields do not name each other one to one, so one of them "
            f"was changed without the other (a flipped label?); the score reads '{label}': correct the row",
            label,
        )


def inconsistent_mapping(subject: AuditSubject) -> Iterator[Hit]:
    view = field_view(subject)
    if view is None or len(view.rows) < MIN_ROWS:
        return
    for label, text in view.label_pairs:
        yield from _mapping_hits(subject, view, label, text)


RULES = (
    AuditRule(
        "data.fields-identical",
        "warning",
        "Two fields the prompt shows hold the same text in every row or nearly (sentence2 copied from sentence1).",
        identical_fields,
    ),
    AuditRule(
        "labels.inconsistent-mapping",
        "warning",
        "A label and its text field (label / text_label) do not name each other one to one across rows.",
        inconsistent_mapping,
    ),
)
