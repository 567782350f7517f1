"""AISteer360-style Python use cases and steering pipelines, declared: options (``options``), the ``.py`` suffix
and the ``steer`` model prefix.

A leaf that imports only ``core`` (and its options): ``runfile`` is imported when a file is claimed,
``steer_backend`` when a ``steer:`` model loads, ``steer_check`` when one is checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from proctor.core.contributions import Registry
from proctor.core.dialect import Dialect
from proctor.core.errors import ProctorError
from proctor.core.references import lazy, resolve
from proctor.dialects.aisteer.options import AISteerOptions

if TYPE_CHECKING:
    from proctor.core.run_overrides import RunOverrides
    from proctor.core.task import Task


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

    def load(
        self, path: Path, document: object, explicit: bool, options: AISteerOptions, notes: list[str]
    ) -> list[Task]:
        from proctor.core.user_code import refusal

        if not explicit and not options.trust_task_code:  # found in a folder, not named on the command line
            raise refusal("this use case file", file=path, field="use_case")
        options_config = resolve("proctor.dialects.aisteer.runfile:options_config")
        tasks: list[Task] = resolve("proctor.dialects.aisteer.runfile:file_tasks")(path, options_config(options))
        return tasks

    def apply_overrides(self, task: Task, overrides: RunOverrides, chat: bool | None) -> tuple[Task, set[str]]:
        given = sorted(k for k in overrides.recorded() if k != "log_samples")
        if given:
            raise ProctorError(
                f"use case files (.py) set their own prompts and generation in Python; they take none of the run-time "
                f"overrides ({', '.join(given)}), only --limit (rows)"
            )
        return task, set()


def register(registry: Registry) -> None:
    registry.add_dialect(AISteerDialect())
    registry.add_task_handler(
        "aisteer.use_case",
        "proctor.dialects.aisteer.usecase_task:UseCaseTask",
        "proctor.dialects.aisteer.task_options:UseCaseTaskOptions",
    )
    registry.add_model_backend(
        "steer",
        lazy("proctor.dialects.aisteer.steer_backend:load_steered"),
        lazy("proctor.dialects.aisteer.steer_check:check_steered"),
        runs_code=True,  # FILE.py:NAME is imported: from a task file only with --trust-task-code
    )
