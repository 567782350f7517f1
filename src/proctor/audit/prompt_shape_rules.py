"""What a prompt's text shows twice or in a form the scoring does not expect: a cue the data already holds and
the template adds again ("Question: Question: ...\nAnswer:\nAnswer:"), a chat turn written out by hand that the
model's chat template wraps again, and choices that carry their own option letter or number ("A) ...", "1) ...")
where the prompt lists no options (each choice's score then starts with its letter, and "A" is the likelier
token)."""

from __future__ import annotations

import re
from typing import Iterator, Sequence

from proctor.audit.continuation_rules import choices_repeat_prompt, continuation_carries_cue
from proctor.audit.fallback import first_found
from proctor.audit.probe_rows import FIRST_ROWS, PROBE_ROWS
from proctor.audit.row_cue import row_ends_with_cue
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

MOST = 0.5  # of the rows read: the template's doing, not a row's accident
MIN_ROWS = 3  # not probe_rows.MIN_ROWS (4), on purpose: this rule also asks for MOST of the rows read,
# so three rows that agree are the template's doing, not chance, and a short task is still read

# a cue word, its colon, then the same cue again with only spacing between ("Answer:\nAnswer:")
_DOUBLED_CUE = re.compile(r"(?<![\w])([^\W\d_][^\W\d_ ]{0,19}(?: [^\W\d_]{1,20})?):\s*\1:", re.IGNORECASE)
# the turn markers of common chat formats (ChatML, Llama 3, Llama 2 and Mistral, Gemma, Phi and Zephyr)
_CHAT_MARKERS = ("<|im_start|>", "<|start_header_id|>", "[INST]", "<start_of_turn>", "<|user|>", "<|assistant|>")
_LETTER_PREFIX = re.compile(r"^\s*\(?([A-Ja-j])\s*[).:]\s*\S")
# an option number: '1) ', '1. ', '(1) ', '1: ', with a space after it ("1.5", "2:1" are numbers and ratios)
_NUMBER_PREFIX = re.compile(r"^\s*\(?([0-9]{1,2})\s*[).:]\s+\S")


def _probe(subject: AuditSubject) -> int:
    return min(len(subject.samples), PROBE_ROWS)


def doubled_cue(subject: AuditSubject) -> Iterator[Hit]:
    probe = _probe(subject)
    if probe < MIN_ROWS:
        return
    texts = subject.prompt_texts
    if not any(_DOUBLED_CUE.search(texts[i]) for i in range(min(probe, FIRST_ROWS))):
        return  # a cue the template adds twice shows in most rows: none of the first
    found = [(i, m) for i in range(probe) if (m := _DOUBLED_CUE.search(texts[i])) is not None]
    if len(found) < MIN_ROWS or len(found) < MOST * probe:
        return
    i, match = found[0]
    yield subject.at_row(
        subject.samples[i].sample,
        f"the prompt says {match.group(1)!r} twice in a row ({match.group(0)!r}) in {len(found)} of the {probe} rows "
        "read: the row's text already holds the cue the template adds, so the model is shown a prompt that no "
        "example of the format looks like",
        "prompt",
    )


def chat_by_hand(subject: AuditSubject) -> Iterator[Hit]:
    if not subject.use_chat:
        return
    prefix, suffix = subject.fixed_text
    shared = prefix + "\n" + suffix
    marker = next((m for m in _CHAT_MARKERS if m in shared), None)
    if marker is None:
        return
    yield subject.at_line(
        "chat",
        f"the prompt writes a chat turn out by hand ({marker!r} in every row) and the task runs under the model's "
        "chat template too: each prompt is wrapped twice, a turn inside a turn; drop one of them (chat: "
        "{enabled: false}, or the markers from the prompt)",
        "prompt",
    )


def _prefix(choice: str) -> re.Match[str] | None:
    """The option letter or number a choice starts with ('A) ...', '(1) ...'), or None."""
    return _LETTER_PREFIX.match(choice) or _NUMBER_PREFIX.match(choice)


def in_option_order(choices: Sequence[str]) -> bool:
    """Whether every choice starts with its own option letter, or its own option number counted from 0 or 1, in
    order ('A) ...', 'B) ...'; '1) ...', '2) ...')."""
    if len(choices) < 2:
        return False
    found = [_prefix(c) for c in choices]
    if not all(found):
        return False
    marks = [m.group(1).upper() for m in found if m is not None]
    if all(m.isdigit() for m in marks):
        start = int(marks[0])
        return start in (0, 1) and marks == [str(start + k) for k in range(len(marks))]
    return marks == [chr(ord(marks[0]) + k) for k in range(len(marks))] and marks[0].isalpha()


# a question that lists lettered options itself: "A) ... B) ... C) ..." (three letters in order at least)
_LISTED_IN_TEXT = re.compile(r"(?:^|\s)\(?A[).]\s.+?(?:^|\s)\(?B[).]\s.+?(?:^|\s)\(?C[).]\s", re.DOTALL)


