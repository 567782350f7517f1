"""A field the prompt template reads, shown in some rows and not in others: absent there (a
``| default('')`` that hides a missing passage, a column another file names otherwise), or left out by the
template itself (an ``{% if %}`` that shows the passage only when it is short). Those rows are asked without
what the others are shown; the whole-task rule ``prompt.drops-field`` speaks only where every row lacks it."""

from __future__ import annotations

from typing import Iterator

from proctor.audit.probe_rows import PRINTED_ROWS
from proctor.audit.source_rows import printed_values
from proctor.audit.subject import READER_FIELDS, AuditSubject
from proctor.core.audit import AuditRule, Hit

SHOWN_CHARS = 40  # a value is shown when its first characters are in the prompt (spacing aside)
SHORT = 20  # shorter values (labels, names) may be rendered otherwise (upper-cased, mapped): not compared
MIN_SHOWN = 2  # rows that show the field, for the template to be one that shows it


def _shown(value: str, prompt: str) -> bool:
    value = value.strip()
    # a value shown without its last character ('{{ premise[:-1] }} because', XCOPA) is shown
    head = value[: min(SHOWN_CHARS, len(value) - 1)]
    return head in prompt or " ".join(head.split()) in " ".join(prompt.split())


def field_missing_in_some_rows(subject: AuditSubject) -> Iterator[Hit]:
    texts = subject.prompt_texts
    for name, values in printed_values(subject):
        if name in READER_FIELDS:
            continue
        shown, lacking = 0, []  # rows showing the field; rows whose field is absent or not shown
        for i, value in enumerate(values):
            if value is None:  # absent or null (datasets fills an absent key with None); an empty text is the
                # data's own: an optional hint left blank
                lacking.append(i)
                continue
            if isinstance(value, str) and len(value.strip()) >= SHORT:
                if _shown(value, texts[i]):
                    shown += 1
                else:
                    lacking.append(i)
        if lacking and shown >= MIN_SHOWN:
            first = subject.samples[lacking[0]].sample
            how = "is absent" if values[lacking[0]] is None else "is not shown by the template"
            yield subject.at_row(
                first,
                f"the prompt reads '{name}', which {how} in this row and lacking from the prompts of {len(lacking)} of "
                f"the {min(len(texts), PRINTED_ROWS)} rows read, while {shown} show it: those rows are asked without "
                "it (a '| default' hiding a missing field, a column named otherwise in some rows, or an {% if %} that "
                "leaves it out)",
                name,
            )
            return


RULES = (
    AuditRule(
        "prompt.field-missing",
        "warning",
        "A field the prompt reads is shown in some rows and absent or left out by the template in others: "
        "those rows are asked without it.",
        field_missing_in_some_rows,
    ),
)
