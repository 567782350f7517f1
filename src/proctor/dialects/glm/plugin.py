"""GLM-130B task YAMLs (and their ``module:`` task classes) as a dialect plug-in."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from proctor.core.dialect import Dialect
from proctor.core.registry import Registry


class GLMDialect(Dialect):
    name = "glm130b"
    order = 50
    description = "a GLM-130B task needs 'name', 'type' and 'path'"
    single_part_breakdowns = True  # GLM prints each file's result, even a task's only one

    def claims_document(self, document: Any, path: Path) -> bool:
        from proctor.dialects.glm import dialect

        return dialect.claims(document)

    def load(self, path: Path, document: Any, explicit: bool, options: Mapping[str, Any], notes: list[str]) -> list:
        from proctor.dialects.glm import dialect

        return dialect.load(document, path, options)


def register(registry: Registry) -> None:
    registry.add_dialect(GLMDialect())
    registry.add_metric_module("proctor.dialects.glm.glm_metrics")
