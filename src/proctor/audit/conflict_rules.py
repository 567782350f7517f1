"""``samples.duplicate`` and ``samples.conflict`` beyond rows repeated as they stand: one multiple-choice input
asked again with its choices in another order or in another case, in the same file, in another file of the task
(GLM-130B's prompt folders, read as one task), or in another task of the command read from the same folder
(probsem's suites of one prompt).

A copy whose choices are listed in another order (``["yes", "no"]`` where the first row has ``["no", "yes"]``)
while its labels were copied as indices is not a repeated row (the row scan's ``repeats`` compare choices in order),
yet its gold *text* is the other answer: the two rows' scores cannot both be right. One whose label was remapped is
the same item weighing twice. The key is the prompt (case and spacing aside) and the set of choices, the answer
compared is the right choices' text. Within a task the row scan finds these pairs (``reorders``, from the keys it
makes for repeated rows anyway); across files a right copy is not named (GLM-130B's prompt folders ask one input
in several forms by design).

Across tasks only once a second task of the same dialect and folder arrives (an earlier task's keys are built when
a later one asks for them, once).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

from proctor.audit.row_scan import loose_choice
from proctor.audit.run_rules import GroupMembers
from proctor.core.audit import Hit
from proctor.core.task import Task
from proctor.prompts.builder import PreparedSample

if TYPE_CHECKING:
    from proctor.audit.subject import AuditSubject

RULE = "samples.conflict"

Item = tuple[str, frozenset[str]]


def _item(sample: PreparedSample) -> Item | None:
    """What a row asks: its prompt (spacing aside) and its set of choices; None for a row without an answer."""
    if len(sample.choices) < 2 or not sample.gold:
        return None
    return " ".join(sample.prompt.plain_text.split()), frozenset(c.strip() for c in sample.choices)


def _answer(sample: PreparedSample) -> frozenset[str]:
    return frozenset(sample.choices[g].strip() for g in sample.gold if 0 <= g < len(sample.choices))


def _place(sample: PreparedSample, here: PreparedSample) -> str:
    """Where ``sample`` is, said so that it is told apart from ``here`` (GLM's prompt folders share a file name)."""
    if not sample.sample.file:
        return "another row"
    path, mine = Path(sample.sample.file), Path(here.sample.file or "")
    name = f"{path.parent.name}/{path.name}" if path.name == mine.name and path != mine else path.name
    return f"row {sample.sample.row} of {name}" if sample.sample.row is not None else name


def _shown(answer: frozenset[str]) -> str:
    return " / ".join(repr(a) for a in sorted(answer))


def _order(sample: PreparedSample, other: PreparedSample) -> str:
    if other.choices == sample.choices:
        return "in the same order"
    same = [loose_choice(c) for c in other.choices] == [loose_choice(c) for c in sample.choices]
    return "in the same order, in another case" if same else "in another order"


def _message(sample: PreparedSample, other: PreparedSample, where: str) -> str:
    order = _order(sample, other)
    moved = order == "in another order"
    why = " (labels copied as indices from a copy whose choices are in another order?)" if moved else ""
    return (
        f"the row asks what {_place(other, sample)}{where} asks (the same prompt and choices up to case and spacing, "
        f"listed {order}) with another right answer: {_shown(_answer(sample))} here, {_shown(_answer(other))} "
        f"there: one of the two is scored wrong whatever the model says{why}; correct one of them"
    )


def _gold_texts(sample: PreparedSample) -> frozenset[str]:
    return frozenset(loose_choice(sample.choices[g]) for g in sample.gold if 0 <= g < len(sample.choices))


def _reordered(subject: AuditSubject, same_answer: bool) -> Iterator[tuple[PreparedSample, PreparedSample]]:
    """(row, earlier row) of one multiple-choice item up to case and choice order, both with a right answer, whose
    right choices' texts are (``same_answer``) or are not the same."""
    for i, first in subject.scan.reorders:
        sample, other = subject.samples[i], subject.samples[first]
        if sample.gold and other.gold and (_gold_texts(sample) == _gold_texts(other)) == same_answer:
            yield sample, other


def reordered_copies(subject: AuditSubject) -> Iterator[Hit]:
    """``samples.duplicate``: a row of a file that asks what an earlier row of the same file asks, with its
    choices in another order or case and the same right answer: it weighs twice."""
    for sample, other in _reordered(subject, same_answer=True):
        if sample.sample.file != other.sample.file:
            continue  # another prompt folder's form of the input (GLM-130B), read as one task by design
        yield Hit(
            f"the row repeats sample '{other.sample.id}' (row {other.sample.row}) with its choices listed "
            f"{_order(sample, other)} (the same prompt and choices up to case and spacing, the same right answer "
            f"{_shown(_answer(sample))}): it counts twice in every mean and its standard error",
            file=sample.sample.file or subject.file,
            row=sample.sample.row,
            field="data",
            sample=sample.sample.id,
        )


def within_task(subject: AuditSubject) -> Iterator[Hit]:
    """``samples.conflict``: rows of one task that ask one thing in another choice order or case with another
    answer's text (the same order and case is a repeated row, which ``data_rules`` names)."""
    for sample, other in _reordered(subject, same_answer=False):
        yield subject.at_row(sample.sample, _message(sample, other, ""), "target")


class _Asked:
    """A task prepared earlier in the command: its rows' items, built when a later task first asks for them."""

    def __init__(self, task: Task, samples: Sequence[PreparedSample]) -> None:
        self.name = task.spec.name
        self.samples = samples

    @cached_property
    def items(self) -> dict[Item, PreparedSample]:
        out: dict[Item, PreparedSample] = {}
        for sample in self.samples:
            item = _item(sample)
            if item is not None:
                out.setdefault(item, sample)
        return out


def _kin(task: Task) -> str:
    """Tasks compared with each other: one dialect's tasks read from one folder."""
    return f"{task.dialect}\x00{Path(task.file).parent if task.file else ''}"


def across_tasks(task: Task, samples: Sequence[PreparedSample], seen: GroupMembers) -> dict[str, list[Hit]]:
    """Rows of this task that ask what a row of an earlier task of the same dialect and folder asks, with another
    answer (``seen``: the command's store of tasks prepared so far)."""
    mine = _Asked(task, samples)
    hits: list[Hit] = []
    for kin, asked in list(seen.asked.values()):
        if kin != _kin(task) or not samples:
            continue
        small, large = (mine, asked) if len(mine.samples) <= len(asked.samples) else (asked, mine)
        for item, sample in small.items.items():
            other = large.items.get(item)
            if other is None or _answer(other) == _answer(sample):
                continue
            here, there = (sample, other) if small is mine else (other, sample)
            hits.append(
                Hit(
                    _message(here, there, f" (task '{asked.name}')"),
                    file=here.sample.file or (str(task.file) if task.file else None),
                    row=here.sample.row,
                    field="target",
                    sample=here.sample.id,
                )
            )
    seen.asked[task.spec.name] = (_kin(task), mine)
    return {RULE: hits} if hits else {}
