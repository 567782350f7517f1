"""The path rule: a file a task reads lies in the task's folder or in a folder the user named.

Task files and data rows come from others; a path in them that climbs out (``../../etc/passwd``, an
absolute path elsewhere, a symlink pointing out) would send a private file to the model and into
samples.jsonl. So every path a task names is resolved (``..`` and symlinks followed) and must lie in
one of its roots: the task's folder, and the folders (or files) given as absolute paths on the command
line (``--data-dir``, ``--data-path``, ``--var NAME=/path``) or as proctor's data variables in the
environment (``PROCTOR_DATA``, ``DATA_PATH``). See docs/trust.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping

from proctor.core.errors import TaskDefinitionError
from proctor.data.variable_use import note_admitted

DATA_VARIABLES = ("PROCTOR_DATA", "DATA_PATH")  # proctor's own data roots, also read from the environment


def data_roots(base_dir: Path | None, variables: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The task's folder, then each absolute path the user gave as a variable."""
    given = dict(variables or {})
    for name in DATA_VARIABLES:
        if name not in given and os.environ.get(name):
            given[name] = os.environ[name]
    roots = [base_dir] if base_dir is not None else []
    roots += [
        Path(v).expanduser() for v in given.values() if isinstance(v, str) and v and Path(v).expanduser().is_absolute()
    ]
    return tuple(roots)


def is_inside(path: Path, roots: Iterable[Path]) -> bool:
    resolved = Path(path).resolve()
    return any(resolved.is_relative_to(Path(root).resolve()) for root in roots)


def check_inside(
    path: Path,
    roots: Iterable[Path],
    *,
    written: str,
    file: str | Path | None,
    field: str,
    row: int | None = None,
    line: int | None = None,
) -> Path:
    """``path`` when it lies in one of ``roots``; else an error naming ``file`` and ``field`` (and the
    path as ``written``), before anything is read."""
    roots = tuple(roots)
    try:
        inside = is_inside(path, roots)
    except RuntimeError:  # Path.resolve: symlinks that point at each other never end
        raise TaskDefinitionError(
            f"the path '{written}' is a symlink loop ({path} never resolves to a file)",
            file=file,
            line=line,
            row=row,
            field=field,
        ) from None
    if inside:
        note_admitted(Path(path).resolve(), roots)
        return path
    resolved = Path(path).resolve()
    named = Path(os.path.normpath(Path(path).absolute()))  # ".." resolved, symlinks not
    if any(named.is_relative_to(Path(r).absolute()) or named.is_relative_to(Path(r).resolve()) for r in roots):
        how = f"is a symlink to {resolved}"  # the name is inside, its target is not
    elif ".." in Path(written).parts:
        how = f"climbs out to {resolved}"
    else:
        how = f"is {resolved}"
    shown = ", ".join(dict.fromkeys(str(Path(r).resolve()) for r in roots)) or "none"
    raise TaskDefinitionError(
        f"the path '{written}' {how}, outside the task's folder and the data folders given on the command line "
        f"({shown}); a task reads files only there (give the folder with --data-dir, --data-path or "
        "--var NAME=/absolute/path, or move the file)",
        file=file,
        line=line,
        row=row,
        field=field,
    )
