"""Collect tasks from files and folders, asking each registered dialect whether it claims them.

Names that are not paths (``lm_eval:NAME``) go to the dialect that claims the name; files are offered
to the dialects by path first, then (YAML files) by their parsed document, each in the dialects'
``order``. No dialect is named here: they come from ``proctor.core.registry``.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from proctor.core.dialect_options import DialectOptions, from_mapping
from proctor.core.errors import ProctorError, TaskDefinitionError
from proctor.core.registry import registry
from proctor.core.special_files import refuse_special
from proctor.core.task import Task
from proctor.core.yaml_lines import load_yaml
from proctor.runs.manifest import MANIFEST, is_run_folder

if TYPE_CHECKING:
    from proctor.core.dialect import Dialect

log = logging.getLogger(__name__)

_YAML_SUFFIXES = (".yaml", ".yml")


def find_task_files(path: Path) -> list[Path]:
    """The files under a folder that may define tasks, or the file given. Run folders inside it (``-o`` pointed
    into the task folder) are passed over: their tasks/*.yaml are saved configurations, not task files; so are
    the trackers' folders (``--log-to``, docs/trackers.md): an MLflow file store (its ``.trash`` marks its root;
    its experiments' meta.yaml, its copies of tasks/*.yaml) and a W&B run (beside its ``.wandb`` file)."""
    if path.is_dir():
        every = list(path.rglob("*"))
        runs = {p.parent for p in every if p.name == MANIFEST and is_run_folder(p.parent)}
        runs |= {p.parent for p in every if (p.name == ".trash" and p.is_dir()) or p.suffix == ".wandb"}
        found = [p for p in every if p.suffix in _YAML_SUFFIXES and p.is_file()]
        for dialect in registry().ordered_dialects():
            found += dialect.files_in_folder(path)
        return sorted({p for p in found if not runs.intersection(p.parents)})
    return [path]


def _named_dialect(given: str) -> Dialect[Any] | None:
    return next((d for d in registry().ordered_dialects() if d.claims_name(given)), None)


def _options_for(options: DialectOptions, given: Path) -> DialectOptions:
    """The options files under ``given`` (a path the user named) load with; a dialect may add to its own."""
    for dialect in registry().ordered_dialects():
        options = options.replaced(dialect.name, dialect.options_for(options.of(dialect), given))
    return options


def _load_file(
    path: Path, explicit: bool, options: DialectOptions, notes: list[str], folder: Path | None = None
) -> list[Task]:
    if folder is not None and not explicit and not path.resolve().is_relative_to(folder.resolve()):
        raise TaskDefinitionError(  # a task file is read from the folder the user named (docs/trust.md)
            f"is a symlink to {path.resolve()}, outside the folder {folder}; name "
            "that file on the command line to use it",
            file=path,
        )
    refuse_special(path, "task file")  # before any dialect peeks into it
    dialects = registry().ordered_dialects()
    noted = len(notes) if notes is not None else 0
    for dialect in dialects:
        if dialect.claims_path(path):
            loaded = dialect.load(path, None, explicit, options.of(dialect), notes)
            return _loaded(dialect, path, loaded, explicit and len(notes or ()) == noted)
    document = load_yaml(path)
    for dialect in dialects:
        if dialect.claims_document(document, path):
            loaded = dialect.load(path, document, explicit, options.of(dialect), notes)
            return _loaded(dialect, path, loaded, explicit and len(notes or ()) == noted)
    if explicit:
        needs = "; ".join(d.description for d in dialects if d.description)
        raise TaskDefinitionError(f"not a task file: {needs}", file=path)
    log.warning("skipping %s: no dialect recognises it", path)
    return []


def _loaded(dialect: Any, path: Path, tasks: list[Task], unexplained: bool) -> list[Task]:
    """A file named on the command line that the dialect claimed and gave no task from, nor a reason (``notes``),
    is named with the dialect: 'no tasks' alone would not say which dialect took it."""
    if unexplained and not tasks and getattr(dialect, "name", None):
        raise TaskDefinitionError(
            f"the '{dialect.name}' dialect claims this file and gave no task from it (a plug-in dialect's claim, or "
            "a file with no task in it?)",
            file=path,
        )
    return tasks


def collect_tasks(
    paths: Iterable[str | Path],
    *,
    select: Iterable[str] | None = None,
    options: Mapping[str, Any] | None = None,
    problems: list[dict[str, str]] | None = None,
    notes: list[str] | None = None,
) -> list[Task]:
    """All tasks under ``paths`` (files and folders, folders searched recursively).

    ``select`` keeps tasks whose names match any of the given glob patterns; ``options`` go to the
    dialect adapters, each its own (a ``DialectOptions``, or the API's flat mapping: see
    ``proctor.api.load_tasks``). A file found in a folder that cannot be loaded
    does not stop the others: with ``problems`` given, ``{"file", "error"}`` is appended to it and a
    warning logged (as GLM-130B's evaluate.sh over a folder, one bad YAML must not hide the rest);
    without it the error is raised. A file named directly always raises.
    """
    import fnmatch

    tasks: list[Task] = []
    seen: dict[str, Task] = {}
    notes = [] if notes is None else notes  # why tasks were left out (a dialect's own checks)
    options = from_mapping(options, registry().ordered_dialects())
    for given in paths:
        path = Path(given)
        named = _named_dialect(str(given)) if not path.exists() else None
        batches: list[tuple[Path, Callable[[], list[Task]]]]  # each file with what loads its tasks
        if named is not None:
            batches = [(path, functools.partial(named.load_named, str(given), options.of(named)))]
        elif not path.exists():
            raise TaskDefinitionError("no such file or folder", file=path)
        else:
            file_options = _options_for(options, path)
            folder = path if path.is_dir() else None
            batches = [
                (file, functools.partial(_load_file, file, file == path, file_options, notes, folder))
                for file in find_task_files(path)
            ]
        for file, load in batches:
            try:
                loaded = load()
            except TaskDefinitionError as exc:
                if problems is None or file == path:
                    raise
                log.warning("skipping %s: %s", file, exc)
                problems.append({"file": str(file), "error": str(exc), "stage": "load"})
                continue
            for task in loaded:
                if task.name in seen:
                    other = seen[task.name]
                    if (
                        other.file is not None
                        and task.file is not None
                        and other.file.resolve() == task.file.resolve()
                        and other.spec == task.spec
                    ):
                        continue  # the same task reached twice (a folder and a file in it)
                    raise TaskDefinitionError(
                        f"task name '{task.name}' is also defined at {other.where}",
                        file=task.file,
                        line=task.line,
                        field="name",
                    )
                seen[task.name] = task
                tasks.append(task)
    named_paths = [str(p) for p in paths]
    if not tasks and problems:  # every file found failed to load: their errors, not "no task file here"
        raise TaskDefinitionError(
            "no task could be loaded:" + "".join(f"\n  {p['error']}" for p in problems), file=", ".join(named_paths)
        )
    if not tasks and notes:
        raise TaskDefinitionError("no task can run: " + "; ".join(notes))
    if not tasks:
        kinds = ", ".join(d.name for d in registry().ordered_dialects())
        runs = [p for p in named_paths if is_run_folder(Path(p))]
        hint = (
            f" ({', '.join(runs)}: a run folder, whose tasks/*.yaml are a run's saved configurations: name the task "
            "files, or read the run with `proctor report`)"
            if runs
            else ""
        )
        raise TaskDefinitionError(
            f"no tasks found: no task file of any dialect ({kinds}) here{hint}", file=", ".join(named_paths)
        )
    _check_dialect_options(tasks, options)
    if select:
        patterns = list(select)
        names = [t.name for t in tasks]
        for pattern in patterns:  # a typo in one of several globs must not quietly drop its tasks
            if not any(fnmatch.fnmatchcase(name, pattern) for name in names):
                shown = ", ".join(names[:30]) + (f", ... ({len(names)} in all)" if len(names) > 30 else "")
                raise TaskDefinitionError(
                    f"--tasks '{pattern}' matches no task; the tasks found are: {shown}", file=", ".join(named_paths)
                )
        tasks = [t for t in tasks if any(fnmatch.fnmatchcase(t.name, p) for p in patterns)]
    return tasks


def _check_dialect_options(tasks: list[Task], options: DialectOptions) -> None:
    """An option for a dialect none of the tasks belongs to would be silently ignored: refuse it."""
    dialects = {t.dialect for t in tasks}
    for dialect in registry().ordered_dialects():
        if dialect.name in dialects:
            continue
        for flag, value in dialect.unused_options(options.of(dialect)):
            raise ProctorError(
                f"{flag} ({value!r}) applies to {dialect.name} tasks only, "
                f"and none of the {len(tasks)} task(s) is one "
                f"(dialects here: {', '.join(sorted(dialects))}); it would be ignored"
            )
