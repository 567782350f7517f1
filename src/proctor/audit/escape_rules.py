"""Settings written with their escapes spelled out: YAML keeps ``'\\n'`` in single quotes as a backslash and an n.

``stop: ['\\n']`` then never stops at a newline, and ``target_delimiter: '\\n'`` puts two characters before every
choice. ``text.escaped`` sees such text where it reaches the prompt; these settings never do.
"""

from __future__ import annotations

from typing import Iterator

from proctor.audit.setting_rules import generation_settings, lmeval_config
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

_SPELLED = ("\\n", "\\t", "\\r")


def _spelled(value: object) -> str | None:
    if isinstance(value, str):
        return next((e for e in _SPELLED if e in value), None)
    return None


def _settings(subject: AuditSubject) -> Iterator[tuple[str, str, object]]:
    """(the task file's key, the field, the value) of each setting that is meant to hold whitespace."""
    settings = generation_settings(subject)
    if settings is not None:
        for stop in settings.stop:
            yield settings.key, settings.stop_field, stop
    config = lmeval_config(subject)
    if config is not None:
        yield "target_delimiter", "target_delimiter", getattr(config, "target_delimiter", None)
        yield "fewshot_delimiter", "fewshot_delimiter", getattr(config, "fewshot_delimiter", None)
    elif subject.templated:
        spec = subject.spec
        yield "target_delimiter", "target_delimiter", spec.target_delimiter
        if spec.fewshot is not None:
            yield "fewshot", "fewshot.separator", spec.fewshot.separator
        if spec.extraction is not None:
            yield "extraction", "extraction.answer_tag", spec.extraction.answer_tag


def escapes_spelled_out(subject: AuditSubject) -> Iterator[Hit]:
    for key, field, value in _settings(subject):
        escape = _spelled(value)
        if escape is not None:
            yield subject.at_line(
                key,
                f"{field} {value!r} holds {escape!r} written out, a backslash and a letter, not the character it "
                f"stands for (YAML keeps escapes as they are in single quotes): write it in double quotes",
                field,
            )
            return


RULES = (
    AuditRule(
        "settings.escaped",
        "warning",
        "A stop string, delimiter, separator or answer tag holds an escape written out ('\\n' in YAML single "
        "quotes): a backslash and a letter, not a newline.",
        escapes_spelled_out,
    ),
)
