"""probsem prompt files and their test suites as a dialect plug-in.

The declaration: options, and the suffixes of probsem's files; ``proctor.dialects.probsem`` is imported
when a folder holds ``.txt`` files or a ``.txt`` / ``.json`` file is claimed.
"""

from __future__ import annotations

import importlib
import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import field_validator

from proctor.core.dialect import EVERY_COMMAND, BaseOptions, Dialect, OptionError, cli
from proctor.core.registry import Registry


class ProbsemOptions(BaseOptions):
    probsem_norm: Annotated[
        bool,
        cli(
            "--norm",
            "--probsem-norm",
            commands=EVERY_COMMAND,
            help="probsem suites: divide each query's log-prob by its number of tokens (probsem's --norm).",
        ),
    ] = False
    probsem_temp: Annotated[
        float,
        cli(
            "--temp",
            "--probsem-temp",
            commands=EVERY_COMMAND,
            metavar="T",
            help="probsem suites: softmax temperature over the queries (probsem's --temp).",
        ),
    ] = 1.0

    @field_validator("probsem_temp")
    @classmethod
    def _positive_and_finite(cls, temp: float) -> float:
        if not (
            math.isfinite(temp) and temp > 0
        ):  # inf makes every distribution uniform: ties would all count as right
            raise OptionError("--temp", f"probsem's softmax temperature must be > 0 and finite, got {temp}")
        return temp


class ProbsemDialect(Dialect[ProbsemOptions]):
    name = "probsem"
    order = 10
    Options = ProbsemOptions
    fixed_prompts = True
    engine_epochs = False

    def files_in_folder(self, folder: Path) -> list[Path]:
        if not any(p.is_file() for p in folder.rglob("*.txt")):
            return []  # no prompt file: nothing to import the dialect for
        return _dialect().find_in_folder(folder)

    def claims_path(self, path: Path) -> bool:
        return path.suffix in (".txt", ".json")

    def load(self, path: Path, document: Any, explicit: bool, options: ProbsemOptions, notes: list[str]) -> list:
        return _dialect().load_path(path, explicit, options)


def _dialect() -> Any:
    return importlib.import_module("proctor.dialects.probsem")


def _choices_csv(*args: Any, **kwargs: Any) -> list[str]:
    return importlib.import_module("proctor.dialects.probsem.exports").choices_csv(*args, **kwargs)


def register(registry: Registry) -> None:
    registry.add_dialect(ProbsemDialect())
    registry.add_task_handler(
        "probsem.cogsci2023", "proctor.dialects.probsem.cogsci:CogSci2023Task", "proctor.core.dialect:NoOptions"
    )
    registry.add_exporter("choices_csv", _choices_csv)
