"""``target.not-a-choice`` for a generated task whose prompts offer a set of answers (a label set written in the
template): a row whose reference is none of them ('positive' where the prompt offers 'Positif'), or a label set
spelled one letter off the one offered ('Positif' where a Sundanese prompt offers 'Positip')."""

from __future__ import annotations

from typing import Iterator

from proctor.audit.fixed_text import fixed_text, said_in
from proctor.audit.source_rows import generated_rows
from proctor.audit.subject import AuditSubject, loose
from proctor.core.audit import Hit

NAMED_SHARE = 0.6  # most rows' references are answers the template offers: the task is a choice among them


def unoffered_references(subject: AuditSubject) -> Iterator[Hit]:
    """A generated task whose prompts offer a set of answers (a label set written in the template) where some
    rows' reference is none of them ('positive' where the prompt offers 'Positif'): those rows cannot be right."""
    rows = [i for i in generated_rows(subject) if len(subject.samples[i].references) == 1]
    if len(rows) < 3:
        return
    texts = subject.prompt_texts
    prefix, suffix = subject.fixed_text if len(rows) == len(texts) else fixed_text([texts[i] for i in rows])
    fixed = prefix + "\n" + suffix
    if not fixed.strip():
        return
    offered: dict[str, bool] = {}
    for i in rows:
        reference = subject.samples[i].references[0].strip()
        if reference and reference not in offered:
            offered[reference] = said_in(reference, fixed)
        if len(offered) > 50:
            return  # free answers, not a label set
    # offered: named on a line that names two or more of them (an options line, "Positif, Negatif, atau
    # Netral"), not each alone (a fixed few-shot example's answer names one label, not the set)
    lines = [line for line in fixed.splitlines() if line.strip()]
    listed: set[str] = set()
    for line in lines:
        on_line = {r for r, is_named in offered.items() if is_named and said_in(r, line)}
        if len(on_line) >= 2:
            listed |= on_line
    offered = {r: r in listed for r in offered}
    named = [i for i in rows if offered.get(subject.samples[i].references[0].strip())]
    if len(named) < NAMED_SHARE * len(rows):
        yield from _misspelt_labels(subject, rows, offered, fixed)
        return
    if len(named) == len(rows):
        return
    labels = sorted({subject.samples[i].references[0].strip() for i in named})
    for i in rows:
        reference = subject.samples[i].references[0].strip()
        if offered.get(reference):
            continue
        close = [label for label in labels if loose(label) == loose(reference)]
        how = f"it is {close[0]!r} up to case and spacing" if close else "no answer the prompt offers"
        yield subject.at_row(
            subject.samples[i].sample,
            f"the reference {reference!r:.40} is not one of the answers the prompt offers ({', '.join(labels)}): "
            f"{how}, so a model that answers as asked is scored wrong",
            "target",
        )


MISSPELT_SHARE = 0.1  # of the rows: references spelled one letter off a word the prompt offers


def _one_edit(a: str, b: str) -> bool:
    """Whether two different words are one substitution, insertion or deletion apart."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) == 1
    short, long = sorted((a, b), key=len)
    return any(long[:k] + long[k + 1 :] == short for k in range(len(long)))


def _misspelt_labels(subject: AuditSubject, rows: list[int], offered: dict[str, bool], fixed: str) -> Iterator[Hit]:
    """References of a small label set that the prompt offers spelled one letter otherwise ('Positif' where a
    Sundanese prompt offers 'Positip'): no answer the prompt asks for is ever the reference."""
    if len(offered) > 12:
        return
    words = {w.strip(".,;:!?\"'()[]").casefold() for w in fixed.split()}
    close = {}
    for reference, is_offered in offered.items():
        if is_offered or len(reference) < 4 or " " in reference:
            continue
        match = next((w for w in sorted(words) if len(w) >= 4 and _one_edit(reference.casefold(), w)), None)
        if match is not None:
            close[reference] = match
    hits = [i for i in rows if subject.samples[i].references[0].strip() in close]
    if not hits or len(hits) < MISSPELT_SHARE * len(rows):
        return
    reference = subject.samples[hits[0]].references[0].strip()
    yield subject.at_row(
        subject.samples[hits[0]].sample,
        f"the reference {reference!r:.40} is spelled one letter off {close[reference]!r}, the answer the prompt "
        f"offers, in {len(hits)} of {len(rows)} rows: a model that answers as asked is scored wrong (a label set "
        "of another language or spelling)",
        "target",
    )
