"""Where the prompt meets what is scored after it: a continuation that repeats the prompt (HellaSwag endings
stored as ctx + ending, scored as 'ctx ctx ending'), that starts with the cue the prompt ends with ('Answer:
Answer: x'; a reference 'A: Paris' after 'A:', which no model writes again), or that starts with a space while the
delimiter adds another ('Answer:  no').

Only the first ``PROBE_ROWS`` rows are read: each is the template's or the data's form, not a row's accident.
"""

from __future__ import annotations

import os
import re
from typing import Iterator

from proctor.audit.probe_rows import FIRST_ROWS, PROBE_ROWS
from proctor.audit.subject import AuditSubject
from proctor.core.audit import Hit

MIN_ROWS = 3  # not probe_rows.MIN_ROWS (4), on purpose: this rule also asks for MOST of the rows read,
# so three rows that agree are the template's doing, not chance, and a short task is still read
MOST = 0.5
TAIL_WORDS = 5  # the prompt's last words a continuation must repeat: a phrase, not a word shared by chance

_LAST_CUE = re.compile(r"([^\W\d_][^\W\d_ ]{0,24}):[ \t]*\Z")


def _probe(subject: AuditSubject) -> int:
    return min(len(subject.samples), PROBE_ROWS)


def _repeats_prompt(prompt: str, choices: tuple[str, ...]) -> bool:
    words = prompt.split()
    if len(words) < TAIL_WORDS or len(choices) < 2:
        return False
    shared = os.path.commonprefix([" ".join(c.split()) for c in choices])
    return " ".join(words[-TAIL_WORDS:]) in shared


def choices_repeat_prompt(subject: AuditSubject) -> Iterator[Hit]:
    probe = _probe(subject)
    texts, samples = subject.prompt_texts, subject.samples
    found = [i for i in range(probe) if _repeats_prompt(texts[i], samples[i].choices)]
    if len(found) < MIN_ROWS or len(found) < MOST * probe:
        return
    sample = samples[found[0]]
    tail = " ".join(texts[found[0]].split()[-TAIL_WORDS:])
    yield subject.at_row(
        sample.sample,
        f"every choice repeats the prompt's own words ({tail!r}) at its start, in {len(found)} of the {probe} rows "
        f"read (e.g. {sample.choices[0].strip()!r:.60}): each is scored after the prompt that already shows them "
        "('... he ... he is ...'), a text no model writes; store the endings alone, or leave the context out of "
        "the prompt",
        "choices",
    )


def continuation_carries_cue(subject: AuditSubject) -> Iterator[Hit]:
    """Most rows' choices (all of a row's) or references start with the cue the prompt ends with."""
    probe = _probe(subject)
    texts, samples = subject.prompt_texts, subject.samples
    found: list[tuple[int, str, str]] = []
    for i in range(probe):
        if i == FIRST_ROWS and not found:
            return  # a cue most rows' answers carry shows in the first rows
        cue = _LAST_CUE.search(texts[i])
        answers = samples[i].choices or samples[i].references
        if cue is None or not answers:
            continue
        spelt = cue.group(1) + ":"
        if all(a.lstrip().startswith(spelt) for a in answers):
            found.append((i, spelt, "choices" if samples[i].choices else "target"))
    if len(found) < MIN_ROWS or len(found) < MOST * probe:
        return
    i, spelt, field = found[0]
    what = "choice" if field == "choices" else "reference answer"
    yield subject.at_row(
        samples[i].sample,
        f"every {what} starts with {spelt!r}, the cue the prompt ends with, in {len(found)} of the {probe} rows "
        f"read (e.g. {(samples[i].choices or samples[i].references)[0].strip()!r:.50}): "
        + (
            f"each choice is scored as '{spelt} {spelt} ...', a text no model writes"
            if field == "choices"
            else "a model writes its answer after the cue and never the cue again, so no answer matches"
        ),
        field,
    )


def prespaced_choices(subject: AuditSubject) -> Iterator[Hit]:
    """Choices stored with a leading space (lm-eval's convention) under a delimiter that adds another."""
    if subject.spec.kind != "multiple_choice":
        return
    delimiter = subject.spec.target_delimiter
    if not delimiter or not delimiter.isspace():
        return
    # lm-eval's samples carry the delimiter before each choice already; the other dialects add it when scoring
    lead = 0 if subject.templated else len(delimiter)
    probe = _probe(subject)
    rows = [s for s in subject.samples[:probe] if s.choices]
    # rows of option letters (' A'..' D') are spared: every choice carries the same extra space, so the letters
    # are still compared after one prefix (red team 10 keeps them as controls); texts each start oddly
    spaced = [
        s
        for s in rows
        if all(c[lead : lead + 1].isspace() and c[:lead] == delimiter[:lead] for c in s.choices)
        and not all(len(c.strip()) <= 1 for c in s.choices)
    ]
    if len(spaced) < MIN_ROWS or len(spaced) < MOST * len(rows):
        return
    key = "target_delimiter" if "target_delimiter" in subject.task.lines else "choices"
    shown = delimiter + spaced[0].choices[0][lead:]
    yield subject.at_line(
        key,
        f"the choices start with a space of their own and the delimiter {delimiter!r} adds another, in "
        f"{len(spaced)} of the {len(rows)} rows read: every continuation starts with two spaces ({shown!r:.30}), "
        "a text a model has rarely seen; strip the choices, or set target_delimiter to ''",
        "target_delimiter",
    )
