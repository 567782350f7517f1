"""Extra files a task asks for in its run folder (``exports:`` in the spec), by registered format.

Formats come from plug-ins (``Registry.add_exporter``, e.g. probsem's ``choices_csv``) or from
``register_exporter`` in user code. An exporter is ``fn(prepared, outcome, run_dir, model_name,
**options) -> [file names written]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Protocol

from proctor.core.registry import Exporter, registry
from proctor.core.task import Task


class PreparedForExport(Protocol):
    """What the exports read of a prepared task (the engine's ``PreparedTask``, a layer above): its task, whose
    spec lists the exports; the exporter gets the whole object."""

    @property
    def task(self) -> Task: ...


def register_exporter(name: str) -> Callable[[Exporter], Exporter]:
    """Register an export format from user code (plug-ins use ``Registry.add_exporter``)."""

    def decorator(fn: Exporter) -> Exporter:
        registry().add_exporter(name, fn)
        return fn

    return decorator


def get_exporter(name: str) -> Exporter:
    exporters = registry().exporters
    if name not in exporters:
        raise KeyError(f"unknown export format '{name}'; available: {', '.join(sorted(exporters))}")
    return exporters[name]


def write_task_exports(prepared: PreparedForExport, outcome: object, run_dir: Path, model_name: str) -> list[str]:
    written: list[str] = []
    for export in prepared.task.spec.exports:
        written += get_exporter(export.format)(prepared, outcome, run_dir, model_name, **export.options)
    return written
