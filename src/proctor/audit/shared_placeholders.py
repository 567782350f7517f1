"""A placeholder nobody filled, in the text every rendered prompt shares: ``{topic}`` in a probsem pretext, a
SEA-HELM preamble's ``{{language}}`` (doubled braces that Python's format turns into text), ``%(name)s``,
``${name}``, ``{{ name }}`` left by a template that was never rendered, or a word written as a slot ('<passage>',
'[QUESTION]'). Being the same in every row, it comes from the task's own text, not its data; every prompt shows it
where a value was meant, and nothing fails. ``placeholder_rules`` reads a Jinja template's own text; this reads
what any dialect rendered (the shared text is found once for all rules: ``subject.fixed_text``), so it costs one
search over a few lines."""

from __future__ import annotations

import os
import re
from typing import Iterator, Sequence

from proctor.audit.subject import AuditSubject
from proctor.core.audit import Hit

# the names a slot for a row's own text goes by ('<passage>', '[QUESTION]', '$topic'); an answer's slot
# ('<letter>', 'ANSWER') is how an instruction shows the form of the reply, and is left alone
_SLOT_NAMES = (
    "question|context|passage|text|topic|input|sentence|sentence1|sentence2|premise|hypothesis|document|article|"
    "query|claim|statement|subject|category|title|paragraph|story|dialogue|conversation|instruction|problem|"
    "source_text|source|language|lang|name|entity|word|options|choices"
)
_PLACEHOLDERS = (
    # Jinja's or Mustache's own syntax, never rendered
    r"\{\{-?\s*[A-Za-z_][A-Za-z0-9_.]*\s*-?\}\}",
    # Python's %-format and a shell's (or proctor's path variables)
    r"%\([A-Za-z_][A-Za-z0-9_]*\)[sdr]",
    r"\$\{[A-Za-z_][A-Za-z0-9_.]*\}",
    # a slot named as a row's text is named
    rf"<(?:{_SLOT_NAMES})>",
    rf"\[(?:{_SLOT_NAMES.upper()})\]",
    rf"(?<![\w$\\])\$(?:{_SLOT_NAMES})\b(?!\$)",
)
_ANY = re.compile("|".join(_PLACEHOLDERS))
# Python's format, where no Jinja template made the text (a Jinja template's own {name}: placeholder_rules)
_FORMAT = re.compile(r"(?<![{\w])\{[A-Za-z_][A-Za-z0-9_]*\}(?!\})")
# a slot for the model's reply, which an instruction shows to say the form of the answer
_REPLY_SLOT = re.compile(
    r"(?i)\b(?:final_?)?(?:answer|letter|choice|option|label|number|response|reply|output|result|verdict)s?\b"
)
# code written into the shared text (a code task's examples): its braces and dollars are the code's
_CODE = re.compile(r"\bdef |\breturn\b|\bprint\(|\bf\"|\bf'|\bfunction\b|\bconst |=>|;\s*$", re.M)


def _where(subject: AuditSubject, written: str) -> str:
    """The handler's setting the placeholder sits in (probsem's pretext, posttext or prompt file), else 'prompt'."""
    options = getattr(subject.handler, "options", None)
    for name in ("pretext", "posttext", "prompt"):
        value = getattr(options, name, None)
        if isinstance(value, str) and written in value:
            return name
    return "prompt"


PROBE_ROWS = 1000


def _shared(texts: Sequence[str]) -> str:
    """What the texts share at their start and end, to the character (a slot on the row's own line: 'Topic:
    <topic>. {question}'), with the whole lines every prompt shares."""
    probe = list(texts[:PROBE_ROWS])
    start = os.path.commonprefix([min(probe), max(probe)])
    tails = [t[::-1] for t in probe]
    end = os.path.commonprefix([min(tails), max(tails)])[::-1]
    return start + "\n" + end


def shared_placeholder(subject: AuditSubject) -> Iterator[Hit]:
    if len(subject.samples) < 2:
        return
    prefix, suffix = subject.fixed_text
    shared = prefix + "\n" + suffix + "\n" + _shared(subject.prompt_texts)
    if not any(c in shared for c in "{}%$<["):
        return
    if _CODE.search(shared):
        return
    match = _ANY.search(shared)
    if match is None and not subject.templated and _jinja_free(subject):
        match = _FORMAT.search(shared)
    if match is None:
        return
    written = match.group()
    if _REPLY_SLOT.search(written):
        return  # the form of the reply shown ('where {answer} is the letter': SEA-HELM's GPQA), not a row's slot
    if written.startswith("<") and "</" + written[1:] in shared:
        return  # a tag with its closing tag: markup the prompt asks for, not a slot
    field = _where(subject, written)
    yield Hit(
        f"every prompt shows {written!r}, a placeholder nobody filled, in the text all prompts share: the model is "
        "shown the slot where a value was meant (fill it, or write the text out)",
        file=subject.file,
        line=subject.line(field) if subject.templated else subject.task.line,
        field=field,
    )


def _jinja_free(subject: AuditSubject) -> bool:
    """Whether no Jinja template made the prompts (lm-eval's ``doc_to_text`` is one: placeholder_rules reads it)."""
    from proctor.audit.source_rows import templates

    return templates(subject)[0] is None
