"""A prompt that shows a row's list or mapping as Python writes it (``['Paris', 'Lyon']``): the template prints
the container itself where it meant its items (``{{ options }}`` for ``{{ options | join(', ') }}``), or a field
that is a list in some rows and a text in others. The model reads brackets and quotes; nothing fails."""

from __future__ import annotations

import re
from typing import Iterator

from proctor.audit.fallback import first_found
from proctor.audit.subject import READER_FIELDS, AuditSubject
from proctor.core.audit import AuditRule, Hit

# how Python writes a list, tuple or mapping of texts begins
_OPENING = re.compile(r"[\[({]['\"]")
MIN_REPR = 6  # shorter containers (['a']) are too likely to be meant
PROBE_ROWS = 1000  # prompts read: a template printing a list prints it in every row (searching all 100,000
# prompts of a large task costs more than the whole audit may add)


def python_repr_in_prompt(subject: AuditSubject) -> Iterator[Hit]:
    texts = subject.prompt_texts[:PROBE_ROWS]
    if _OPENING.search("\x01".join(texts)) is None:
        return
    shown: list[tuple[int, str, str]] = []  # (sample position, field, the container as written)
    for i, text in enumerate(texts):
        if _OPENING.search(text) is None:
            continue
        fields = subject.samples[i].sample.fields
        for name, value in fields.items():
            if name in READER_FIELDS or not isinstance(value, (list, tuple, dict)) or not value:
                continue
            written = str(value)
            if len(written) >= MIN_REPR and written in text:
                shown.append((i, name, written))
                break
    if not shown:
        return
    i, name, written = shown[0]
    kind = "mapping" if written.startswith("{") else "list"
    yield subject.at_row(
        subject.samples[i].sample,
        f"the prompt shows the field '{name}' as Python writes a {kind} ({written!r:.50}), brackets and quotes "
        f"included, in {len(shown)} of the {len(texts)} rows read: the template prints the {kind} itself where it "
        "means its items (join them: {{ " + name + " | join(', ') }}), or the field is a list in some rows",
        name,
    )


def _items(value: object) -> list[str]:
    """A mapping's values as the texts a template meant to show (a list's items, a text)."""
    out: list[str] = []
    for item in value.values() if isinstance(value, dict) else ():
        out += [str(i) for i in item] if isinstance(item, (list, tuple)) else [str(item)]
    return [t for t in out if len(t.strip()) >= 3]


def mapping_keys_in_prompt(subject: AuditSubject) -> Iterator[Hit]:
    """A mapping joined or looped over by the template (``{{ choices | join(', ') }}`` on ARC's
    ``{text: [...], label: [...]}``): it yields its keys, so every prompt reads 'text, label' and none of the
    options."""
    samples = subject.samples
    if not samples:
        return
    names = [k for k, v in samples[0].sample.fields.items() if isinstance(v, dict) and len(v) >= 2]
    if not names:
        return
    texts = subject.prompt_texts[:PROBE_ROWS]
    for name in names:
        shown = []
        for i, text in enumerate(texts):
            value = samples[i].sample.fields.get(name)
            if not isinstance(value, dict) or len(value) < 2:
                continue
            keys = [re.escape(str(k)) for k in value]
            joined = re.search(r"\W{1,3}".join(keys), text)
            if joined and not any(item in text for item in _items(value)):
                shown.append((i, joined.group()))
        if shown and len(shown) * 2 >= len(texts):
            i, written = shown[0]
            yield subject.at_row(
                samples[i].sample,
                f"the prompt shows {written!r:.40}, the keys of the mapping '{name}', and none of its items, in "
                f"{len(shown)} of the {len(texts)} rows read: the template joins or loops over the mapping itself, "
                f"which yields its keys (read its list: {{{{ {name}.{str(next(iter(samples[i].sample.fields[name])))} "
                "| join(', ') }})",
                name,
            )
            return


RULES = (
    AuditRule(
        "prompt.python-repr",
        "warning",
        "A prompt shows a row's list or mapping as Python writes it (['a', 'b']): brackets and quotes, not its items; "
        "or a mapping's keys where the template joins or loops over it ('text, label').",
        first_found(python_repr_in_prompt, mapping_keys_in_prompt),
    ),
)
