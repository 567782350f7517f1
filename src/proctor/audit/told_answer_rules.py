"""Rules that find the answer told to the model where the template's own fields do not show it: a generate task's
``chat.system`` printing a field that holds the reference under another name (TriviaQA's ``answer`` while the target
reads ``aliases``: under ``prompt.shows-target``), a classification row's own text naming its label
('... (Sentimen: Positif)': under ``prompt.contains-gold``), and the text every prompt shares holding an evaluated
row (a prompt file's worked examples: ``prompt.shows-evaluated-row``). The field names differ, so reading the
templates alone does not tell; the rows' values do."""

from __future__ import annotations

from typing import Iterable, Iterator

from proctor.audit.probe_rows import PROBE_ROWS
from proctor.audit.subject import AuditSubject, loose
from proctor.core.audit import AuditRule, Hit

SHOWN_SHARE = 0.5  # of the rows read: the field is the answer in most, not by chance in a few
MIN_ROWS = 3  # not probe_rows.MIN_ROWS (4), on purpose: this rule also asks for SHOWN_SHARE of the rows read,
# so three rows that agree are the template's doing, not chance, and a short task is still read


def answer_field_shown(subject: AuditSubject, key: str, fields: Iterable[str]) -> Iterator[Hit]:
    """Each field of ``fields`` (those the ``key`` template reads) whose value is one of the row's references in
    most rows read: the template tells the model the answer."""
    samples = subject.samples[:PROBE_ROWS]
    if len(samples) < MIN_ROWS:
        return
    for name in sorted(fields):
        same = 0
        for sample in samples:
            value = sample.sample.fields.get(name)
            if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value).strip():
                text = loose(str(value))
                same += any(loose(r) == text for r in sample.references)
        if same >= MIN_ROWS and same >= SHOWN_SHARE * len(samples):
            yield subject.at_line(
                key.split(".")[0],
                f"the {key} template shows '{name}', which is the row's reference answer in {same} of the "
                f"{len(samples)} rows read: the model is told the answer",
                key,
            )
            return


LABEL_SET = 12  # distinct references: a classification's labels, not free answers
LABEL_CHARS = 3  # 'A', 'no': letters and short words occur in any text
_WORD_EDGE = r"(?<!\w){}(?!\w)"


def label_in_row_text(subject: AuditSubject) -> Iterator[Hit]:
    """A generated row whose own part of the prompt (the template's shared text set aside: it lists every label)
    names its reference label and no other, in most rows: "... (Sentimen: Positif)" in SEA-HELM's text."""
    import re

    samples = subject.samples[:PROBE_ROWS]
    if len(samples) < MIN_ROWS or any(s.choices or len(s.references) != 1 for s in samples):
        return
    labels = {s.references[0].strip() for s in samples}
    if not 2 <= len(labels) <= LABEL_SET or 2 * len(labels) > len(samples) or min(map(len, labels)) < LABEL_CHARS:
        return  # free answers (a reading task's span, in its passage by design), not a classification's labels
    patterns = {label: re.compile(_WORD_EDGE.format(re.escape(label)), re.IGNORECASE) for label in labels}
    prefix, suffix = subject.fixed_text
    texts = subject.prompt_texts
    named = []
    for i, sample in enumerate(samples):
        own = texts[i][len(prefix) : len(texts[i]) - len(suffix)]
        label = sample.references[0].strip()
        if patterns[label].search(own) and not any(p.search(own) for other, p in patterns.items() if other != label):
            named.append(i)
    if len(named) >= MIN_ROWS and len(named) >= SHOWN_SHARE * len(samples):
        first = samples[named[0]].sample
        yield subject.at_row(
            first,
            f"the row's own text names its label ({samples[named[0]].references[0]!r}) and no other in "
            f"{len(named)} of the {len(samples)} rows read: the model can copy the answer",
            "prompt",
        )


DEMO_CHARS = 40  # a shared text this long can hold worked examples
ROW_LINE_CHARS = 8  # a row's line this long names the row, not a common word


def row_in_shared_text(subject: AuditSubject) -> Iterator[Hit]:
    """An evaluated row's own text written out in the text every prompt shares (a prompt file's worked examples,
    a preamble): the model is shown that row, answer and all, before it is asked it."""
    prefix, suffix = subject.fixed_text
    if len(prefix) < DEMO_CHARS or prefix.count("\n") < 2:
        return
    shared = {line.strip() for line in prefix.splitlines() if len(line.strip()) >= ROW_LINE_CHARS}
    texts = subject.prompt_texts
    start, end = len(prefix), len(suffix)
    shown: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        own = text[start : len(text) - end].strip()
        line = own.split("\n", 1)[0].strip()
        if line in shared:
            shown.setdefault(line, []).append(i)
    # a line many rows open with is the template's (a cue under an {% if %}), not one row's text
    rows = sorted(i for found in shown.values() if len(found) < max(3, 0.1 * len(texts)) for i in found)
    if rows:
        shown_rows = rows
        first = subject.samples[shown_rows[0]].sample
        line = texts[shown_rows[0]][start:].strip().split("\n", 1)[0]
        yield subject.at_row(
            first,
            f"the text every prompt shares (the prompt's worked examples) holds this row's own text ({line!r:.60}) "
            f"in {len(shown_rows)} of {len(texts)} rows: the model is shown the row, with its answer, before it is "
            "asked",
            "prompt",
        )


RULES = (
    AuditRule(
        "prompt.shows-evaluated-row",
        "warning",
        "The text every prompt shares (a prompt file's worked examples, a preamble) holds an evaluated row's own "
        "text: the model is shown the row, answer and all, before it is asked.",
        row_in_shared_text,
    ),
)
