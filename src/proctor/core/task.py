"""A loaded task: its frozen spec and where it came from (file, line, dialect)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, NamedTuple

from proctor.core.task_spec import TaskSpec

# ``Task.resources`` key: group -> the metric names the group's own definition says it averages (lm-eval's
# aggregate_metric_list), where a dialect knows them; a group absent from it averages every shared metric
GROUP_METRICS = "group_metrics"
# ``Task.resources`` key: group -> its GroupAggregate entries, where the dialect's group says how it averages each
# metric (lm-eval's aggregate_metric_list): such a group is scored by those rules alone (scoring/aggregate)
GROUP_AGGREGATION = "group_aggregation"


class GroupAggregate(NamedTuple):
    """How a group averages one metric over its tasks (one lm-eval ``aggregate_metric_list`` entry): the filters
    it reads (None: every filter a member reports the metric under) and whether members weigh by their samples."""

    metric: str
    filters: tuple[str, ...] | None
    weight_by_size: bool


# ``Task.resources`` key: the spec fields a run-time override rewrote (``with_spec_changes``), so a check of the task
# file does not blame the file for what the command line asked (``--num-fewshot 0`` beside a fewshot.source)
OVERRIDDEN = "overridden"


@dataclass(frozen=True)
class Task:
    """A validated task and its origin. ``lines`` maps field names to YAML lines for errors.

    ``resources``: objects the loading dialect hands the task's handler besides the spec (a judge model
    given as an object, local copies of hub datasets); not part of the task's identity or hash.

    ``inputs``: what the model must take besides text, as the loading dialect knows it before any data is
    read (``"images"`` for a SEA-HELM vision task); ``needs`` adds what the spec itself says (``images:``).
    ``ls`` shows it, so a task that needs a vision-language model says so before ``run`` refuses a text model."""

    spec: TaskSpec
    file: Path | None
    base_dir: Path
    dialect: str = "native"
    line: int | None = None
    lines: dict[str, int] = field(default_factory=dict, compare=False, hash=False)
    resources: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)
    inputs: tuple[str, ...] = field(default=(), compare=False, hash=False)

    @property
    def needs(self) -> tuple[str, ...]:
        """Inputs besides text the model must take: the dialect's ``inputs``, and ``images`` for a spec with
        ``images:``."""
        found = list(self.inputs)
        if self.spec.images is not None and "images" not in found:
            found.append("images")
        return tuple(found)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def where(self) -> str:
        location = str(self.file) if self.file else "<python>"
        return f"{location}:{self.line}" if self.line else location
