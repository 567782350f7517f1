"""Errors a user can act on: each names the file, the line or row, and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any


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
        where = self.file or "<input>"
        if self.line is not None:
            where += f":{self.line}"
        if self.row is not None:
            where += f", row {self.row}"
        if self.field:
            where += f", field '{self.field}'"
        return f"{where}: {self.detail}"


class ModelLoadError(ProctorError):
    """A model could not be found or loaded."""


class MissingDependencyError(ProctorError):
    """An optional extra is needed for the requested feature."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        super().__init__(f"{purpose} needs the '{package}' package. Install it with: pip install 'proctor[{extra}]'")


def require(module: str, extra: str, purpose: str) -> Any:
    """Import an optional dependency lazily, with an install hint instead of an ImportError."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(module.split(".")[0], extra, purpose) from exc
