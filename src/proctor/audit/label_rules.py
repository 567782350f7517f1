"""Rules over labels as they reach the scorer: a right answer moved one place, read from the other end of a
reordered list, given as an index where a text is compared, outside the answers the prompt offers, or a choice
that is a truth value.

They read what every dialect leaves (``PreparedSample``) and, where the signal is in the row itself, the row as
its source gave it (``source_rows.py``).
"""

from __future__ import annotations

import re
from itertools import chain
from typing import Any, Iterator, Mapping, Sequence

from proctor.audit import choice_rules, label_base, listed_choices
from proctor.audit.fallback import first_found
from proctor.audit.label_spellings import two_spellings
from proctor.audit.offered_labels import unoffered_references
from proctor.audit.probe_rows import MIN_ROWS, PROBE_ROWS
from proctor.audit.source_rows import documents, generated_rows, target_reads
from proctor.audit.subject import READER_FIELDS, AuditSubject, loose
from proctor.audit.target_rules import _read_field, template_fields
from proctor.core.audit import AuditRule, Hit
from proctor.prompts.builder import PreparedSample

# ---------------------------------------------------------------- choices.coerced


def bool_choices(subject: AuditSubject) -> Iterator[Hit]:
    """A row's choices list holds truth values: the model is asked to pick 'True' or 'False', the texts str()
    made of them, which the data never wrote (a column of booleans read where answer texts belong)."""
    if not subject.templated or not isinstance(subject.spec.choices, str):
        return
    read = _read_field(subject.spec.choices)
    if read is None:
        return
    name = read[0]
    samples = subject.samples
    # the rows where a choice reads True or False: the audit's one pass found them (most tasks have none)
    for sample in (samples[row] for row in subject.scan.truth_choices):
        if "True" not in sample.choices and "False" not in sample.choices:
            continue
        value = sample.sample.fields.get(name)
        if type(value) is list and any(type(c) is bool for c in value):
            i = next(i for i, c in enumerate(value) if type(c) is bool)
            yield subject.at_row(
                sample.sample,
                f"choice {i} is the truth value {value[i]!r}, shown to the model as the text {str(value[i])!r}: "
                "a column of booleans read where the answer texts belong?",
                name,
            )


# ---------------------------------------------------------------- labels.off-by-one


def _position(value: object, width: int) -> int | None:
    """A row's answer key as a choice position: a whole number, or a letter ('A' is 0)."""
    if type(value) is int:
        return value
    if isinstance(value, str) and len(value) == 1 and "A" <= value <= "Z":
        return ord(value) - ord("A")
    return None


def _shift(subject: AuditSubject, name: str, rows: list[int], docs: Sequence[Mapping[str, object]]) -> int | None:
    """The one shift (not 0) between field ``name`` read as a position counted from 0 and every row's gold."""
    shifts = set()
    positions = []
    for i in rows:
        sample = subject.samples[i]
        width = len(sample.choices)
        position = _position(docs[i].get(name), width)
        if position is None or not 0 <= position < width:
            return None
        positions.append((position, docs[i].get(name)))
        shifts.add((sample.gold[0] - position) % width)
        if len(shifts) > 1:
            return None
    # a number column counted from 0 shows a 0 somewhere (one counted from 1 and read with '- 1' does not)
    if all(type(v) is int for _, v in positions) and not any(p == 0 for p, _ in positions):
        return None
    (shift,) = shifts
    return shift or None


def shifted_from_row_key(subject: AuditSubject) -> Iterator[Hit]:
    """The target moves every row's answer the same number of places away from the answer key the row itself
    holds (a letter, or an index counted from 0): '+ 1' on a key that already counts from 0."""
    if subject.spec.kind != "multiple_choice":
        return
    names = sorted(target_reads(subject))
    if not names:
        return

    def answered(samples: Sequence[PreparedSample], start: int = 0) -> list[int]:
        return [i for i, s in enumerate(samples, start) if len(s.gold) == 1 and len(s.choices) >= 2]

    rows = answered(subject.samples[:PROBE_ROWS])
    if len(rows) < MIN_ROWS:
        return
    docs = documents(subject)
    for name in names:
        shift = _shift(subject, name, rows, docs)
        if shift is None:
            continue
        if len(subject.samples) > PROBE_ROWS:  # the probe agrees: the whole task decides
            rows += answered(subject.samples[PROBE_ROWS:], PROBE_ROWS)
            if _shift(subject, name, rows, docs) != shift:
                continue
        first = subject.samples[rows[0]]
        key = docs[rows[0]].get(name)
        yield Hit(
            f"the target moves every row's answer {shift} place(s) from the row's own '{name}' (row "
            f"{first.sample.row}: {key!r} is choice {_position(key, len(first.choices))}, the gold is choice "
            f"{first.gold[0]}) in all {len(rows)} rows: a key counted from 0 read as if counted from 1?",
            file=subject.file,
            line=subject.line("target"),
            field="target",
            sample=first.sample.id,
        )
        return


