"""Labels counted from another base in part of the data: the rows of one file of a glob, or the few-shot pool
read from a file of its own. The task as a whole uses label 0, so ``choice_rules.shifted_labels`` (which looks at
all rows at once) says nothing; the part counted from 1 is scored, or shown as examples, one choice off."""

from __future__ import annotations

from collections import defaultdict
from typing import Iterator

from proctor.audit.choice_rules import counted_from_one, off_by_one_chance
from proctor.audit.example_rules import pool_labels
from proctor.audit.subject import AuditSubject
from proctor.core.audit import Hit
from proctor.prompts.builder import PreparedSample


def _single_answer_rows(subject: AuditSubject) -> tuple[list[PreparedSample], int] | None:
    """The scored rows with one right answer and their one choice count, where the task uses label 0."""
    rows = [s for s in subject.scored if len(s.gold) == 1 and len(s.choices) >= 2]
    widths = {len(s.choices) for s in rows}
    if len(widths) != 1 or not any(s.gold[0] == 0 for s in rows):
        return None  # several widths, or label 0 never used (shifted_labels speaks for the whole task)
    return rows, widths.pop()


def shifted_in_one_file(subject: AuditSubject) -> Iterator[Hit]:
    """Rows read from several files (a glob), one of which counts its labels from 1."""
    if not any(ch in d.path for d in subject.spec.data if d.path for ch in "*?["):
        return  # one file (of a list of sources, the first found is read): the task's own labels are the file's
    found = _single_answer_rows(subject)
    if found is None:
        return
    rows, width = found
    by_file: dict[str, list[PreparedSample]] = defaultdict(list)
    for sample in rows:
        by_file[str(sample.sample.fields.get("_path") or sample.sample.file)].append(sample)
    if len(by_file) < 2:
        return
    chance = off_by_one_chance(subject)
    for file, part in by_file.items():
        if counted_from_one([s.gold[0] for s in part], width, chance):
            yield Hit(
                f"no row of this file has choice 0 as its answer, while every other position is, in its {len(part)} "
                f"rows; the other files' rows do use choice 0: this file's labels count from 1 where the others' "
                "count from 0? (its every answer would then be one choice off)",
                file=file,
                row=part[0].sample.row,
                field="target",
                sample=part[0].sample.id,
            )


def shifted_pool(subject: AuditSubject) -> Iterator[Hit]:
    """A few-shot pool (``fewshot.source``) whose labels count from 1 where the evaluated rows' count from 0: each
    example is shown with the choice after its answer."""
    pooled = pool_labels(subject)
    found = _single_answer_rows(subject) if pooled is not None else None
    if pooled is None or found is None:
        return
    name, values = pooled
    labels = [v for v in values if type(v) is int]
    width = found[1]
    if len(labels) != len(values):
        return  # labels that are not indices (texts): the target reads them another way
    if counted_from_one(labels, width):  # a label past the last choice is an error where the example is built
        yield subject.at_line(
            "fewshot",
            f"the few-shot pool's '{name}' counts from 1 where the evaluated rows' counts from 0 (no example has "
            f"choice 0 as its answer while every other position does, in {len(labels)} examples): each example is "
            "shown with the choice after its right one",
            "fewshot.source",
        )
