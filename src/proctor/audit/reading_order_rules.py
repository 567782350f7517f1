"""A prompt and its choices that read the wrong way round: the prompt is the end of a sentence ("always got the
easier cases.") and each choice its beginning ("Sarah was a better surgeon than Maria so Maria"). Winogrande's
partial scoring written backwards does this: each option is scored after the text that should follow it, so the
model compares the options' own likelihoods, and the sentence's ending no longer decides anything. The signal is
in the text's form, not its words, so it holds in every cased script: a prompt (its last line) that starts in
lower case and ends with a full stop, and choices that each start with a capital and stop mid-sentence.

lm-eval's ``multiple_input`` tasks (the real Winogrande) are shown to the audit in this very shape, contexts as
choices and the continuation as the prompt, on purpose: ``AuditSubject.choices_lead`` marks them, and they are
not read here."""

from __future__ import annotations

from typing import Iterator

from proctor.audit.probe_rows import PROBE_ROWS
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

MIN_ROWS = 8  # a handful of rows of this shape happen by chance (a quoted line, an abbreviation)
MOST = 0.8  # of the rows read: the template's doing, not a few rows' accident
FIRST_ROWS = 20  # rows read before the rule gives up
_ENDS_SENTENCE = (".", "!", "?", "。", "！", "？")
_CLOSERS = "\"'”’)»"


def _first_letter(text: str) -> str:
    return next((c for c in text if c.isalpha()), "")


def _reads_as_ending(prompt: str) -> bool:
    """The prompt's last line starts in lower case and ends a sentence."""
    line = prompt.rstrip().rpartition("\n")[2].strip()
    first = _first_letter(line)
    return bool(first) and first.islower() and line.rstrip(_CLOSERS).endswith(_ENDS_SENTENCE)


def _reads_as_beginning(choice: str) -> bool:
    """A choice that starts with a capital and stops mid-sentence (no closing stop, comma or colon)."""
    text = choice.strip()
    first = _first_letter(text)
    return bool(first) and first.isupper() and not text.rstrip(_CLOSERS).endswith((*_ENDS_SENTENCE, ",", ":", ";"))


def _reversed(prompt: str, choices: tuple[str, ...]) -> bool:
    return len(choices) > 1 and _reads_as_ending(prompt) and all(_reads_as_beginning(c) for c in choices)


def reversed_reading(subject: AuditSubject) -> Iterator[Hit]:
    if subject.choices_lead or subject.spec.kind != "multiple_choice":
        return
    samples, texts = subject.samples, subject.prompt_texts
    probe = min(len(samples), PROBE_ROWS)
    if probe < MIN_ROWS:
        return
    first = min(probe, FIRST_ROWS)
    if sum(_reversed(texts[i], samples[i].choices) for i in range(first)) < MOST * first:
        return  # the shape is the template's: most of the first rows would have it
    found = [i for i in range(probe) if _reversed(texts[i], samples[i].choices)]
    if len(found) < MIN_ROWS or len(found) < MOST * probe:
        return
    sample = samples[found[0]]
    yield subject.at_row(
        sample.sample,
        f"in {len(found)} of the first {probe} rows the prompt reads as the end of a sentence (it starts in lower "
        f"case and ends with a full stop: {texts[found[0]].strip()[-60:]!r}) and each choice as its beginning (a "
        f"capital, no closing stop: {sample.choices[0].strip()[:60]!r}): the prompt and the choices look swapped, "
        "so each choice is scored after the text that should follow it and the ending decides nothing",
        "prompt",
    )


RULES = (
    AuditRule(
        "prompt.reversed",
        "warning",
        "The prompt reads as the end of a sentence and each choice as its beginning (Winogrande's partial scoring "
        "written backwards): each choice is scored after the text that should follow it.",
        reversed_reading,
    ),
)
