"""Rules over the few-shot pool: examples that are the evaluated rows themselves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator, Mapping

from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

_READER_FIELDS = ("_row", "_file", "_path", "_source")


def _content(fields: Mapping[str, Any]) -> str:
    """A row's own fields as one text (the reader's bookkeeping left out): equal for a row and its byte copy."""
    own = {k: v for k, v in fields.items() if k not in _READER_FIELDS}
    return json.dumps(own, sort_keys=True, ensure_ascii=False, default=str)


def _paths(rows: Any) -> set[str]:
    """The files rows were read from, resolved (each distinct path once: a task may have 100,000 rows)."""
    return {str(Path(p).resolve()) for p in {r.fields.get("_path") for r in rows} if p}


def pool_leak(subject: AuditSubject) -> Iterator[Hit]:
    fewshot = subject.spec.fewshot
    if fewshot is None or not fewshot.count or subject.pool_is_own or not subject.pool:
        return
    same_file = _paths(subject.pool) & _paths(s.sample for s in subject.samples)
    if same_file:
        yield Hit(
            f"fewshot.source reads {sorted(same_file)[0]}, the file the task evaluates: each row can be shown "
            "itself, answer included, as an example",
            file=subject.file,
            line=subject.line("fewshot"),
            field="fewshot.source",
        )
        return
    pool = {_content(row.fields): row for row in subject.pool}
    by_id = {row.id: key for key, row in pool.items()}
    shared = 0
    first = None
    shown_itself = 0
    for sample in subject.samples:
        key = _content(sample.sample.fields)
        if key in pool:
            shared += 1
            first = first or sample.sample
            if any(by_id.get(shot) == key for shot in sample.shots):
                shown_itself += 1
    if shared:
        assert first is not None
        yield Hit(
            f"{shared} of {len(subject.samples)} evaluated rows are also in the few-shot pool (the same fields: "
            f"a copy of the evaluated split?); {shown_itself} of them are shown themselves, answer included, as "
            "an example",
            file=first.file or subject.file,
            row=first.row,
            field="fewshot.source",
            sample=first.id,
        )


def shots_from_evaluated(subject: AuditSubject) -> Iterator[Hit]:
    fewshot = subject.spec.fewshot
    if fewshot is None or not fewshot.count or not subject.pool_is_own:
        return
    yield Hit(
        f"the {fewshot.count} few-shot example(s) per row are drawn from the rows being evaluated (never the row "
        "itself): test items serve as examples, and numbers differ from a run whose examples come from a "
        "training or dev split; give fewshot.source such a split",
        file=subject.file,
        line=subject.line("fewshot"),
        field="fewshot.source",
    )


RULES = (
    AuditRule(
        "fewshot.leak",
        "warning",
        "The few-shot pool holds evaluated rows (the same file, or rows with the same fields): answers leak.",
        pool_leak,
    ),
    AuditRule(
        "fewshot.from-evaluated",
        "warning",
        "Few-shot examples are drawn from the evaluated rows themselves, not from a separate split.",
        shots_from_evaluated,
    ),
)
