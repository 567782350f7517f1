"""probsem prompt files and their test suites, declared: options, and the suffixes of probsem's files.

A leaf that imports only ``core`` (and its options, ``options``): ``loader`` is imported when a folder holds
``.txt`` files or a ``.txt`` / ``.json`` file is claimed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from proctor.core.contributions import Registry
from proctor.core.dialect import Dialect
from proctor.core.references import lazy, resolve
from proctor.dialects.probsem.options import ProbsemOptions


class ProbsemDialect(Dialect[ProbsemOptions]):
    name = "probsem"
    order = 10
    Options = ProbsemOptions
    fixed_prompts = True
    engine_epochs = False

    def files_in_folder(self, folder: Path) -> list[Path]:
        if not any(p.is_file() for p in folder.rglob("*.txt")):
            return []  # no prompt file: nothing to import the dialect for
        return resolve("proctor.dialects.probsem.loader:find_in_folder")(folder)

    def claims_path(self, path: Path) -> bool:
        return path.suffix in (".txt", ".json")

    def load(self, path: Path, document: Any, explicit: bool, options: ProbsemOptions, notes: list[str]) -> list:
        return resolve("proctor.dialects.probsem.loader:load_path")(path, explicit, options)


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
