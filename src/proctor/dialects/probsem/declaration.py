"""probsem prompt files and their test suites, declared: options, and the suffixes of probsem's files.

A leaf that imports only ``core`` (and its options, ``options``): ``loader`` is imported when a folder holds
``.txt`` files or a ``.txt`` / ``.json`` file is claimed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from proctor.core.contributions import Registry
from proctor.core.dialect import Dialect
from proctor.core.references import lazy, resolve
from proctor.dialects.probsem.options import ProbsemOptions

if TYPE_CHECKING:
    from proctor.core.task import Task


class ProbsemDialect(Dialect[ProbsemOptions]):
    name = "probsem"
    order = 10
    Options = ProbsemOptions
    fixed_prompts = True
    engine_epochs = False

    def files_in_folder(self, folder: Path) -> list[Path]:
        if not any(p.is_file() for p in folder.rglob("*.txt")):
            return []  # no prompt file: nothing to import the dialect for
        find_in_folder: Callable[[Path], list[Path]] = resolve("proctor.dialects.probsem.loader:find_in_folder")
        return find_in_folder(folder)

    def claims_path(self, path: Path) -> bool:
        return path.suffix in (".txt", ".json")

    def load(
        self, path: Path, document: object, explicit: bool, options: ProbsemOptions, notes: list[str]
    ) -> list[Task]:
        load_path: Callable[[Path, bool, ProbsemOptions], list[Task]] = resolve(
            "proctor.dialects.probsem.loader:load_path"
        )
        return load_path(path, explicit, options)


def register(registry: Registry) -> None:
    registry.add_dialect(ProbsemDialect())
    registry.add_task_handler(
        "probsem.suite",
        "proctor.dialects.probsem.suite:ProbsemSuiteTask",
        "proctor.dialects.probsem.task_options:ProbsemSuiteOptions",
    )
    registry.add_task_handler(
        "probsem.cogsci2023",
        "proctor.dialects.probsem.cogsci:CogSci2023Task",
        "proctor.dialects.probsem.task_options:CogSci2023Options",
    )
    registry.add_exporter("choices_csv", lazy("proctor.dialects.probsem.exports:choices_csv"))
