"""Which paths are SEA-HELM's: a ``seahelm_tasks`` tree (``seahelm_tasks/<competency>/<task>/config.yaml``).

A leaf that imports only the standard library: the declaration asks it on every run; the dialect's modules use it
too.
"""

from __future__ import annotations

from pathlib import Path

TASKS_FOLDER = "seahelm_tasks"


def tasks_root(path: Path) -> Path | None:
    """The ``seahelm_tasks`` folder containing ``path`` (or ``path`` itself), else None."""
    path = path.resolve()
    for folder in [path, *path.parents]:
        if folder.name == TASKS_FOLDER:
            return folder
    return None


def in_tree(given: Path) -> bool:
    """Whether ``given`` (a path the user named) is a folder in or holding a SEA-HELM task tree."""
    return not given.is_file() and (tasks_root(given) is not None or (given / TASKS_FOLDER).is_dir())
