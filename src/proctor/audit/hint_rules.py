"""``prompt.contains-gold`` in a minority of rows: one field the prompt prints (a hint, a note, an explanation
shown under an ``{% if %}``) holds the right answer in some rows. ``target_rules.gold_in_prompt`` speaks of most
rows, where a coincidence cannot explain it; here one field names the answer in a tenth of the rows or more, and
those rows' scores are copied, so the number is inflated by up to their share."""

from __future__ import annotations

from collections import defaultdict
from typing import Iterator

from proctor.audit.setting_rules import CONTEXT_FIELDS
from proctor.audit.source_rows import target_reads, templates
from proctor.audit.subject import READER_FIELDS, AuditSubject
from proctor.audit.target_rules import GOLD_MIN_CHARS, gold_text, in_passage, shows_gold, template_fields
from proctor.core.audit import Hit
from proctor.prompts.builder import PreparedSample

# twice probe_rows.PROBE_ROWS, on purpose: the rule looks for a minority of the rows (HINT_SHARE), of which a
# shorter probe may hold too few
PROBE_ROWS = 400
HINT_SHARE = 0.1  # of the rows read: one row in ten told its answer moves the score by up to a tenth
HINT_MIN_ROWS = 2


def _answer(sample: PreparedSample) -> str:
    """The right choice of a multiple-choice row, else a generated row's first reference."""
    if sample.choices:
        return gold_text(sample)
    return sample.references[0].strip() if sample.references else ""


def gold_in_a_field(subject: AuditSubject) -> Iterator[Hit]:
    samples, texts = subject.samples, subject.prompt_texts
    probe = min(len(samples), PROBE_ROWS)
    prompt = templates(subject)[0]
    if probe < 3 or prompt is None:
        return
    # the fields the prompt's template prints, less the target's own (prompt.shows-target speaks of those)
    printed = template_fields(prompt) - target_reads(subject) - READER_FIELDS
    if not printed:
        return
    by_field: dict[str, list[int]] = defaultdict(list)
    for i in range(probe):
        sample, text = samples[i], texts[i]
        answer = _answer(sample)
        if len(answer) < GOLD_MIN_CHARS or answer not in text:
            continue
        if sample.choices and (
            not shows_gold(text, sample.choices, sample.gold, sample.references) or in_passage(sample, text)
        ):
            continue  # the prompt lists the other choices too, or the answer is in the passage by design
        for key in printed:
            value = sample.sample.fields.get(key)
            if (
                isinstance(value, str)
                and answer in value
                and value.strip() != text.strip()  # the field is the whole prompt: the question itself
                and value in text
                and not CONTEXT_FIELDS.match(key)
            ):
                by_field[key].append(i)
    if not by_field:
        return
    field, rows = max(by_field.items(), key=lambda item: len(item[1]))
    if len(rows) < max(HINT_MIN_ROWS, HINT_SHARE * probe):
        return
    first = samples[rows[0]]
    answer = _answer(first)
    yield subject.at_row(
        first.sample,
        f"the field '{field}', printed in the prompt, holds the right answer ({answer!r:.40}) in {len(rows)} of the "
        f"{probe} rows read: those rows can copy it, and the score is inflated by up to their share",
        field,
    )
