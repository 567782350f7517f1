"""What a prompt's text shows twice or in a form the scoring does not expect: a cue the data already holds and
the template adds again ("Question: Question: ...\nAnswer:\nAnswer:"), a chat turn written out by hand that the
model's chat template wraps again, and choices that carry their own option letter ("A) ...") where the prompt
lists no options (each choice's score then starts with its letter, and "A" is the likelier token)."""

from __future__ import annotations

import re
from typing import Iterator

from proctor.audit.continuation_rules import choices_repeat_prompt, continuation_carries_cue
from proctor.audit.fallback import first_found
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

PROBE_ROWS = 200
MOST = 0.5  # of the rows read: the template's doing, not a row's accident
MIN_ROWS = 3

# a cue word, its colon, then the same cue again with only spacing between ("Answer:\nAnswer:")
_DOUBLED_CUE = re.compile(r"(?<![\w])([^\W\d_][^\W\d_ ]{0,19}(?: [^\W\d_]{1,20})?):\s*\1:", re.IGNORECASE)
# the turn markers of common chat formats (ChatML, Llama 3, Llama 2 and Mistral, Gemma, Phi and Zephyr)
_CHAT_MARKERS = ("<|im_start|>", "<|start_header_id|>", "[INST]", "<start_of_turn>", "<|user|>", "<|assistant|>")
_LETTER_PREFIX = re.compile(r"^\s*\(?([A-Ja-j])\s*[).:]\s*\S")  # letters only: "1.5", "2.5" are numbers


def _probe(subject: AuditSubject) -> int:
    return min(len(subject.samples), PROBE_ROWS)


def doubled_cue(subject: AuditSubject) -> Iterator[Hit]:
    probe = _probe(subject)
    if probe < MIN_ROWS:
        return
    texts = subject.prompt_texts
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


def letter_prefixed_choices(subject: AuditSubject) -> Iterator[Hit]:
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
        marks = [m.group(1).upper() if (m := _LETTER_PREFIX.match(c)) else None for c in choices]
        if all(marks) and marks == [chr(ord(marks[0] or "A") + k) for k in range(len(marks))]:
            prefixed += 1
            first = i if first is None else first
    if first is None or prefixed < MIN_ROWS or prefixed < MOST * probe:
        return
    sample = samples[first]
    match = _LETTER_PREFIX.match(sample.choices[0])
    body = sample.choices[0][match.end() - 1 :].strip() if match else ""
    if body and body in subject.prompt_texts[first]:
        return  # the prompt lists the options: the choices name the one picked, letter and all
    yield subject.at_row(
        sample.sample,
        f"every choice starts with its own option letter ({sample.choices[0]!r}, ...) in {prefixed} of the {probe} "
        "rows read, and the prompt lists no options: each choice is scored with its letter, so the number leans "
        "to the likelier letter ('A') rather than the answer; drop the letters from the choices",
        "choices",
    )


RULES = (
    AuditRule(
        "prompt.doubled-cue",
        "warning",
        "The prompt says its cue twice in a row ('Question: Question:', 'Answer:\\nAnswer:') in most rows: the data "
        "already holds the cue the template adds; or most rows' choices (all of a row's) or reference answers start "
        "with the cue the prompt ends with ('Answer:' then 'Answer: x').",
        first_found(doubled_cue, continuation_carries_cue),
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
        "Every choice starts with its own option letter ('A) ...', 'B) ...') and the prompt lists no options: each "
        "choice is scored with its letter, and the number leans to the likelier letter.",
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
