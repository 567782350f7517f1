"""``--sample-id ID[,ID...]`` (Inspect's flag): each task keeps the samples with one of the ids, before the model
loads. An id is a sample's id as its task gives it (the data's ``id`` field, or the row number), matched exactly,
or a glob (``q-1*``). An id that no task holds is an error naming it and the tasks, since a run of the others would
silently report fewer samples than asked for; a task that holds none of the ids is left out of the run.
"""

from __future__ import annotations

import dataclasses
from fnmatch import fnmatchcase
from typing import Sequence

from proctor.core.errors import ProctorError
from proctor.engine.prepare import PreparedTask
from proctor.kinds.capabilities import LoadsSamples, PredictsSamples

_GLOB = frozenset("*?[")


def parse_sample_ids(values: Sequence[str]) -> tuple[str, ...]:
    """``--sample-id a,b --sample-id c`` as ``("a", "b", "c")``; an empty or repeated id is an error."""
    ids: list[str] = []
    for value in values:
        for part in str(value).split(","):
            part = part.strip()
            if not part:
                raise ProctorError(f"--sample-id {value!r}: names an empty id (ids are separated by single commas)")
            if part in ids:
                raise ProctorError(f"--sample-id: id '{part}' is given twice")
            ids.append(part)
    return tuple(ids)


def _matches(pattern: str, sample_id: str) -> bool:
    return fnmatchcase(sample_id, pattern) if _GLOB & set(pattern) else sample_id == pattern


def select_samples(prepared: Sequence[PreparedTask], ids: Sequence[str]) -> tuple[list[PreparedTask], list[str]]:
    """The tasks cut to the samples whose id ``ids`` names, and the names of the tasks that hold none (left out).
    An id no task holds, or a task whose own code reads its rows (it would run them all), raises ``ProctorError``."""
    if not ids:
        return list(prepared), []
    # a handler that only gives texts (probsem's suites) leaves the rows to the engine: they can be selected
    own_rows = [
        p.task.name for p in prepared if isinstance(p.handler, LoadsSamples) and isinstance(p.handler, PredictsSamples)
    ]
    if own_rows:
        raise ProctorError(
            f"--sample-id: task(s) {', '.join(own_rows[:5])} read their rows with their dialect's own code, which "
            "runs every row it reads; select their rows with --limit N instead, or run them without --sample-id"
        )
    found: set[str] = set()
    kept: list[PreparedTask] = []
    empty: list[str] = []
    for task in prepared:
        samples = []
        for sample in task.samples:
            hits = {pattern for pattern in ids if _matches(pattern, str(sample.sample.id))}
            if hits:
                samples.append(sample)
                found |= hits
        if samples:
            kept.append(dataclasses.replace(task, samples=tuple(samples)))
        else:
            empty.append(task.task.name)
    missing = [pattern for pattern in ids if pattern not in found]
    if missing:
        names = [p.task.name for p in prepared]
        example = next((p for p in prepared if p.samples), None)
        shown = (
            f"; task '{example.task.name}' has ids such as "
            + ", ".join(repr(str(s.sample.id)) for s in example.samples[:3])
            if example is not None
            else ""
        )
        raise ProctorError(
            f"--sample-id: no sample has the id(s) {', '.join(repr(m) for m in missing)} in task(s) "
            f"{', '.join(names[:10])}{' and more' if len(names) > 10 else ''}{shown}"
        )
    return kept, empty
