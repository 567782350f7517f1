"""proctor's own task YAML, declared: which documents are native; ``loader:load`` reads them when one is claimed.

A leaf that imports only ``core`` (``core/registry.py`` finds it by scanning ``proctor.dialects``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from proctor.core.contributions import Registry
from proctor.core.dialect import BaseOptions, Dialect
from proctor.core.references import resolve


class NativeDialect(Dialect[BaseOptions]):
    name = "native"
    order = 40
    description = "a native task needs 'name' and 'kind' (or a 'tasks:' list)"
    strict_rows = True

    def claims_document(self, document: Any, path: Path) -> bool:
        """A native task file: ``name`` and ``kind``, or a ``tasks:`` list."""
        return isinstance(document, dict) and ("tasks" in document or {"name", "kind"} <= set(document))

    def load(self, path: Path, document: Any, explicit: bool, options: BaseOptions, notes: list[str]) -> list:
        return resolve("proctor.dialects.native.loader:load")(document, path, options)


def register(registry: Registry) -> None:
    registry.add_dialect(NativeDialect())
