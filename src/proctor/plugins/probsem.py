"""probsem prompt files and their test suites as a dialect plug-in.

The declaration: options, and the suffixes of probsem's files; ``proctor.dialects.probsem`` is imported
when a folder holds ``.txt`` files or a ``.txt`` / ``.json`` file is claimed.
"""

from __future__ import annotations

import importlib
import math
from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field

from proctor.core.dialect import CliOption, Dialect, OptionContext, OptionError
from proctor.core.registry import Registry

_EVERY_COMMAND = frozenset({"run", "ls", "validate"})


class ProbsemOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    probsem_norm: bool = Field(False, json_schema_extra={"flag": "--norm"})
    probsem_temp: float = Field(1.0, json_schema_extra={"flag": "--temp"})


class ProbsemDialect(Dialect):
    name = "probsem"
    order = 10
    Options = ProbsemOptions
    fixed_prompts = True
    engine_epochs = False
    cli_options = (
        CliOption("norm", ("--norm", "--probsem-norm"), bool, False,
                  "probsem suites: divide each query's log-prob by its number of tokens (probsem's --norm).", _EVERY_COMMAND),
        CliOption("temp", ("--temp", "--probsem-temp"), float, 1.0,
                  "probsem suites: softmax temperature over the queries (probsem's --temp).", _EVERY_COMMAND, metavar="T"),
    )

    def files_in_folder(self, folder: Path) -> list[Path]:
        if not any(p.is_file() for p in folder.rglob("*.txt")):
            return []  # no prompt file: nothing to import the dialect for
        return _dialect().find_in_folder(folder)

    def claims_path(self, path: Path) -> bool:
        return path.suffix in (".txt", ".json")

    def load(self, path: Path, document: Any, explicit: bool, options: Mapping[str, Any], notes: list[str]) -> list:
        return _dialect().load_path(path, explicit, options)

    def parse_options(self, raw: Mapping[str, Any], context: OptionContext) -> dict[str, Any]:
        temp = raw.get("temp", 1.0)
        if not (math.isfinite(temp) and temp > 0):
            raise OptionError("--temp", f"probsem's softmax temperature must be > 0 and finite, got {temp}")
        return {"probsem_norm": bool(raw.get("norm", False)), "probsem_temp": temp}


def _dialect() -> Any:
    return importlib.import_module("proctor.dialects.probsem")


def _choices_csv(*args: Any, **kwargs: Any) -> list[str]:
    return importlib.import_module("proctor.dialects.probsem.exports").choices_csv(*args, **kwargs)


def register(registry: Registry) -> None:
    registry.add_dialect(ProbsemDialect())
    registry.add_task_handler("probsem.cogsci2023", "proctor.dialects.probsem.cogsci:CogSci2023Task", "proctor.core.dialect:NoOptions")
    registry.add_exporter("choices_csv", _choices_csv)
