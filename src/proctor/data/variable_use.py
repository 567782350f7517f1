"""Which of the user's ``--var``/``--data-dir``/``--data-path`` values a run's tasks used.

A value given on the command line and read by no task changes nothing, and the user who typed it believes it
did (``-T SPLIT=test`` for a task that never names ``${SPLIT}``, ``--data-dir`` for tasks that read the hub). A
value is used when a task file's ``${NAME}`` is filled with it (``data/sources.expand_variables``) or, for a folder,
when a file a task reads is admitted because it lies in that folder (``data/paths.check_inside``). Both note it
here while ``recording`` is active; the run turns what stayed unused into a warning.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping

# the flag each of proctor's own variables comes from (others come from --var / -T)
FLAGS = {"PROCTOR_DATA": "--data-dir", "DATA_PATH": "--data-path"}


@dataclass
class VariableUse:
    filled: set[str] = field(default_factory=set)  # names whose ${NAME} a task file had filled
    admitting: set[Path] = field(default_factory=set)  # resolved roots that admitted a file a task reads


_ACTIVE: ContextVar[VariableUse | None] = ContextVar("proctor_variable_use", default=None)


@contextlib.contextmanager
def recording() -> Iterator[VariableUse]:
    use = VariableUse()
    token = _ACTIVE.set(use)
    try:
        yield use
    finally:
        _ACTIVE.reset(token)


def note_filled(name: str) -> None:
    use = _ACTIVE.get()
    if use is not None:
        use.filled.add(name)


def note_admitted(path: Path, roots: Iterable[Path]) -> None:
    """``path`` (resolved) was let through by ``roots``: the innermost root that holds it is the one that let it
    in (a task's own folder inside ``--data-dir /tmp`` needs no ``--data-dir``)."""
    use = _ACTIVE.get()
    if use is None:
        return
    holding = [r for r in (Path(root).resolve() for root in roots) if path.is_relative_to(r)]
    if holding:
        use.admitting.add(max(holding, key=lambda r: len(r.parts)))


def unused_warnings(variables: Mapping[str, str] | None, use: VariableUse) -> list[str]:
    """One warning per value the user gave that no task used."""
    out = []
    for name, value in (variables or {}).items():
        if name in use.filled:
            continue
        folder = Path(value).expanduser()
        if folder.is_absolute() and folder.resolve() in use.admitting:
            continue
        flag = FLAGS.get(name)
        given = f"{flag} {value}" if flag else f"--var {name}={value}"
        read = f" and no file a task read lies in {value}" if folder.is_absolute() else ""
        out.append(f"{given} had no effect: no task file of this run reads ${{{name}}}{read}")
    return out
