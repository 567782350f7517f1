"""Importing the user's Python files (task classes, metric plug-ins, use cases, task-folder code).

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

Names = Callable[[], ContextManager[object]]


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
        raise TaskDefinitionError(f"Python syntax error: {exc.msg}{at}", file=where, line=exc.lineno, field=field) from None
    except ProctorError:
        sys.modules.pop(name, None)
        raise  # already says what is wrong (a use case's rows, say)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise TaskDefinitionError(
            f"importing the file failed: {type(exc).__name__}: {exc}", file=path, line=line_in(exc, path), field=field
        ) from None
    finally:
        sys.path.remove(folder)
    return module


def class_in_file(path: str | Path, class_name: str, *, field: str | None = None, names: Names | None = None) -> type:
    """The attribute ``class_name`` of the imported file ``path``."""
    module = import_file(path, field=field, names=names)
    if not hasattr(module, class_name):
        raise TaskDefinitionError(f"the file defines no '{class_name}'", file=path, field=field)
    return getattr(module, class_name)


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

