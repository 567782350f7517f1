"""results.json as a run builds it: its top level typed, filled in as tasks finish, turned into the file's
dictionary (``as_dict``) each time it is written.

The fields and their order are results.json's (``runs.results_schema.Results``, docs/results.md); a field that
is left out of the file until it has a value (``limit_per_part``, ``skipped``, ``warnings``, ``rollup``, the
run's ``total_seconds``) is None here until then. Each task's result is the ``TaskResult`` its run built
(dialects add fields of their own); the whole file is checked against the schema when it is written.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, PrivateAttr

from proctor.runs.documents import Fingerprint, ResultsDocument
from proctor.runs.environment_record import environment as environment
from proctor.runs.results_schema import Environment, GroupResult, RollupNode, RunTiming
from proctor.runs.task_result import TaskResult
from proctor.scoring import rollup as scoring_rollup
from proctor.scoring.aggregate import TaskEntry

Status = Literal["running", "complete", "partial"]


class RunResults(BaseModel):
    """The run's results, as results.json lists them (the file adds ``samples_bytes`` when it is written)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    proctor_version: str
    created: str
    run_id: Optional[str] = None  # run.json's: the same in a copy of the folder, new in every other run
    command: Optional[list[str]]
    model: Fingerprint
    model_info: dict[str, Any]
    roles: Optional[dict[str, dict[str, Any]]] = None  # the models in roles (api/model_roles.py), once one is made
    chat_applied: bool
    environment: Environment
    status: Status = "running"
    limit: Union[int, float, None]
    limit_per_part: Optional[Literal[True]] = None
    sample_ids: Optional[list[str]] = None
    predict_only: Optional[Literal[True]] = None
    overrides: dict[str, Any]
    tasks: dict[str, TaskResult] = {}
    groups: dict[str, GroupResult] = {}
    timing: RunTiming
    skipped: Optional[list[dict[str, Any]]] = None
    warnings: Optional[list[str]] = None
    rollup: Optional[RollupNode] = None
    # skipped and warnings are listed in the file in the order they first had an entry
    _listed: list[str] = PrivateAttr(default_factory=list)

    def model_post_init(self, context: object) -> None:
        self._listed = [name for name in ("skipped", "warnings") if getattr(self, name) is not None]

    def add_skipped(self, entry: dict[str, object]) -> None:
        """A file or task that could not be loaded, prepared or run."""
        self._append("skipped", entry)

    def add_warning(self, text: str) -> None:
        self._append("warnings", text)

    def _append(self, name: str, entry: object) -> None:
        if getattr(self, name) is None:
            setattr(self, name, [])
            self._listed.append(name)
        getattr(self, name).append(entry)

    def add_task(self, name: str, result: TaskResult) -> None:
        """A finished task's result; its warnings are also listed run-wide, as 'task: warning'."""
        self.tasks[name] = result
        for warning in result.warnings or []:
            self.add_warning(f"{name}: {warning}")

    def task_entries(self) -> dict[str, TaskEntry]:
        """The tasks' entries as results.json holds them (what group scores and roll-up rules read)."""
        return {name: result.as_dict() for name, result in self.tasks.items()}

    def finish(self, groups: dict[str, Any], rollup: scoring_rollup.RollupNode | None, total_seconds: float) -> None:
        """Every task ran (or failed): the group scores and the roll-up (scoring's, checked against their
        models here), the status and the total time."""
        self.groups = groups
        if rollup is not None:
            self.rollup = RollupNode.model_validate(rollup)
        self.status = "partial" if self.skipped else "complete"
        self.timing = RunTiming(model_load_seconds=self.timing.model_load_seconds, total_seconds=total_seconds)

    def as_dict(self) -> ResultsDocument:
        """The dictionary results.json holds (less ``samples_bytes``), in the file's order."""
        out: ResultsDocument = {
            "proctor_version": self.proctor_version,
            "created": self.created,
            **({"run_id": self.run_id} if self.run_id else {}),
            "command": self.command,
            "model": self.model,
            "model_info": self.model_info,
            **({"roles": self.roles} if self.roles else {}),
            "chat_applied": self.chat_applied,
            "environment": self.environment.model_dump(),
            "status": self.status,
            "limit": self.limit,
            **({"limit_per_part": True} if self.limit_per_part else {}),
            **({"sample_ids": self.sample_ids} if self.sample_ids else {}),
            **({"predict_only": True} if self.predict_only else {}),
            "overrides": self.overrides,
            "tasks": self.task_entries(),
            "groups": {name: group.model_dump(exclude_unset=True) for name, group in self.groups.items()},
            "timing": self.timing.model_dump(exclude_none=True),
        }
        for name in self._listed:
            out[name] = getattr(self, name)
        if self.rollup is not None:
            out["rollup"] = self.rollup.model_dump(exclude_unset=True)
        return out
