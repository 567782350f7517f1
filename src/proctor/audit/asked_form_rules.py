"""The scored continuation against what the prompt asks for: the labels a prompt lists its options under must be
the choices' own labels ('A.'..'D.' listed, ' 1'..' 4' or full-width ' Ａ'..' Ｄ' scored), and a prompt, system
text or description that says "answer with the letter" is not scored on the option texts.

Only the first ``PROBE_ROWS`` rows are read, with one cheap line regex each: the form is the template's.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterator

from proctor.audit.probe_rows import PROBE_ROWS
from proctor.audit.setting_rules import lmeval_config
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

MIN_ROWS = 3  # not probe_rows.MIN_ROWS (4), on purpose: this rule also asks for MOST of the rows read,
# so three rows that agree are the template's doing, not chance, and a short task is still read
MOST = 0.5
TEXT_WORDS = 2  # choices of this many words or more (median) are option texts, not labels

# an option listed under a label, one line each: "A. text", "(B) text", "3) text", "Ａ．text". Not the
# listing pattern of referring_rules or example_format_rules, on purpose: this one captures the label, since the
# rule compares the labels listed with the choices' own; it reads every capital, '0' and the full-width forms
# (a listing under 'Ａ' against choices ' A' is what it reports), and no lower case, so that a line opening
# with 'e.g.' or 'i.e.' is not read as options 'e' and 'i' the choices lack (a finding where none is due).
_LISTED = re.compile(r"^[ \t]*[(（]?([A-Z0-9Ａ-Ｚ０-９])([.)．）:：])[ \t]*\S", re.MULTILINE)
# the same labels in parentheses inside a line: flan MMLU's "(A) x (B) y (C) z (D) w" lists the options on one line.
# Each stands alone (a space or the line's start before it, a space and text after): 'sqrt(2), sqrt(3)' or 'f(1)'
# in a question lists nothing
_INLINE = re.compile(r"(?:^|(?<=\s))[(（]([A-Z0-9Ａ-Ｚ０-９])[)）](?=[ \t]+\S)")
_FIRST_LABELS = "A01Ａ０１"  # an inline listing counts up from its first label
# a question/answer dialogue's cues ("Q: ...", "A:"), which open lines with a letter and a colon and list nothing
_CUE_DIALOGUE = re.compile(r"^[ \t]*Q[:：]", re.MULTILINE)
# an instruction to answer with the option's letter or number
_ASKS_LABEL = re.compile(
    r"\b(?:answer|reply|respond|output|give|write|choose|select|pick)\b[^.\n]{0,40}?\bthe (letter|number)\b"
    r"|\bthe (letter|number) of the (?:correct|right|best) (?:option|answer|choice)",
    re.IGNORECASE,
)


def _label(choice: str) -> str | None:
    """The label a choice is ('A' of ' A', '(A)', 'A.'), or None where it is a text."""
    core = choice.strip().strip("().（）．")
    return core if len(core) == 1 and core.isalnum() else None


def _runs(labels: list[str]) -> list[str]:
    """The labels that stand in a run of two or more consecutive ones ('A', 'B', 'C'; '1', '2'; 'Ａ', 'Ｂ'), in
    the order first seen: a listing counts its labels up, where a lone 'Q' or a stray '3.' beside it lists nothing."""
    kept: list[str] = []
    run: list[str] = []
    for label in dict.fromkeys(labels):
        if run and ord(label) != ord(run[-1]) + 1:
            kept += run if len(run) >= 2 else []
            run = []
        run.append(label)
    return kept + (run if len(run) >= 2 else [])


def listed_labels(text: str) -> list[str]:
    """The labels a prompt lists its options under: one line each ("A. x", "(B) y"), or in parentheses on one line
    ("(A) x (B) y", flan MMLU's form), never a question/answer dialogue's "Q:" and "A:" cues."""
    dialogue = _CUE_DIALOGUE.search(text) is not None
    found: list[tuple[int, str]] = [
        (m.start(1), m.group(1))
        for m in _LISTED.finditer(text)
        if not (dialogue and m.group(1) in "QA" and m.group(2) in ":：")
    ]
    for line in re.finditer(r"[^\n]+", text):
        inline = list(_INLINE.finditer(line.group()))
        if len(inline) >= 2 and inline[0].group(1) in _FIRST_LABELS:
            found += [(line.start() + m.start(1), m.group(1)) for m in inline]
    return _runs([label for _, label in sorted(set(found))])


def listed_labels_differ(subject: AuditSubject) -> Iterator[Hit]:
    """Single-label choices that are not the labels the prompt lists the options under."""
    if subject.spec.kind != "multiple_choice":
        return
    samples, texts = subject.samples, subject.prompt_texts
    probe = min(len(samples), PROBE_ROWS)
    wrong: list[tuple[int, list[str], list[str]]] = []
    labelled = 0
    for i in range(probe):
        labels = [_label(c) for c in samples[i].choices]
        if len(labels) < 2 or not all(labels):
            continue
        listed = listed_labels(texts[i])
        if len(listed) < 2:
            continue
        labelled += 1
        if not set(labels) <= set(listed):
            wrong.append((i, listed, [str(label) for label in labels]))
    if len(wrong) < MIN_ROWS or len(wrong) < MOST * labelled:
        return
    i, listed, shown = wrong[0]
    width = all(unicodedata.normalize("NFKC", c) in listed for c in shown)
    how = " (the same letters in another width: each is a rare token the model was not shown)" if width else ""
    yield subject.at_row(
        subject.samples[i].sample,
        f"the prompt lists the options under {', '.join(listed[:6])} and the scored choices are "
        f"{', '.join(map(repr, shown[:6]))}{how}, in {len(wrong)} of the {labelled} rows read: the model is "
        "scored on labels the prompt never uses",
        "choices",
    )


def _median_words(subject: AuditSubject, probe: int) -> float:
    words = sorted(len(c.split()) for s in subject.samples[:probe] for c in s.choices)
    return words[len(words) // 2] if words else 0


def asks_label_scores_text(subject: AuditSubject) -> Iterator[Hit]:
    """An explicit 'answer with the letter' over choices that are the option texts."""
    if subject.spec.kind != "multiple_choice" or not subject.samples:
        return
    probe = min(len(subject.samples), PROBE_ROWS)
    if any(all(_label(c) for c in s.choices) for s in subject.samples[:probe] if s.choices):
        return  # some rows are scored on labels
    if _median_words(subject, probe) < TEXT_WORDS:
        return
    chat = subject.spec.chat if subject.templated else None
    config = None if subject.templated else lmeval_config(subject)
    description = getattr(config, "description", None)
    places = [
        ("chat.system", "chat", chat.system if chat is not None and subject.use_chat else None),
        ("description", "description", description if isinstance(description, str) else None),
        ("prompt" if subject.templated else "doc_to_text", "prompt", subject.prompt_texts[0]),
    ]
    for field, key, text in places:
        match = _ASKS_LABEL.search(text or "")
        if match is None:
            continue
        what = (match.group(1) or match.group(2) or "label").lower()
        yield subject.at_line(
            key,
            f"the {field} asks for the option's {what} ({match.group()!r}) and the scored choices are the option "
            f"texts (e.g. {subject.samples[0].choices[0].strip()!r:.40}): the model is scored on a continuation it "
            f"was told not to write; score the {what}s, or drop the instruction",
            field,
        )
        return


RULES = (
    AuditRule(
        "prompt.asks-other-form",
        "warning",
        "The prompt, chat.system or lm-eval's description asks for the option's letter or number ('Answer with the "
        "letter of the correct option') while the scored choices are the option texts.",
        asks_label_scores_text,
    ),
)