off_by_one = first_found(
    choice_rules.shifted_labels, shifted_from_row_key, label_base.shifted_in_one_file, label_base.shifted_pool
)


# ---------------------------------------------------------------- target.constant


def constant_reference(subject: AuditSubject) -> Iterator[Hit]:
    """Every generated row has the same reference answer: a model that always says it scores 1."""
    rows = [subject.samples[i] for i in generated_rows(subject)]
    if len(rows) < MIN_ROWS or len(rows) < len(subject.samples) // 2:
        return
    first = rows[0].references
    if any(s.references != first for s in rows):
        return
    yield subject.at_row(
        rows[0].sample,
        f"every one of the {len(rows)} generated rows has the same reference answer ({first[0]!r:.40}): a model "
        "that always answers that scores 1 (a label column read wrongly, or a filter that kept one class?)",
        "target",
    )


def constant_target(subject: AuditSubject) -> Iterator[Hit]:
    yield from choice_rules.constant_target(subject)
    yield from constant_reference(subject)


# ---------------------------------------------------------------- target.index-as-reference

_SMALL_NUMBER = re.compile(r"^\s*\d{1,2}\s*$")


def _indexes_a_list(number: int, doc: Mapping[str, Any]) -> str | None:
    """The row's list field (choices, options) a number is an index into, or None."""
    for key, value in doc.items():
        listed = key not in READER_FIELDS and isinstance(value, list) and len(value) > number
        if listed and value and all(isinstance(v, str) for v in value):
            return key
    return None


def index_references(subject: AuditSubject) -> Iterator[Hit]:
    """A generated row's reference is a small number that is an index (into the row's choices, or the same 0 in
    every row): the model is scored on writing '2', not the answer."""
    rows = generated_rows(subject)
    if len(rows) < MIN_ROWS or len(rows) < len(subject.samples) // 2:
        return
    samples = subject.samples
    for i in rows[:PROBE_ROWS]:
        if not all(_SMALL_NUMBER.match(r) for r in samples[i].references):
            return  # answers in words (most generated tasks): decided within the first rows
    if not all(_SMALL_NUMBER.match(r) for i in rows for r in samples[i].references):
        return
    docs = documents(subject)
    lists = [_indexes_a_list(int(samples[i].references[0]), docs[i]) for i in rows]
    same = len({samples[i].references for i in rows}) == 1
    if not same and not all(lists):
        return  # numbers that vary and index nothing: numeric answers (counts, sums)
    first = samples[rows[0]]
    listed = lists[0]
    why = (
        f"an index into the row's '{listed}' ({docs[rows[0]][listed][int(first.references[0])]!r:.40})"
        if listed is not None and all(lists)
        else "the same number in every row"
    )
    yield subject.at_row(
        first.sample,
        f"the reference answer is {first.references[0]!r}, {why}, in all {len(rows)} generated rows: the model is "
        "scored on writing the number, not the answer (a choice index where a text belongs?)",
        "target",
    )


# ---------------------------------------------------------------- target.flipped


def reordered_choices(subject: AuditSubject) -> Iterator[Hit]:
    """The task lists fixed choices (["yes", "no"]) while each row holds the same texts in another order
    (["no", "yes"]) and the target reads the row's index as it is: every label points at the other answer."""
    spec = subject.spec
    if not subject.templated or not isinstance(spec.choices, list) or not spec.target:
        return
    if any(template_fields(c) for c in spec.choices):
        return  # choices from the row: its own order
    read = _read_field(spec.target)
    if read is None or set(read[1]) - {"int", "trim", "string"}:
        return  # a target that computes the index may map it
    scored = [s for s in subject.samples if s.choices and s.gold]
    if len(scored) < 2:
        return
    listed = tuple(loose(c) for c in scored[0].choices)
    if len(set(listed)) != len(listed):
        return

    def reordered_field(fields: Mapping[str, object]) -> str | None:
        for key, value in fields.items():
            if isinstance(value, list) and len(value) == len(listed) and all(isinstance(v, str) for v in value):
                keys = tuple(loose(v) for v in value)
                if keys != listed and sorted(keys) == sorted(listed):
                    return key
        return None

    probe = scored[:PROBE_ROWS]
    names = {reordered_field(s.sample.fields) for s in probe}
    if len(names) != 1 or None in names:
        return
    name = names.pop()
    assert name is not None
    first = scored[0].sample
    yield subject.at_line(
        "choices",
        f"the task lists the choices {list(scored[0].choices)!r:.60}, and each row's '{name}' holds the same texts "
        f"in another order ({first.fields[name]!r:.60}, row {first.row}), while the target reads the row's "
        f"'{read[0]}' as it is: the index counts in the row's order, so labels point at other answers",
        "choices",
    )


# ---------------------------------------------------------------- target.ambiguous (a digit text read as an index)


def _lmeval_target_texts(subject: AuditSubject, positions: Sequence[int]) -> list[tuple[int, str]] | None:
    """lm-eval's ``doc_to_target`` template rendered as text (lm-eval reads a digit text as an index) for the
    documents at ``positions``; None where the task has no such template."""
    task = getattr(subject.handler, "task", None)
    config = getattr(task, "config", None)
    template = getattr(config, "doc_to_target", None)
    docs = getattr(subject.handler, "docs", None)
    if task is None or not isinstance(template, str) or "{" not in template or not isinstance(docs, list):
        return None
    if getattr(config, "doc_to_choice", None) is None or len(docs) != len(subject.samples):
        return None
    out = []
    for i in positions:
        try:  # a leading mark keeps the text a text (lm-eval's own conversion is what this rule looks behind)
            text = task.doc_to_target(docs[i][1], doc_to_target="\x01" + template)
        except Exception:  # noqa: BLE001 - a template lm-eval cannot render is reported where it builds requests
            return None
        if isinstance(text, str):
            out.append((i, text[1:]))
    return out


def _index_field(subject: AuditSubject) -> bool:
    """Whether lm-eval's ``doc_to_target`` gives an integer field as it is (``{{answer}}``, cais/mmlu's ClassLabel
    index 0-3): the digit it renders is the index the field holds, which lm-eval reads back as meant. An index
    field: every document's value an int within its row's choices, and in some row not a choice's text (a column
    of numeric answers, each one of its row's choices, is a text the digit only spells)."""
    config = getattr(getattr(subject.handler, "task", None), "config", None)
    template = getattr(config, "doc_to_target", None)
    read = _read_field(template) if isinstance(template, str) else None
    docs = getattr(subject.handler, "docs", None)
    if read is None or set(read[1]) - {"int", "string", "trim"} or not isinstance(docs, list):
        return False
    if len(docs) != len(subject.samples):
        return False
    spelled_only = True
    for (_, doc), sample in zip(docs, subject.samples):
        value = doc.get(read[0]) if isinstance(doc, dict) else None
        if type(value) is not int or not 0 <= value < len(sample.choices):
            return False
        spelled_only = spelled_only and str(value) in (c.strip() for c in sample.choices)
    return not spelled_only


def digit_text_as_index(subject: AuditSubject) -> Iterator[Hit]:
    """lm-eval reads a ``doc_to_target`` that renders a digit ('2') as choice index 2: where '2' is another
    choice's text, the gold is that other choice (unless the digit is an index field's own value)."""
    samples = subject.samples
    texts = _lmeval_target_texts(subject, range(min(len(samples), PROBE_ROWS)))
    if not texts:
        return

    def misread(i: int, text: str) -> bool:
        choices = [c.strip() for c in samples[i].choices]
        return text.strip().isdigit() and text.strip() in choices and choices.index(text.strip()) != int(text)

    if not any(misread(i, t) for i, t in texts) or _index_field(subject):
        return
    if len(samples) > PROBE_ROWS:
        texts = _lmeval_target_texts(subject, range(len(samples))) or texts
    for i, text in texts:
        if misread(i, text):
            choices = [c.strip() for c in samples[i].choices]
            yield subject.at_row(
                samples[i].sample,
                f"doc_to_target gives the text {text.strip()!r}, which lm-eval reads as choice index {int(text)} "
                f"({samples[i].choices[int(text)].strip()!r}); {text.strip()!r} is choice "
                f"{choices.index(text.strip())}'s text: which of the two is meant is a guess, and the index wins",
                "doc_to_target",
            )


def ambiguous_target(subject: AuditSubject) -> Iterator[Hit]:
    yield from choice_rules.ambiguous_target(subject)
    yield from digit_text_as_index(subject)


RULES = (
    AuditRule(
        "choices.coerced",
        "warning",
        "A row's choices hold truth values (True, False): the model picks among texts str() made of them.",
        bool_choices,
    ),
    AuditRule(
        "target.ambiguous",
        "warning",
        "The right answer's text is also another choice's text (or a digit text lm-eval reads as another index).",
        ambiguous_target,
    ),
    AuditRule(
        "target.constant",
        "warning",
        "Every row has the same right answer position (or reference): accuracy measures a habit, not knowledge.",
        constant_target,
    ),
    AuditRule(
        "labels.off-by-one",
        "warning",
        "No row's answer is the first choice while all others occur (in the task, one of its files or the few-shot "
        "pool), or every gold is one off the row's own key.",
        off_by_one,
    ),
    AuditRule(
        "target.index-as-reference",
        "warning",
        "A generated row's reference is a choice index ('2') or the same number in every row, not the answer.",
        index_references,
    ),
    AuditRule(
        "target.flipped",
        "warning",
        "The task's fixed choices list a row's own choices in another order, and the target reads its index as is.",
        reordered_choices,
    ),
    AuditRule(
        "target.not-a-choice",
        "warning",
        "A generated row's reference is none of the answers the prompt offers (another word, another case), or "
        "a row's answer is none of the choices it lists.",
        lambda s: chain(unoffered_references(s), two_spellings(s), listed_choices.not_listed(s)),
    ),
)
