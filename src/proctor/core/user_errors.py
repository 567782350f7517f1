"""Exceptions raised by the user's code (use cases, hooks, metrics, task classes), reported at their source.

A use case's ``generate``, an lm-eval ``!function`` hook or a metric plug-in that raises is the user's
problem, not proctor's: the error names the file, the line and the function where it was raised (the
innermost frame of the traceback that is not proctor's, Python's or an installed package's), so the
user sees where to look instead of "internal error".
"""

from __future__ import annotations

import functools
import sysconfig
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

from proctor.core.errors import ProctorError, TaskDefinitionError

T = TypeVar("T")  # what the user's function returns, handed back as it is
_LONGEST = 500  # characters of an exception's message quoted in an error


@dataclass(frozen=True)
class Origin:
    """Where user code raised: file, line and the function's qualified name."""

    file: str
    line: int
    function: str


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    """Folders whose files are never the user's: proctor's package, the standard library, installed packages."""
    paths = sysconfig.get_paths()
    folders = {str(Path(__file__).resolve().parents[1])}  # the proctor package
    folders.update(
        str(Path(paths[key]).resolve()) for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths
    )
    return tuple(sorted(folders))


def _is_user_file(filename: str, roots: tuple[str, ...]) -> bool:
    if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return False
    path = str(Path(filename).resolve())
    if any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots):
        return True  # a task folder inside an installed package (lm-eval's catalogue hooks)
    return not any(path.startswith(folder.rstrip("/") + "/") for folder in _library_dirs())


def user_origin(exc: BaseException, roots: Iterable[str | Path] = ()) -> Origin | None:
    """The innermost frame of ``exc``'s traceback in the user's code, or None when there is none.

    ``roots``: folders whose files count as the user's even inside an installed package."""
    kept = tuple(str(Path(r).resolve()) for r in roots)
    found = None
    for frame, line in traceback.walk_tb(exc.__traceback__):
        code = frame.f_code
        if _is_user_file(code.co_filename, kept):
            found = Origin(code.co_filename, line, getattr(code, "co_qualname", code.co_name))
    return found


_MODEL_CALLS = (
    "runs/executor.py",
    "models/",
)  # below these, an exception is the model's (a backend, a server), not the task's


def through_model(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside a model call that user code made (a failing backend or server)."""
    package = str(Path(__file__).resolve().parents[1]) + "/"
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        name = str(Path(frame.f_code.co_filename).resolve())
        if name.startswith(package) and name[len(package) :].startswith(_MODEL_CALLS):
            return True
    return False


def describe(exc: BaseException) -> str:
    text = str(exc)
    if len(text) > _LONGEST:
        text = text[:_LONGEST] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def user_code_error(
    exc: BaseException,
    what: str,
    *,
    field: str | None = None,
    file: str | Path | None = None,
    roots: Iterable[str | Path] = (),
) -> TaskDefinitionError:
    """A ``TaskDefinitionError`` for ``exc``, raised while proctor called ``what`` (e.g. ``Echo.generate``):
    at the user frame that raised it (file, line, function), else at ``file``."""
    origin = user_origin(exc, roots)
    if origin is None:
        return TaskDefinitionError(f"{what} failed: {describe(exc)}", file=file, field=field)
    called = "" if origin.function == what else f", called as {what}"
    return TaskDefinitionError(
        f"{describe(exc)} (raised in {origin.function}{called})", file=origin.file, line=origin.line, field=field
    )


def call_user(
    fn: Callable[..., T],
    what: str,
    *args: Any,
    field: str | None = None,
    file: str | Path | None = None,
    roots: Iterable[str | Path] = (),
    **kwargs: Any,
) -> T:
    """``fn(*args, **kwargs)``; an exception from user code becomes :func:`user_code_error`. Re-raised as they are:
    proctor's own errors, an exception from a model the code called, and one with no user frame (proctor's bug)."""
    try:
        return fn(*args, **kwargs)
    except ProctorError:
        raise
    except Exception as exc:
        if through_model(exc) or (user_origin(exc, roots) is None and file is None):
            raise
        raise user_code_error(exc, what, field=field, file=file, roots=roots) from None


def definition_site(fn: Callable[..., object]) -> tuple[str | None, int | None]:
    """(file, first line) of a function or method, for "returned None" errors that point at it."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code is not None else (None, None)
