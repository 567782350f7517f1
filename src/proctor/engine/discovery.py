"""Collect tasks from files and folders, asking each dialect whether it claims a file.

YAML files go to the YAML dialects (native, then GLM-130B); probsem prompt ``.txt`` files and suite
``.json`` files go to the probsem dialect.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Iterable, Mapping

from proctor.dialects import glm, lmeval, native, probsem, seahelm
from proctor.core.errors import ProctorError, TaskDefinitionError
from proctor.core.yaml_lines import load_yaml
from proctor.core.task import Task

log = logging.getLogger(__name__)

_YAML_SUFFIXES = (".yaml", ".yml")


def find_task_files(path: Path) -> list[Path]:
    if path.is_dir():
        yaml_files = [p for p in path.rglob("*") if p.suffix in _YAML_SUFFIXES and p.is_file()]
        return sorted(yaml_files + probsem.find_in_folder(path))
    return [path]


def _load_file(path: Path, explicit: bool, options: Mapping[str, Any] | None) -> list[Task]:
    if lmeval.claims_name(str(path)):  # lm_eval:NAME, a task or group of the installed catalogue
        return lmeval.load_named(str(path), options)
    if path.suffix in (".txt", ".json"):
        return probsem.load_path(path, explicit, options)
    if seahelm.claims_path(path):
        return seahelm.load(path, explicit, options)
    if lmeval.claims_path(path):
        return lmeval.load(path, explicit, options)
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
    paths: Iterable[str | Path],
    *,
    select: Iterable[str] | None = None,
    options: Mapping[str, Any] | None = None,
    problems: list[dict] | None = None,
) -> list[Task]:
    """All tasks under ``paths`` (files and folders, folders searched recursively).

    ``select`` keeps tasks whose names match any of the given glob patterns; ``options`` go to the
    dialect adapters (see ``proctor.api.load_tasks``). A file found in a folder that cannot be loaded
    does not stop the others: with ``problems`` given, ``{"file", "error"}`` is appended to it and a
    warning logged (as GLM-130B's evaluate.sh over a folder, one bad YAML must not hide the rest);
    without it the error is raised. A file named directly always raises.
    """
    import fnmatch

    tasks: list[Task] = []
    seen: dict[str, Task] = {}
    seahelm.SKIPPED.clear()
    for given in paths:
        path = Path(given)
        if not path.exists() and not lmeval.claims_name(str(given)):
            raise TaskDefinitionError("no such file or folder", file=path)
        for file in find_task_files(path):
            try:
                loaded = _load_file(file, explicit=file == path, options=seahelm.with_given_path(options, path))
            except TaskDefinitionError as exc:
                if problems is None or file == path:
                    raise
                log.warning("skipping %s: %s", file, exc)
                problems.append({"file": str(file), "error": str(exc)})
                continue
            for task in loaded:
                if task.name in seen:
                    other = seen[task.name]
                    if other.file is not None and task.file is not None and other.file.resolve() == task.file.resolve() and other.spec == task.spec:
                        continue  # the same task reached twice (a folder and a file in it)
                    raise TaskDefinitionError(
                        f"task name '{task.name}' is also defined at {other.where}", file=task.file, line=task.line, field="name"
                    )
                seen[task.name] = task
                tasks.append(task)
    given = [str(p) for p in paths]
    if not tasks and seahelm.SKIPPED:
        raise TaskDefinitionError("no SEA-HELM task can run: " + "; ".join(seahelm.SKIPPED))
    if not tasks:
        raise TaskDefinitionError(
            "no tasks found: no native or GLM-130B task YAML, probsem prompt with suites, or SEA-HELM config here",
            file=", ".join(given),
        )
    _check_dialect_options(tasks, options or {})
    if select:
        patterns = list(select)
        names = [t.name for t in tasks]
        for pattern in patterns:  # a typo in one of several globs must not quietly drop its tasks
            if not any(fnmatch.fnmatchcase(name, pattern) for name in names):
                shown = ", ".join(names[:30]) + (f", ... ({len(names)} in all)" if len(names) > 30 else "")
                raise TaskDefinitionError(f"--tasks '{pattern}' matches no task; the tasks found are: {shown}", file=", ".join(given))
        tasks = [t for t in tasks if any(fnmatch.fnmatchcase(t.name, p) for p in patterns)]
    return tasks


# Dialect options that change numbers, with the command-line option that sets them and its default.
_DIALECT_OPTIONS = {
    "probsem": [("probsem_temp", "--temp", 1.0), ("probsem_norm", "--norm", False)],
    "seahelm": [
        ("seahelm_data", "--seahelm-data", None), ("seahelm_judge", "--seahelm-judge", None),
        ("seahelm_runs", "--seahelm-runs", 1), ("is_base_model", "--base-model/--instruct-model", None),
        ("reasoning", "--reasoning-model", False), ("seahelm_max_tokens", "--seahelm-max-tokens", None),
        ("seahelm_judge_generation", "--seahelm-judge-max-tokens", None),
    ],
}


def _check_dialect_options(tasks: list[Task], options: Mapping[str, Any]) -> None:
    """An option for a dialect none of the tasks belongs to would be silently ignored: refuse it."""
    dialects = {t.dialect for t in tasks}
    for dialect, known in _DIALECT_OPTIONS.items():
        if dialect in dialects:
            continue
        for key, flag, default in known:
            value = options.get(key, default)
            if value != default and value not in (None, {}, ()):
                raise ProctorError(
                    f"{flag} ({value!r}) applies to {dialect} tasks only, and none of the {len(tasks)} task(s) is one "
                    f"(dialects here: {', '.join(sorted(dialects))}); it would be ignored"
                )