def _listed_rows(subject: AuditSubject) -> Iterator[Hit]:
    """A use case's rows (which its code prompts and may shuffle): choices carrying their letter, or questions
    that list lettered options themselves, which the use case then lists again under its own letters."""
    rows = list(subject.listed_choices)[:PROBE_ROWS]
    if len(rows) < MIN_ROWS:
        return
    prefixed = [r for r in rows if in_option_order(r.choices)]
    if len(prefixed) >= MOST * len(rows):
        first = prefixed[0]
        yield Hit(
            f"every choice starts with its own option letter or number ({first.choices[0]!r}, ...) in "
            f"{len(prefixed)} of the {len(rows)} rows read: the use case lists the choices under letters of its own "
            "(and may shuffle them), so the model reads two marks per option, which disagree once shuffled; drop the "
            "marks from the choices",
            file=first.file or first.sample.file,
            row=first.row,
            field=first.field,
            sample=first.sample.id,
        )
        return
    listing = [r for r in rows if r.question and _LISTED_IN_TEXT.search(r.question)]
    if len(listing) >= MOST * len(rows):
        first = listing[0]
        yield Hit(
            f"the question lists its own lettered options in {len(listing)} of the {len(rows)} rows read, and the "
            "use case lists the choices again under its letters: the model sees two listings, which disagree once "
            "the use case shuffles the choices; drop the listing from the question",
            file=first.file or first.sample.file,
            row=first.row,
            field=first.question_field,
            sample=first.sample.id,
        )


def letter_prefixed_choices(subject: AuditSubject) -> Iterator[Hit]:
    if subject.listed_choices:
        yield from _listed_rows(subject)
        return
    probe = _probe(subject)
    samples = subject.samples
    if probe < MIN_ROWS or subject.spec.kind != "multiple_choice":
        return
    prefixed = 0
    first = None
    for i in range(probe):
        choices = samples[i].choices
        if len(choices) < 2:
            continue
        if in_option_order(choices):
            prefixed += 1
            first = i if first is None else first
    if first is None or prefixed < MIN_ROWS or prefixed < MOST * probe:
        return
    sample = samples[first]
    match = _prefix(sample.choices[0])
    body = sample.choices[0][match.end() - 1 :].strip() if match else ""
    if body and body in subject.prompt_texts[first]:
        return  # the prompt lists the options: the choices name the one picked, letter and all
    first_mark = match.group(1) if match else "A"
    kind = "number" if first_mark.isdigit() else "letter"
    yield subject.at_row(
        sample.sample,
        f"every choice starts with its own option {kind} ({sample.choices[0]!r}, ...) in {prefixed} of the {probe} "
        f"rows read, and the prompt lists no options: each choice is scored with its {kind}, so the score leans "
        f"to the likelier {kind} ({first_mark!r}) rather than the answer; drop the {kind}s from the choices",
        "choices",
    )


_PLAIN_FIELD = re.compile(r"\{\{-?\s*([A-Za-z_]\w*)\s*-?\}\}")
LONG_WORDS = 3  # a question or a passage, not a label a template may well repeat


def field_twice(subject: AuditSubject) -> Iterator[Hit]:
    """A template without control blocks that prints one long field twice ('{{ query }}\n{{ query }}', a line
    copied and not edited): every prompt asks its question twice, which no example of the format does."""
    from collections import Counter
    from statistics import median

    from proctor.audit.source_rows import documents, templates

    prompt, _, _ = templates(subject)
    if not prompt or "{%" in prompt or len(subject.samples) < MIN_ROWS:
        return
    twice = [name for name, n in Counter(_PLAIN_FIELD.findall(prompt)).items() if n >= 2]
    docs = documents(subject)
    for name in twice:
        values = [docs[i].get(name) for i in range(_probe(subject))]
        texts = [v for v in values if isinstance(v, str)]
        if texts and median(len(t.split()) for t in texts) > LONG_WORDS:
            key = "prompt" if subject.templated else "doc_to_text"
            yield subject.at_line(
                key,
                f"the {key} prints {{{{ {name} }}}} twice: every prompt asks its '{name}' twice (a line copied and "
                "not edited?), which no example of the format does",
                key,
            )
            return


RULES = (
    AuditRule(
        "prompt.field-twice",
        "warning",
        "A prompt template without control blocks prints one long field (a question, a passage) twice: every "
        "prompt asks it twice.",
        field_twice,
    ),
    AuditRule(
        "prompt.doubled-cue",
        "warning",
        "The prompt says its cue twice in a row ('Question: Question:', 'Answer:\\nAnswer:') in most rows: the data "
        "already holds the cue the template adds; or most rows' choices (all of a row's) or reference answers start "
        "with the cue the prompt ends with ('Answer:' then 'Answer: x').",
        first_found(doubled_cue, continuation_carries_cue, row_ends_with_cue),
    ),
    AuditRule(
        "chat.written-by-hand",
        "warning",
        "The prompt writes a chat turn out by hand ('<|im_start|>user ...') and the task runs under the model's chat "
        "template too: each prompt is wrapped twice.",
        chat_by_hand,
    ),
    AuditRule(
        "choices.letter-prefixed",
        "warning",
        "Every choice starts with its own option letter or number ('A) ...', 'B) ...'; '1) ...') and the prompt lists "
        "no options: each choice is scored with its letter, and the number leans to the likelier letter.",
        letter_prefixed_choices,
    ),
    AuditRule(
        "choices.repeat-prompt",
        "warning",
        "Every choice starts with the prompt's own last words in most rows (HellaSwag endings stored as ctx + "
        "ending): each is scored after a prompt that already shows them.",
        choices_repeat_prompt,
    ),
)
