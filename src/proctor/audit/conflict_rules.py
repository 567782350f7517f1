"""``samples.conflict`` beyond one file's repeated rows: one input with another right answer in another file of the
task (GLM-130B's prompt folders, read as one task) or in another task of the command read from the same folder
(probsem's suites of one prompt).

A copy whose choices are listed in another order (``["yes", "no"]`` where the first file has ``["no", "yes"]``)
while its labels were copied as indices is not a repeated row (the row scan compares choices in order), yet its gold
*text* is the other answer: the two files' scores cannot both be right, and a max or mean over them hides it. The
key is the prompt and the set of choices, the answer compared is the right choices' text.

Cheap where nothing can hit: within a task only when its rows come from more than one file (the first and last
row's files differ) and some prompt is asked twice; across tasks only once a second task of the same dialect and
folder arrives (an earlier task's keys are built when a later one asks for them, once).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

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


def _message(sample: PreparedSample, other: PreparedSample, where: str) -> str:
    return (
        f"the row asks what {_place(other, sample)}{where} asks (the same prompt and choices, listed "
        f"{'in another order' if other.choices != sample.choices else 'in the same order'}) with another right answer: "
        f"{_shown(_answer(sample))} here, {_shown(_answer(other))} there: one of the two is scored wrong whatever the "
        "model says (labels copied as indices from a file whose choices are in another order?); correct one of them"
    )


def within_task(subject: AuditSubject) -> Iterator[Hit]:
    """Rows of different files of one task that ask one thing in another choice order with another answer (the
    same order is a repeated row, which the row scan's ``samples.conflict`` names)."""
    samples = subject.samples
    if len(samples) < 2 or samples[0].sample.file == samples[-1].sample.file:
        return
    texts = subject.prompt_texts
    if len(set(texts)) == len(texts):
        return  # no prompt asked twice (a glob of subjects): told in C
    first: dict[Item, PreparedSample] = {}
    for sample in samples:
        item = _item(sample)
        if item is None:
            continue
        other = first.setdefault(item, sample)
        if other is not sample and other.choices != sample.choices and _answer(other) != _answer(sample):
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
