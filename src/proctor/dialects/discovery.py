"""Collect tasks from files and folders, asking each dialect whether it claims a file."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterable

from proctor.dialects import native
from proctor.errors import TaskDefinitionError
from proctor.spec.yaml_lines import load_yaml
from proctor.tasks.base import Task

log = logging.getLogger(__name__)

_YAML_SUFFIXES = (".yaml", ".yml")


def find_task_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in _YAML_SUFFIXES and p.is_file())
    return [path]


def _load_file(path: Path, explicit: bool) -> list[Task]:
    document = load_yaml(path)
    if native.claims(document):
        return native.load(document, path)
    if explicit:
        raise TaskDefinitionError(
            "not a task file: a native task needs 'name' and 'kind', or a 'tasks:' list", file=path
        )
    log.warning("skipping %s: no dialect recognises it", path)
    return []


def collect_tasks(paths: Iterable[str | Path], *, select: Iterable[str] | None = None) -> list[Task]:
    """All tasks under ``paths`` (files and folders, folders searched recursively).

    ``select`` keeps tasks whose names match any of the given glob patterns.
    """
    import fnmatch

    tasks: list[Task] = []
    seen: dict[str, Task] = {}
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise TaskDefinitionError("no such file or folder", file=path)
        for file in find_task_files(path):
            for task in _load_file(file, explicit=file == path):
                if task.name in seen:
                    other = seen[task.name]
                    raise TaskDefinitionError(
                        f"task name '{task.name}' is also defined at {other.where}", file=task.file, line=task.line, field="name"
                    )
                seen[task.name] = task
                tasks.append(task)
    if select:
        patterns = list(select)
        tasks = [t for t in tasks if any(fnmatch.fnmatchcase(t.name, p) for p in patterns)]
    return tasks
