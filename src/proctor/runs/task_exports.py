"""Extra files a task asks for in its run folder (``exports:`` in the spec), by registered format.

Formats come from plug-ins (``Registry.add_exporter``, e.g. probsem's ``choices_csv``) or from
``register_exporter`` in user code. An exporter is ``fn(prepared, outcome, run_dir, model_name,
**options) -> [file names written]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Protocol

from proctor.core.errors import ProctorError
from proctor.core.registrations import defined_in
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
        exporter = get_exporter(export.format)
        written += _claimed(
            export.format, exporter, exporter(prepared, outcome, run_dir, model_name, **export.options), run_dir
        )
    return written


def _claimed(name: str, exporter: Exporter, files: object, run_dir: Path) -> list[str]:
    """An exporter's list of the files it wrote, checked: each is a file in the run folder (results.json lists
    them as written, so a name claimed and never written would send the reader to nothing)."""
    origin = registry().origins.get("export format", {}).get(name)
    who = f"export format '{name}' ({origin.shown if origin else defined_in(exporter) or 'a plug-in'})"
    if isinstance(files, (str, Path)) or not isinstance(files, (list, tuple)):
        raise ProctorError(f"{who} returned {files!r}, not a list of the file names it wrote into the run folder")
    out = []
    for file in files:
        if not isinstance(file, (str, Path)):
            raise ProctorError(f"{who} returned {file!r} among the files it wrote: not a file name")
        path = Path(run_dir) / file
        if not path.is_file():
            raise ProctorError(f"{who} says it wrote '{file}', but the run folder {run_dir} holds no such file")
        out.append(str(file))
    return out
