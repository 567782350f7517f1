"""``group.look-alike``: two groups of one command whose names differ only in case, spacing or punctuation
('science' and 'Science', 'nlu_core' and 'nlu-core'). Each is its own group with its own mean: the members under
the odd spelling are left out of the other's, with no word. The names are known before any task is prepared
(``GroupMembers.of``); each task under the spelling fewer tasks use (the later one where as many do) is named."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Sequence

from proctor.core.audit import Hit
from proctor.core.task import Task

RULE = "group.look-alike"
_SPACING = re.compile(r"[\s_\-.]+")


def _key(name: str) -> str:
    return _SPACING.sub("", name.casefold())


def odd_spellings(tasks: Sequence[Task]) -> dict[str, tuple[str, list[str]]]:
    """An odd group name -> (the spelling most tasks use, those tasks' names)."""
    members: dict[str, list[str]] = defaultdict(list)
    order: list[str] = []
    for task in tasks:
        for group in task.spec.group:
            if group not in members:
                order.append(group)
            members[group].append(task.spec.name)
    by_key: dict[str, list[str]] = defaultdict(list)
    for group in order:
        by_key[_key(group)].append(group)
    odd: dict[str, tuple[str, list[str]]] = {}
    for spellings in by_key.values():
        if len(spellings) < 2:
            continue
        counts = Counter({g: len(members[g]) for g in spellings})
        main = max(spellings, key=lambda g: (counts[g], -spellings.index(g)))  # the most used, else the first
        for group in spellings:
            if group != main:
                odd[group] = (main, members[main])
    return odd


def look_alike_notes(task: Task, odd: dict[str, tuple[str, list[str]]]) -> dict[str, list[Hit]]:
    hits = []
    for group in task.spec.group:
        if group not in odd:
            continue
        main, names = odd[group]
        shown = ", ".join(f"'{n}'" for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        hits.append(
            Hit(
                f"the task's group '{group}' differs from group '{main}' (tasks {shown}) only in case, spacing or "
                f"punctuation: they are two groups, each with its own mean, so the mean of '{main}' leaves this task "
                "out; spell the group as the others do",
                file=str(task.file) if task.file else None,
                line=task.lines.get("group", task.line),
                field="group",
            )
        )
    return {RULE: hits} if hits else {}
