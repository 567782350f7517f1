"""YAML loading that remembers the line of every mapping key, for errors that point at a line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from proctor.core.errors import TaskDefinitionError


class LineDict(dict):
    """A dict from YAML that knows its own line and the line of each key (1-based)."""

    line: int = 0
    key_lines: dict

    def line_of(self, key: Any) -> int:
        return self.key_lines.get(key, self.line)


class LineList(list):
    line: int = 0
    item_lines: list


# libyaml's C parser when present (several times faster); the constructors stay in Python.
class _LineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    result = LineDict()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


def _construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> LineList:
    result = LineList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.item_lines = [child.start_mark.line + 1 for child in node.value]
    return result


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def load_yaml(path: Path) -> Any:
    """Parse a YAML file; syntax errors become a TaskDefinitionError with the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskDefinitionError(f"cannot read the file: {exc}", file=path) from None
    try:
        return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or str(exc)
        raise TaskDefinitionError(f"invalid YAML: {problem}", file=path, line=line) from None


def line_for(raw: Any, loc: tuple) -> tuple[int | None, str]:
    """The line of the deepest key in ``loc`` found in ``raw``, and the dotted field path."""
    line = getattr(raw, "line", None)
    node = raw
    parts: list[str] = []
    for step in loc:
        if isinstance(node, LineDict) and step in node:
            line = node.line_of(step)
            node = node[step]
            parts.append(str(step))
        elif isinstance(node, LineList) and isinstance(step, int) and step < len(node):
            line = node.item_lines[step]
            node = node[step]
            parts.append(f"[{step}]")
        else:
            parts.append(str(step))
            break
    dotted = ".".join(parts).replace(".[", "[")
    return line, dotted
