"""Importing the user's Python files (task classes, metric plug-ins, use cases, task-folder code), and
the consent rule for them (docs/trust.md).

Every such file is imported here, under a module name derived from the SHA-256 of its resolved path:
the same name in every process (``hash()`` is salted per process), so classes defined in it pickle by
reference into Ray workers and fingerprints that name a class's module are reproducible. A file that
does not import is a ``TaskDefinitionError`` naming the file and, where known, its line.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import sys
import traceback
import types
from pathlib import Path
from typing import Callable, ContextManager, Iterator, Mapping

from proctor.core.errors import ProctorError, TaskDefinitionError
from proctor.core.special_files import refuse_special

Names = Callable[[], ContextManager[object]]

TRUST = "trust_task_code"  # the options key of --trust-task-code; dialects copy it into Task.resources
CODE_KEY = "code_key"  # Task.resources: the task file's own name for the key naming its class (GLM: module)
TRUST_HINT = "pass --trust-task-code to run it (API: dialect_options={'trust_task_code': True})"


def refusal(what: str, *, file: str | Path | None, field: str, line: int | None = None) -> TaskDefinitionError:
    """The error for Python code a task file names, without ``--trust-task-code``."""
    return TaskDefinitionError(
        f"{what} is Python code named by a task file; {TRUST_HINT}", file=file, line=line, field=field
    )


def inside(path: str | Path, folder: str | Path) -> bool:
    """Whether ``path`` (symlinks followed, ``..`` resolved) lies in ``folder``."""
    return Path(path).resolve().is_relative_to(Path(folder).resolve())


def _installed(origin: Path) -> bool:
    """A module file of the Python installation (the standard library, site-packages)."""
    import site
    import sysconfig

    places = {sys.prefix, sys.base_prefix, *site.getsitepackages(), *sysconfig.get_paths().values()}
    return any(origin.is_relative_to(Path(p).resolve()) for p in places if p)


def dotted_module_file(module_path: str, folder: Path, *, field: str) -> tuple[Path, Path] | None:
    """``(root, file)`` for a dotted module name that is a file below ``folder`` or a parent of it (GLM
    writes module paths from its repository root): ``root`` goes on ``sys.path`` to import it. The file,
    and every package ``__init__.py`` the import runs, must lie in ``folder`` (symlinks followed): task
    code never reaches a parent folder. None when no such file exists (an installed module, then)."""
    parts = module_path.split(".")
    relative = Path(*parts).with_suffix(".py")
    folder = folder.resolve()
    for root in (folder, *folder.parents):
        if not (root / relative).is_file():
            continue
        runs = [root / relative] + [root.joinpath(*parts[:k], "__init__.py") for k in range(1, len(parts))]
        for file in runs:
            if file.is_file() and not inside(file, folder):
                raise TaskDefinitionError(
                    f"'{module_path}' would run {file.resolve()}, outside the task's folder {folder}; task code is "
                    "read from the task's folder only",
                    field=field,
                )
        return root, root / relative
    return None


def check_installed_module(module_path: str, folder: Path, *, field: str) -> None:
    """A dotted name that is no file in the task's folder is imported as an installed module; one that
    would come from a parent of the task's folder (the working directory on ``sys.path``) is refused."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module_path.split(".")[0])
    except (ImportError, ValueError):
        return  # importing it fails with its own message
    origin = Path(spec.origin).resolve() if spec is not None and spec.origin and spec.origin != "built-in" else None
    if origin is None and spec is not None and spec.submodule_search_locations:
        origin = Path(list(spec.submodule_search_locations)[0]).resolve()
    if origin is None or _installed(origin) or inside(origin, folder):
        return
    if any(origin.is_relative_to(parent) for parent in folder.resolve().parents):
        raise TaskDefinitionError(
            f"'{module_path}' would be imported from {origin}, outside the task's folder {folder.resolve()}; "
            "task code is read from the task's folder (or an installed package) only",
            field=field,
        )


def module_name(path: str | Path, prefix: str = "proctor_user") -> str:
    """``{prefix}_{first 16 hex digits of sha256(resolved path)}``."""
    digest = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:16]
    return f"{prefix}_{digest}"


