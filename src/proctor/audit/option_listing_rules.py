"""A prompt that lists the options under letters, one line each, printing one option twice: MMLU's
``C. {{ B }}`` (a line copied and not edited). Rows whose answer is C are never shown it, and B is offered
under two letters."""

from __future__ import annotations

import re
from typing import Iterator

from proctor.audit.asked_form_rules import listed_labels_differ
from proctor.audit.fallback import first_found
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

# "A. {{ A }}", "(B) {{ choices[1] }}", "C: {{ option_c }}": a letter, its mark, then one value printed alone
_OPTION_LINE = re.compile(r"^[ \t]*\(?([A-Z])[.):][ \t]*\{\{-?\s*([^{}]+?)\s*-?\}\}[ \t]*$", re.MULTILINE)
_INDEXED = re.compile(r"^(\w+)\s*\[\s*(\d+)\s*\]$")


def _listing(subject: AuditSubject) -> tuple[str, str] | None:
    """(the setting, its template) that writes the prompt: a native prompt, lm-eval's doc_to_text."""
    if subject.templated:
        return ("prompt", subject.spec.prompt) if isinstance(subject.spec.prompt, str) else None
    config = getattr(getattr(subject.handler, "task", None), "config", None)
    text = getattr(config, "doc_to_text", None)
    return ("doc_to_text", text) if isinstance(text, str) and "{{" in text else None


def repeated_option(subject: AuditSubject) -> Iterator[Hit]:
    found = _listing(subject)
    if found is None:
        return
    key, template = found
    lines = _OPTION_LINE.findall(template)
    if len(lines) < 3:
        return
    letters = [letter for letter, _ in lines]
    if letters != sorted(letters):
        return  # not one listing
    seen: dict[str, str] = {}
    for letter, value in lines:
        value = " ".join(value.split())
        if value in seen:
            yield subject.at_line(
                key,
                f"the {key} lists the options under letters and prints {{{{ {value} }}}} under both "
                f"{seen[value]} and {letter}: rows whose answer is {letter} never see it, and one option is "
                "offered twice",
                key,
            )
            return
        seen[value] = letter
    indexed = [_INDEXED.match(" ".join(v.split())) for _, v in lines]
    if all(indexed) and len({m.group(1) for m in indexed if m}) == 1:
        positions = [int(m.group(2)) for m in indexed if m]
        if positions != list(range(positions[0], positions[0] + len(positions))):
            shown = ", ".join(f"{letter} -> [{p}]" for (letter, _), p in zip(lines, positions))
            yield subject.at_line(
                key,
                f"the {key} lists the options under letters out of their order ({shown}): the letter a row's "
                "answer is shown under is not the choice it is scored as",
                key,
            )


RULES = (
    AuditRule(
        "prompt.options-listed-wrong",
        "warning",
        "A prompt that lists the options under letters prints one option under two letters (`C. {{ B }}`), or "
        "indexes them out of order: some rows never see their answer, or see it under another letter; or scores "
        "single-label choices that are not the labels it lists (' 1'..' 4' or full-width ' Ａ' under 'A.'..'D.').",
        first_found(repeated_option, listed_labels_differ),
    ),
)
