"""AISteer360-style Python use cases and steering pipelines as a dialect plug-in (``.py`` files, ``steer:`` models).

The declaration: options, the ``.py`` suffix and the ``steer`` model prefix; ``proctor.dialects.aisteer`` is
imported when a file is claimed or a ``steer:`` model loads.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Annotated, Any, List, Optional

from proctor.core.dialect import BaseOptions, Dialect, cli
from proctor.core.errors import ProctorError
from proctor.core.registry import Registry


class AISteerOptions(BaseOptions):
    """The use case dialect's options (``runfile.options_config`` reads them)."""

    use_case_data: Annotated[
        Optional[Path],
        cli(
            "--use-case-data",
            metavar="FILE",
            help="Use case files (.py): the evaluation data (.json/.jsonl) for a file that defines only the class.",
        ),
    ] = None
    use_case_metric: Annotated[
        Optional[List[str]],
        cli(
            "--use-case-metric",
            metavar="METRIC",
            help="Use case files: a metric (built-in name, FILE.py:CLASS or module:CLASS; repeatable).",
        ),
    ] = None
    use_case_arg: Annotated[
        Optional[List[str]],
        cli(
            "--use-case-arg",
            metavar="KEY=VALUE",
            help="Use case files: KEY=VALUE keyword argument of the use case (JSON value; repeatable).",
        ),
    ] = None
    use_case_config: Annotated[
        Optional[Path],
        cli(
            "--use-case-config",
            metavar="FILE",
            help="Use case files: a YAML/JSON file with evaluation_data, evaluation_metrics, "
            "use_case_kwargs, gen_kwargs, batch_size.",
        ),
    ] = None


class AISteerDialect(Dialect[AISteerOptions]):
    name = "aisteer"
    former_names = ("usecase",)  # what results.json said before; see docs/architecture.md, "Dialect names"
    title = "Python use case"
    order = 5
    description = "a Python use case file defines a UseCase subclass"
    Options = AISteerOptions
    fixed_prompts = True

    def claims_path(self, path: Path) -> bool:
        return path.suffix == ".py"

    def load(self, path: Path, document: Any, explicit: bool, options: AISteerOptions, notes: list[str]) -> list:
        from proctor.core.user_code import refusal

        if not explicit and not options.trust_task_code:  # found in a folder, not named on the command line
            raise refusal("this use case file", file=path, field="use_case")
        runfile = importlib.import_module("proctor.dialects.aisteer.runfile")
        return runfile.file_tasks(path, runfile.options_config(options))

    def apply_overrides(self, task: Any, overrides: Any, chat: bool | None) -> Any:
        given = sorted(k for k in overrides.recorded() if k != "log_samples")
        if given:
            raise ProctorError(
                f"use case files (.py) set their own prompts and generation in Python; they take none of the run-time "
                f"overrides ({', '.join(given)}), only --limit (rows)"
            )
        return task, set()


def _load_steered(rest: str, **options: Any) -> Any:
    return importlib.import_module("proctor.dialects.aisteer.steer_backend").load_steered(rest, **options)


def _check_steered(rest: str, options: dict) -> set[str]:
    """``steer:FILE.py:NAME``: the file exists; options are the HF backend's (the base model's) and ``base``."""
    from proctor.core.errors import ModelLoadError
    from proctor.models.hf import HFModel
    from proctor.models.registry import named_parameters

    file, sep, name = rest.rpartition(":")
    if not sep or not file.endswith(".py") or not name:
        raise ModelLoadError(
            "--model steer: takes FILE.py:NAME (a pipeline, a list of controls or a "
            f"function in the file), got '{rest}'"
        )
    if not Path(file).expanduser().is_file():
        raise ModelLoadError(f"--model steer:{rest}: no such file {file}")
    return named_parameters(HFModel) | {"base"}


def register(registry: Registry) -> None:
    registry.add_dialect(AISteerDialect())
    registry.add_task_handler(
        "aisteer.use_case",
        "proctor.dialects.aisteer.usecase_task:UseCaseTask",
        "proctor.dialects.aisteer.task_options:UseCaseTaskOptions",
    )
    registry.add_model_backend("steer", _load_steered, _check_steered)
