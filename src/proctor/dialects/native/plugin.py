"""proctor's own task YAML as a dialect plug-in."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from proctor.core.dialect import Dialect
from proctor.core.registry import Registry


class NativeDialect(Dialect):
    name = "native"
    order = 40
    description = "a native task needs 'name' and 'kind' (or a 'tasks:' list)"

    def claims_document(self, document: Any, path: Path) -> bool:
        from proctor.dialects import native

        return native.claims(document)

    def load(self, path: Path, document: Any, explicit: bool, options: Mapping[str, Any], notes: list[str]) -> list:
        from proctor.dialects import native

        return native.load(document, path, options)


def register(registry: Registry) -> None:
    registry.add_dialect(NativeDialect())
