"""Few-shot examples written by their own template (a native ``fewshot.template``) in another form than the scored
question: the model copies what the examples show, and is then scored on something else.

- the examples never write the cue the scored question ends with ('Q: ... A: ...' before 'Question: ...
  Answer:'): the format taught is not the one asked;
- the examples' answers, read after that cue, are words the scoring never offers ('True'/'False' where the
  choices are 'no'/'yes'), a letter where the choices are texts and no options are listed, or nothing.

Only the first rows' prompts are read (examples included), so the cost does not grow with the rows. Examples
rendered from the prompt itself (no template) or sent as chat turns are the question's own form, and are spared.
"""

from __future__ import annotations

import re
from typing import Iterator

from proctor.audit.fallback import first_found
from proctor.audit.shown_examples import demos_in_other_format, examples_in_other_labels
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

PROMPTS_READ = 20
ROWS_READ = 200  # rows whose choices or references make the label set
LABEL_SET = 20  # distinct answers at most for a task's answers to be a fixed set of labels

_LAST_CUE = re.compile(r"([^\W\d_][^\W\d_ ]{0,24}):[ \t]*\Z")
# an option listed under a label, one line each ('A. text', '(b) text'). Not referring_rules' wider pattern, on
# purpose: no colon form, since 'A: B' is an example's answer line in the 'Q: ... A: B' examples this rule reads,
# and the text searched can hold examples (it starts at the last blank line, or at 0): read as a listing, it
# would silence the rule on the very format it checks.
_LISTED = re.compile(r"^[ \t]*\(?[A-Ja-j1-9][.)]\s", re.M)
_LABEL = re.compile(r"\A\(?[A-Za-z0-9]\)?[.:]?\Z")  # an option letter or number as an answer ('A', '(b)', '3.')


def _templated_examples(subject: AuditSubject) -> bool:
    fewshot = subject.spec.fewshot if subject.templated else None
    chat_turns = subject.use_chat and subject.spec.chat is not None and subject.spec.chat.fewshot_as_turns
    return fewshot is not None and fewshot.count > 0 and bool(fewshot.template) and not chat_turns


def _scored_cue(text: str) -> re.Match[str] | None:
    return _LAST_CUE.search(text.rstrip(" "))


def _example_end(text: str) -> int:
    """Where the scored question starts, about: after the last blank line before its cue."""
    cue = _scored_cue(text)
    end = cue.start() if cue else len(text)
    return max(text.rfind("\n\n", 0, end), 0)


def example_answers(text: str, cue: str, end: int) -> list[str]:
    """What follows each occurrence of ``cue`` before ``end`` (the scored question's own cue): the rest of its
    line, or the next line where the cue ends its line ('Answer:\\n18')."""
    answers = []
    for match in re.finditer(re.escape(cue), text[:end]):
        after = text[match.end() : end].lstrip(" \t")
        after = after[1:] if after.startswith("\n") else after
        answers.append(after.split("\n", 1)[0].strip())
    return answers


def other_cue(subject: AuditSubject) -> Iterator[Hit]:
    if not _templated_examples(subject):
        return
    texts = [t for t in subject.prompt_texts[:PROMPTS_READ] if t]
    cue = _scored_cue(texts[0]) if texts else None
    if cue is None or len(cue.group(1)) < 2:
        return
    spelt = cue.group(1) + ":"
    if any(spelt in t[: _scored_cue(t).start()] for t in texts if _scored_cue(t)):  # type: ignore[union-attr]
        return
    yield subject.at_line(
        "fewshot",
        f"the scored question ends with {spelt!r}, which the few-shot examples (fewshot.template) never write: "
        "the examples teach another format than the one the model is asked in, and a model that copies them "
        "answers in their form; write the examples with the question's own cues",
        "fewshot.template",
    )


def _label_set(subject: AuditSubject) -> set[str] | None:
    """The answers the scoring offers when they are one small set across the rows (casefolded), else None."""
    rows = subject.samples[:ROWS_READ]
    if subject.spec.kind == "multiple_choice":
        sets = {tuple(c.strip().casefold() for c in s.choices) for s in rows if s.choices}
        return set(next(iter(sets))) if len(sets) == 1 else None
    found = {r.strip().casefold() for s in rows for r in s.references}
    return found if 0 < len(found) <= LABEL_SET else None


def example_answer_outside_labels(subject: AuditSubject) -> Iterator[Hit]:
    if not _templated_examples(subject) or subject.spec.kind not in ("multiple_choice", "generate"):
        return
    texts = [t for t in subject.prompt_texts[:PROMPTS_READ] if t]
    answers: list[str] = []
    for text in texts:
        cue = _scored_cue(text)
        if cue is not None:
            answers += example_answers(text, cue.group(1) + ":", cue.start())
    if not answers:
        return
    labels = _label_set(subject)
    empty = next((a for a in answers if not a), None)
    if empty is not None:
        why = "nothing: each example is shown without its answer"
    elif labels is not None and not all(a.casefold() in labels for a in answers):
        outside = next(a for a in answers if a.casefold() not in labels)
        why = (
            f"{outside!r}, which is not among the answers the task scores ({', '.join(map(repr, sorted(labels)[:6]))})"
            ": a model that copies the examples answers in words that are never counted right"
        )
    elif labels is None and subject.spec.kind == "multiple_choice" and all(_LABEL.match(a) for a in answers):
        rows = [s for s in subject.samples[:ROWS_READ] if s.choices]
        if not rows or any(all(_LABEL.match(c.strip()) for c in s.choices) for s in rows):
            return  # some rows' choices are option labels themselves
        if _LISTED.search(texts[0][_example_end(texts[0]) :]):
            return  # the question lists its options under labels: a lettered answer is the listing's
        why = (
            f"{answers[0]!r}, an option label, while the scored choices are the option texts: the examples teach "
            "an answer form the choices never take"
        )
    else:
        return
    yield subject.at_line(
        "fewshot",
        f"the few-shot examples (fewshot.template) answer {why}",
        "fewshot.template",
    )


RULES = (
    AuditRule(
        "fewshot.other-format",
        "warning",
        "The few-shot examples' own template (fewshot.template) never writes the cue the scored question ends with "
        "('Q:'/'A:' before 'Question:'/'Answer:'), or a dialect's examples (SEA-HELM's, a probsem prompt file's) "
        "answer after another cue or in words the task never scores: the examples teach another format.",
        first_found(other_cue, examples_in_other_labels, demos_in_other_format),
    ),
)
