"""proctor's own task YAML, declared: which documents are native; ``loader:load`` reads them when one is claimed.

A leaf that imports only ``core`` (``core/registry.py`` finds it by scanning ``proctor.dialects``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from proctor.core.contributions import Registry
from proctor.core.dialect import BaseOptions, Dialect
from proctor.core.references import resolve

if TYPE_CHECKING:
    from proctor.core.task import Task


class NativeDialect(Dialect[BaseOptions]):
    name = "native"
    order = 40
    description = "a native task needs 'name' and 'kind' (or a 'tasks:' list)"
    strict_rows = True

    def claims_document(self, document: object, path: Path) -> bool:
        """A native task file: ``name`` and ``kind``, or a ``tasks:`` list."""
        return isinstance(document, dict) and ("tasks" in document or {"name", "kind"} <= set(document))

    def load(self, path: Path, document: object, explicit: bool, options: BaseOptions, notes: list[str]) -> list[Task]:
        load: Callable[[object, Path, BaseOptions], list[Task]] = resolve("proctor.dialects.native.loader:load")
        return load(document, path, options)


def register(registry: Registry) -> None:
    registry.add_dialect(NativeDialect())
