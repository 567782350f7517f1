"""A dialect's handler that gives each sample its texts and nothing more (probsem's suites).

Such a task has a spec of its own (``TaskSpec.handler``: the handler's name and typed options) and no templates:
``load_samples`` (``kinds/capabilities.LoadsSamples``) gives every sample its prompt, choices and target
(``data.sources.GivenTexts``). Unlike a ``kinds/custom`` task class it makes no request itself: the engine
prompts, requests and scores the samples as the task's kind does (the run store, the generation formulation of a
choice on a chat-only model, ``--sample-id``), exactly as for a templated task giving the same texts.
"""

from __future__ import annotations

from typing import Mapping

from pydantic import BaseModel

from proctor.core.task_spec import TaskSpec
from proctor.data.sources import Sample


class GivenTextsTask:
    """Subclass it and define ``load_samples``; ``options`` is the handler's typed options model."""

    def __init__(self, spec: TaskSpec, options: BaseModel) -> None:
        self.spec = spec
        self.options = options
        self.resources: dict[str, object] = {}  # the loaded task's resources (core.task.Task.resources)

    def load_samples(self, limit: int | None = None, variables: Mapping[str, str] | None = None) -> list[Sample]:
        raise NotImplementedError
