"""proctor's own YAML format: one task per file, or ``tasks:`` (with optional ``defaults:``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from proctor.core.dialect import BaseOptions
from proctor.core.errors import TaskDefinitionError
from proctor.core.task import Task
from proctor.core.task_spec import TaskSpec
from proctor.core.user_code import TRUST
from proctor.core.yaml_lines import LineDict, line_for
from proctor.dialects.native.checks import check_task

_TOP_LEVEL = {"tasks", "defaults"}


def _field_from_message(message: str) -> str | None:
    match = re.search(r"field '([\w.]+)'", message)
    return match.group(1) if match else None


def _meant(key: str, parent: tuple, errors: list) -> str:
    """' (did you mean 'kind'?)' for an unknown key that a missing field of the same mapping spells in
    another case or with other separators."""

    def squashed(name: str) -> str:
        return re.sub(r"[\s_-]", "", name).lower()

    names = [str(e["loc"][-1]) for e in errors if e["type"] == "missing" and tuple(e["loc"][:-1]) == parent]
    names += list(TaskSpec.model_fields) if not parent else []
    for name in names:
        if squashed(name) == squashed(key) and name != key:
            return f" (did you mean '{name}'? field names are lower case, with underscores)"
    return ""


def _validate(raw: dict, merged: dict, path: Path) -> TaskSpec:  # raw: a LineDict from YAML names lines
    try:
        return TaskSpec.model_validate(merged)
    except ValidationError as exc:
        errors = exc.errors()
        # an unknown key first: 'Kind' is the user's typo, the missing 'kind' only its consequence
        error = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        loc = tuple(error["loc"])
        line, dotted = line_for(raw, loc)
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = f"unknown field '{loc[-1]}'" + _meant(str(loc[-1]), loc[:-1], errors)
        elif error["type"] == "missing":
            message = f"missing required field '{dotted}'"
        elif error["type"] == "literal_error":
            message = f"invalid value {error.get('input')!r}: {message}"
        field = dotted or _field_from_message(message)
        more = f" (and {len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
        raise TaskDefinitionError(message + more, file=path, line=line, field=field) from None


def load(document: Any, path: Path, options: BaseOptions | None = None) -> list[Task]:
    """The file's tasks; a ``task_class`` it names runs only with ``--trust-task-code`` (recorded in the
    task's resources, checked when the class would be imported)."""
    trusted = {TRUST: True} if options is not None and options.trust_task_code else {}
    if "tasks" in document:
        unknown = set(document) - _TOP_LEVEL
        if unknown:
            key = sorted(unknown)[0]
            raise TaskDefinitionError(
                f"unknown top-level key '{key}' (a file with 'tasks:' may only have 'tasks' and 'defaults')",
                file=path,
                line=document.line_of(key),
                field=key,
            )
        entries = document["tasks"]
        defaults = document.get("defaults") or {}
        if not isinstance(entries, list) or not entries:
            raise TaskDefinitionError(
                "'tasks' must be a non-empty list", file=path, line=document.line_of("tasks"), field="tasks"
            )
        if not isinstance(defaults, dict):
            raise TaskDefinitionError(
                "'defaults' must be a mapping", file=path, line=document.line_of("defaults"), field="defaults"
            )
    else:
        entries, defaults = [document], {}
    tasks, names = [], set()
    for entry in entries:
        if not isinstance(entry, dict):
            raise TaskDefinitionError(
                "each task must be a mapping", file=path, line=getattr(entry, "line", None), field="tasks"
            )
        merged = {**defaults, **entry}
        spec = _validate(entry, merged, path)
        check_task(entry, merged, spec, path)
        if spec.name in names:
            line = entry.line_of("name") if isinstance(entry, LineDict) else None
            raise TaskDefinitionError(f"duplicate task name '{spec.name}'", file=path, line=line, field="name")
        names.add(spec.name)
        lines = {key: entry.line_of(key) for key in entry} if isinstance(entry, LineDict) else {}
        if isinstance(entry, LineDict) and isinstance(entry.get("fewshot"), LineDict):
            lines["fewshot.template"] = entry["fewshot"].line_of("template")
        tasks.append(
            Task(
                spec=spec,
                file=path,
                base_dir=path.parent,
                dialect="native",
                line=getattr(entry, "line", None),
                lines=lines,
                resources=trusted,
            )
        )
    return tasks
