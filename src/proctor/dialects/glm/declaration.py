"""GLM-130B task YAMLs (and their ``module:`` task classes), declared: which YAML documents are GLM's (``name``
and ``type``) and the names of GLM's metrics.

A leaf that imports only ``core``: ``dialect:load`` is imported when a document is claimed,
``registered_metrics`` when one of those metrics is looked up.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from proctor.core.audit import AuditRule, dialect_check
from proctor.core.contributions import Registry
from proctor.core.dialect import BaseOptions, Dialect
from proctor.core.references import resolve

if TYPE_CHECKING:  # for annotations only: the declaration stays a leaf over core at run time
    from proctor.core.task import Task


class GLMDialect(Dialect[BaseOptions]):
    name = "glm"
    former_names = ("glm130b",)  # what results.json said before; see docs/architecture.md, "Dialect names"
    order = 50
    description = "a GLM-130B task needs 'name', 'type' and 'path'"
    single_part_breakdowns = True  # GLM prints each file's result, even a task's only one

    def claims_document(self, document: object, path: Path) -> bool:
        """A mapping with name and type (native files have 'kind' or 'tasks'); a missing 'path' is then
        reported as such."""
        if not isinstance(document, dict) or "kind" in document or "tasks" in document:
            return False
        return {"name", "type"} <= set(document)

    def load(self, path: Path, document: object, explicit: bool, options: BaseOptions, notes: list[str]) -> list[Task]:
        tasks: list[Task] = resolve("proctor.dialects.glm.dialect:load")(document, path, options)
        return tasks


# GLM-130B's metric names (dialects/glm/registered_metrics.py registers them when one is first looked up)
METRICS = ("Accuracy", "Accuracy_norm", "Accuracy_per_token", "Precision", "Recall", "F1_mul", "EM", "F1", "PPL", "BPB")


def register(registry: Registry) -> None:
    registry.add_dialect(GLMDialect())
    registry.add_task_handler(
        "glm.module", "proctor.dialects.glm.handler:GLMModuleTask", "proctor.dialects.glm.task_options:GLMModuleOptions"
    )
    registry.add_metric_module("proctor.dialects.glm.registered_metrics", METRICS)
    registry.add_audit_rule(
        AuditRule(
            "glm.prompt-rows",
            "warning",
            "A GLM-130B dataset's prompt folders hold different numbers of rows: the max and median over its prompts "
            "compare scores on different questions.",
            dialect_check("glm", "proctor.dialects.glm.audit_rules:prompt_rows"),
        )
    )
