"""The ``Task`` the use case dialect builds for one use case (run by ``usecase_task.UseCaseTask``).

Its ``TaskSpec`` is a ``generate`` task run by the ``aisteer.use_case`` handler; its options (``UseCaseTaskOptions``)
carry what identifies the run (the use case's fingerprint, ``gen_kwargs``, ``batch_size``, ``runtime_overrides``), so
the content hash, resume and ``--update`` see any change. How to build the use case object rides in the task's
``resources`` (``Task.resources["use_case"]``, a ``UseCaseEntry``).

Apart from the handler, which runs the use case inside ``aisteer_names`` (AISteer360's names, ``Benchmark`` among
them): a ``Benchmark`` builds its trials' tasks here without importing what runs them.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from proctor.core.task import Task
from proctor.core.task_spec import HandlerSpec, TaskSpec
from proctor.dialects.aisteer.base import UseCase
from proctor.dialects.aisteer.task_options import UseCaseTaskOptions

HANDLER = "aisteer.use_case"  # the registered task handler (declaration.py): usecase_task.UseCaseTask

Built = tuple[UseCase, dict, dict]  # the use case, its gen_kwargs, the other generate() keywords


@dataclass(frozen=True)
class UseCaseEntry:
    """How to build a loaded use case, at most ``limit`` rows (None: all of them)."""

    build: Callable[[int | None], Built]


def _jsonable(value: object) -> Any:
    return json.loads(json.dumps(value, default=repr))


def use_case_task(
    name: str,
    built: Built,
    build: Callable[[int | None], Built],
    source: Path | None,
    benchmark_trial: int | None = None,
) -> Task:
    """The task of one use case; ``built`` is it with every row, ``build(limit)`` builds it again;
    ``benchmark_trial``: the trial of a ``Benchmark`` this task runs (see the module doc)."""
    case, gen_kwargs, call = built
    fingerprint = case.fingerprint()
    spec = TaskSpec.model_validate(
        {
            "name": name,
            "kind": "generate",
            "description": f"Python use case {type(case).__qualname__}",
            "data": [{"path": str(source) if source is not None else f"<python:{type(case).__qualname__}>"}],
            "handler": HandlerSpec(
                name=HANDLER,
                options=UseCaseTaskOptions(
                    fingerprint=fingerprint,
                    gen_kwargs=_jsonable(gen_kwargs),
                    batch_size=call.get("batch_size"),
                    runtime_overrides=_jsonable(call.get("runtime_overrides")),
                    benchmark_trial=benchmark_trial,
                ),
            ),
        }
    )
    base = source.parent if source is not None else Path.cwd()
    return Task(spec=spec, file=source, base_dir=base, dialect="aisteer", resources={"use_case": UseCaseEntry(build)})


def object_build(
    case: UseCase, gen_kwargs: Mapping[str, object], call: Mapping[str, object]
) -> Callable[[int | None], Built]:
    """``build`` for a use case object: a copy holding its first ``limit`` rows (the object stays as is)."""

    def build(limit: int | None) -> Built:
        if not limit:
            return case, dict(gen_kwargs), dict(call)
        cut = copy.copy(case)
        cut.evaluation_data = case.evaluation_data[:limit]
        return cut, dict(gen_kwargs), dict(call)

    return build