def line_in(exc: BaseException, path: str | Path) -> int | None:
    """The last line of ``path`` in the exception's traceback (where the user's code failed)."""
    target = str(Path(path).resolve())
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == target]
    return lines[-1] if lines else None


def located(exc: TaskDefinitionError) -> str:
    """The error's detail prefixed by its file and line, for re-raising it at the place that named the
    file (a task file's ``task_class``, a config's ``metric_file``)."""
    if exc.file is None:
        return exc.detail
    return f"{exc.file}{f':{exc.line}' if exc.line is not None else ''}: {exc.detail}"


def import_file(
    path: str | Path,
    *,
    prefix: str = "proctor_user",
    field: str | None = None,
    names: Names | None = None,
    fresh: bool = False,
) -> types.ModuleType:
    """Import ``path`` as the module ``module_name(path, prefix)``, with its folder on ``sys.path``
    while it runs (so it can import files beside it) and inside ``names()`` when given (module
    names a dialect points at proctor's objects only while user code is imported). An already
    imported file is reused unless ``fresh``. Errors name the file, the line and ``field``."""
    path = Path(path).expanduser()
    refuse_special(path, "Python file", field=field)
    if not path.is_file():
        raise TaskDefinitionError("no such Python file", file=path, field=field)
    name = module_name(path, prefix)
    if not fresh and name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TaskDefinitionError("cannot import this file (not a Python source file?)", file=path, field=field)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = str(path.parent.resolve())
    sys.path.insert(0, folder)
    try:
        with (names or contextlib.nullcontext)():
            spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        where = Path(exc.filename) if exc.filename and Path(exc.filename).is_file() else path  # or a file it imports
        text = f": {exc.text.strip()!r}" if exc.text and exc.text.strip() else ""
        at = f" (line {exc.lineno}{text})" if exc.lineno is not None else ""
        raise TaskDefinitionError(
            f"Python syntax error: {exc.msg}{at}", file=where, line=exc.lineno, field=field
        ) from None
    except ProctorError:
        sys.modules.pop(name, None)
        raise  # already says what is wrong (a use case's rows, say)
    except (Exception, SystemExit) as exc:  # SystemExit: a script's sys.exit() or exit() would end proctor unexplained
        sys.modules.pop(name, None)
        what = (
            f"called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else f"failed: {type(exc).__name__}: {exc}"
        )
        raise TaskDefinitionError(
            f"importing the file {what}", file=path, line=line_in(exc, path), field=field
        ) from None
    finally:
        sys.path.remove(folder)
    return module


def class_in_file(path: str | Path, class_name: str, *, field: str | None = None, names: Names | None = None) -> type:
    """The attribute ``class_name`` of the imported file ``path``."""
    module = import_file(path, field=field, names=names)
    if not hasattr(module, class_name):
        raise TaskDefinitionError(f"the file defines no '{class_name}'", file=path, field=field)
    found: type = getattr(module, class_name)
    return found


def stand_in_packages(description: str) -> tuple[dict[str, types.ModuleType], Callable[[str], types.ModuleType]]:
    """Empty stand-in packages made on demand: ``(modules, package)``, where ``package("a.b.c")`` returns
    the module of that name (made with its parents, each set as its parent's attribute) and ``modules``
    holds every one made, for ``modules_in_force``."""
    modules: dict[str, types.ModuleType] = {}

    def package(name: str) -> types.ModuleType:
        if name not in modules:
            module = types.ModuleType(name, f"proctor's stand-in for {description} {name}")
            module.__path__ = []  # a package: its submodules are looked up in sys.modules
            modules[name] = module
            parent, _, child = name.rpartition(".")
            if parent:
                setattr(package(parent), child, module)
        return modules[name]

    return modules, package


@contextlib.contextmanager
def modules_in_force(modules: Mapping[str, types.ModuleType]) -> Iterator[None]:
    """``modules`` in ``sys.modules`` inside the block; afterwards ``sys.modules`` holds what it held before."""
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name, previous in saved.items():
            if previous is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous
