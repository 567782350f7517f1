"""The row names its answer as text (``answer: yes``, ``answerKey: C``) and the task's gold choice is another
text: the target's mapping from the row's answer to a choice index is inverted or permuted
(``['yes', 'no'].index(answer)`` with choices ``[no, yes]``; ``'ABDC'.index(answer)``). Every affected row is
scored against the wrong choice, and no other rule sees it: each part is valid alone.

A truth value names a choice too (BoolQ's ``answer: true`` beside choices ``[no, yes]``): True is the affirmative
choice, so ``{{ 0 if answer else 1 }}`` inverts every label (accuracy reads 1 - the true accuracy)."""

from __future__ import annotations

from collections import Counter
from typing import Iterator

from proctor.audit.probe_rows import MIN_ROWS, PROBE_ROWS
from proctor.audit.source_rows import documents, target_reads
from proctor.audit.subject import AuditSubject, loose
from proctor.core.audit import AuditRule, Hit

# fields that hold a row's answer as data gives it
ANSWER_FIELDS = frozenset({"answer", "answers", "label", "gold", "target", "correct", "answerkey", "answer_key", "key"})
# the choices a truth value names, in the languages fixed choices are written in (any casing, as ``loose`` reads)
_SAYS = {
    True: frozenset({"yes", "true", "ja", "oui", "sí", "si", "ya", "benar", "có", "đúng", "correct", "right"}),
    False: frozenset({"no", "false", "nein", "non", "tidak", "salah", "không", "sai", "incorrect", "wrong"}),
}
AGREE_SHARE = 0.5  # of the rows whose answer field names one of their choices: the gold is another in more


def gold_contradicts_answer(subject: AuditSubject) -> Iterator[Hit]:
    docs = documents(subject)
    reads = target_reads(subject)
    names = [k for k in docs[0] if k.lower() in ANSWER_FIELDS or k in reads] if len(docs) else []
    # the scored multiple-choice rows among those read, with their rows as the source gave them
    rows = [(s, docs[i]) for i, s in enumerate(subject.samples[:PROBE_ROWS]) if s.choices and s.gold]
    if len(rows) < MIN_ROWS:
        return
    for name in names:
        named, other = 0, []
        for sample, doc in rows:
            value = raw = doc.get(name)
            keys = [loose(c) for c in sample.choices]
            if isinstance(value, bool):  # the one choice that says it (yes for True), where there is one
                said = [k for k in keys if k in _SAYS[value]]
                value = sample.choices[keys.index(said[0])] if len(said) == 1 else ""
            if not isinstance(value, str) or not value.strip():
                continue
            key = loose(value)
            if key not in keys or keys.count(key) > 1:
                continue  # the answer is not a choice's text (an index, a letter for text choices)
            named += 1
            if keys[sample.gold[0]] != key:
                other.append((sample, f"{value!r:.30}" if raw is value else f"{raw}, which names {value!r:.20}"))
        if named >= MIN_ROWS and len(other) > AGREE_SHARE * named:
            sample, shown = other[0]
            picked = Counter(loose(s.choices[s.gold[0]]) for s, _ in other).most_common(1)[0][0]
            yield subject.at_row(
                sample.sample,
                f"the row's '{name}' is {shown}, one of its choices, and the right choice the target gives is "
                f"{sample.choices[sample.gold[0]]!r:.30} (in {len(other)} of the {named} rows whose '{name}' names a "
                f"choice, most often {picked!r:.20}): the target maps the answer to the wrong choice (an inverted or "
                "permuted list in the target, or choices in another order than the mapping assumes)",
                "target",
            )
            return


RULES = (
    AuditRule(
        "target.contradicts-answer",
        "warning",
        "The row names its answer as one of its choices' texts, and the target's right choice is another in most "
        "rows: the mapping from answer to choice is inverted or permuted.",
        gold_contradicts_answer,
    ),
)
