"""Collect tasks from files and folders, asking each dialect whether it claims a file.

YAML files go to the YAML dialects (native, then GLM-130B); probsem prompt ``.txt`` files and suite
``.json`` files go to the probsem dialect.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Iterable, Mapping

from proctor.dialects import glm, native, probsem, seahelm
from proctor.errors import TaskDefinitionError
from proctor.spec.yaml_lines import load_yaml
from proctor.tasks.base import Task

log = logging.getLogger(__name__)

_YAML_SUFFIXES = (".yaml", ".yml")


def find_task_files(path: Path) -> list[Path]:
    if path.is_dir():
        yaml_files = [p for p in path.rglob("*") if p.suffix in _YAML_SUFFIXES and p.is_file()]
        return sorted(yaml_files + probsem.find_in_folder(path))
    return [path]


def _load_file(path: Path, explicit: bool, options: Mapping[str, Any] | None) -> list[Task]:
    if path.suffix in (".txt", ".json"):
        return probsem.load_path(path, explicit, options)
    if seahelm.claims_path(path):
        return seahelm.load(path, explicit, options)
    document = load_yaml(path)
    if native.claims(document):
        return native.load(document, path)
    if glm.claims(document):
        return glm.load(document, path, options)
    if explicit:
        raise TaskDefinitionError(
            "not a task file: a native task needs 'name' and 'kind' (or a 'tasks:' list); "
            "a GLM-130B task needs 'name', 'type' and 'path'",
            file=path,
        )
    log.warning("skipping %s: no dialect recognises it", path)
    return []


def collect_tasks(
    paths: Iterable[str | Path], *, select: Iterable[str] | None = None, options: Mapping[str, Any] | None = None
) -> list[Task]:
    """All tasks under ``paths`` (files and folders, folders searched recursively).

    ``select`` keeps tasks whose names match any of the given glob patterns; ``options`` go to the
    dialect adapters (see ``proctor.api.load_tasks``).
    """
    import fnmatch

    tasks: list[Task] = []
    seen: dict[str, Task] = {}
    seahelm.SKIPPED.clear()
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise TaskDefinitionError("no such file or folder", file=path)
        for file in find_task_files(path):
            for task in _load_file(file, explicit=file == path, options=seahelm.with_given_path(options, path)):
                if task.name in seen:
                    other = seen[task.name]
                    if other.file is not None and task.file is not None and other.file.resolve() == task.file.resolve() and other.spec == task.spec:
                        continue  # the same task reached twice (a folder and a file in it)
                    raise TaskDefinitionError(
                        f"task name '{task.name}' is also defined at {other.where}", file=task.file, line=task.line, field="name"
                    )
                seen[task.name] = task
                tasks.append(task)
    if not tasks and seahelm.SKIPPED:
        raise TaskDefinitionError("no SEA-HELM task can run: " + "; ".join(seahelm.SKIPPED))
    if select:
        patterns = list(select)
        tasks = [t for t in tasks if any(fnmatch.fnmatchcase(t.name, p) for p in patterns)]
    return tasks
