"""Errors a user can act on: each names the file, the line or row, and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def place(file: str | None, line: int | None = None, row: int | None = None, field: str | None = None) -> str:
    """Where a problem is, as every message writes it: ``file:line, row N, field 'name'`` (the parts known)."""
    where = file or ""
    if line is not None:
        where += f":{line}"
    if row is not None:
        where += f", row {row}"
    if field:
        where += f", field '{field}'"
    return where


class ProctorError(Exception):
    """Base class for errors proctor reports to users without a traceback."""


class TaskDefinitionError(ProctorError):
    """A task file, data file or template is wrong in a way the user must fix.

    The message always starts with ``file[:line]`` (or ``file, row N``) and names the field.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        row: int | None = None,
        field: str | None = None,
    ) -> None:
        self.file = str(file) if file is not None else None
        self.line = line
        self.row = row
        self.field = field
        self.detail = message
        super().__init__(self._format())

    def _format(self) -> str:
        return f"{place(self.file or '<input>', self.line, self.row, self.field)}: {self.detail}"


class RunInterrupted(BaseException):
    """Ctrl-C (SIGINT) or SIGTERM reached a command (the CLI's handlers raise it: ``cli/interrupts.py``).

    A ``BaseException``, as ``KeyboardInterrupt`` is, so that no ``except Exception`` swallows it; not a
    ``KeyboardInterrupt``, which typer turns into a bare exit 130 before proctor could say what was kept.
    A run it stops fills in ``run_dir`` and ``saved`` (answers in the run store) on its way out.
    """

    def __init__(self, signum: int, name: str) -> None:
        super().__init__(name)
        self.signum = signum
        self.name = name
        self.run_dir: Path | None = None
        self.saved: int | None = None

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports a process the signal ended (130, 143)."""
        return 128 + self.signum


class ModelLoadError(ProctorError):
    """A model could not be found or loaded."""


class MissingDependencyError(ProctorError):
    """An optional extra is needed for the requested feature."""

    def __init__(self, package: str, extra: str, purpose: str, requirement: str | None = None) -> None:
        here = ""
        if requirement is not None:  # the pip of the Python running proctor: a bare `pip` may be another one's
            import shlex
            import sys

            here = f" (into this Python: {shlex.quote(sys.executable)} -m pip install {requirement})"
        super().__init__(
            f"{purpose} needs the '{package}' package. Install it with: pip install 'proctor[{extra}]'{here}"
        )


def require(module: str, extra: str, purpose: str, requirement: str | None = None) -> Any:
    """Import an optional dependency lazily, with an install hint instead of an ImportError (``requirement``: what
    this Python's pip installs, named in the hint too)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(module.split(".")[0], extra, purpose, requirement) from exc
