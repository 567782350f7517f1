"""proctor's own task YAML as a dialect plug-in (``proctor.dialects.native`` is imported when a document is claimed)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from proctor.core.dialect import BaseOptions, Dialect
from proctor.core.registry import Registry


class NativeDialect(Dialect[BaseOptions]):
    name = "native"
    order = 40
    description = "a native task needs 'name' and 'kind' (or a 'tasks:' list)"
    strict_rows = True

    def claims_document(self, document: Any, path: Path) -> bool:
        """A native task file: ``name`` and ``kind``, or a ``tasks:`` list."""
        return isinstance(document, dict) and ("tasks" in document or {"name", "kind"} <= set(document))

    def load(self, path: Path, document: Any, explicit: bool, options: BaseOptions, notes: list[str]) -> list:
        return importlib.import_module("proctor.dialects.native").load(document, path, options)


def register(registry: Registry) -> None:
    registry.add_dialect(NativeDialect())
