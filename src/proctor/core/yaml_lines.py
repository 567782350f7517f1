"""YAML loading that remembers the line of every mapping key, for errors that point at a line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from proctor.core.errors import TaskDefinitionError
from proctor.core.special_files import refuse_special
from proctor.core.yaml_bounds import AliasBound


class LineDict(dict[Any, Any]):
    """A dict from YAML that knows its own line and the line of each key (1-based)."""

    line: int = 0
    key_lines: dict[object, int]

    def line_of(self, key: object) -> int:
        return self.key_lines.get(key, self.line)


class LineList(list[Any]):
    line: int = 0
    item_lines: list[int]


# libyaml's C parser when present (several times faster); the constructors stay in Python.
class _LineLoader(AliasBound, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> LineDict:
    own = sum(1 for key_node, _ in node.value if key_node.tag != "tag:yaml.org,2002:merge")
    loader.flatten_mapping(node)  # the merged (``<<: *anchor``) pairs first, then the mapping's own keys
    merged = len(node.value) - own
    result = LineDict()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    own_keys: set[object] = set()
    for index, (key_node, value_node) in enumerate(node.value):
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found a {type(key).__name__.replace('Line', '').lower()} as a key "
                "(an unquoted '{{ ... }}' template is read as a YAML mapping: put the value in quotes)",
                key_node.start_mark,
            ) from None
        # a key of the mapping's own overrides a merged one (YAML's merge key); given twice itself, it is an error
        if index >= merged and key in own_keys:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        if index >= merged:
            own_keys.add(key)
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


def read_text(path: Path) -> str:
    """A text file's content; a byte that is not UTF-8 or an unreadable file is an error naming it (and the line)."""
    refuse_special(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TaskDefinitionError(f"cannot read the file: {exc.strerror or exc}", file=path) from None
    try:
        return data.decode("utf-8-sig")  # a byte-order mark is not part of the text
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TaskDefinitionError(
            f"not UTF-8 text: byte {data[exc.start]:#04x} at offset {exc.start} " "(save the file as UTF-8)",
            file=path,
            line=line,
        ) from None


def yaml_error(exc: yaml.YAMLError, path: Path | str, text: str | None = None) -> TaskDefinitionError:
    """PyYAML's error as a TaskDefinitionError: the line, PyYAML's context ("while scanning a quoted scalar"
    and where that started) and the offending line of the file with a caret under the column."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    parts = []
    if context:
        same = context_mark is not None and mark is not None and context_mark.line == mark.line
        parts.append(context + (f" (line {context_mark.line + 1})" if context_mark is not None and not same else ""))
    parts.append(problem)
    detail = "invalid YAML: " + ", ".join(parts)
    if mark is None and isinstance(exc, yaml.reader.ReaderError):  # a control character: its position
        character = exc.character if isinstance(exc.character, int) else ord(exc.character)
        detail = f"invalid YAML: character #x{character:04x} is not allowed ({exc.reason})"
        line = text.count("\n", 0, exc.position) + 1 if text is not None else None
        return TaskDefinitionError(detail, file=path, line=line)
    line = mark.line + 1 if mark is not None else None
    lines = text.splitlines() if text is not None else []
    if mark is not None and 0 <= mark.line < len(lines):
        shown = lines[mark.line].replace("\t", " ")
        if len(shown) <= 200:
            detail += f"\n    {shown}\n    {' ' * mark.column}^"
    return TaskDefinitionError(detail, file=path, line=line)


def load_yaml(path: Path) -> Any:
    """Parse a YAML file; syntax errors become a TaskDefinitionError with the line."""
    text = read_text(path)
    try:
        return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        raise yaml_error(exc, path, text) from None
    except RecursionError:  # lists or mappings nested thousands deep (the constructor recurses per level)
        raise TaskDefinitionError("invalid YAML: lists or mappings nested too deeply to read", file=path) from None


def line_for(raw: object, loc: tuple[int | str, ...]) -> tuple[int | None, str]:
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
        elif step == 0 and isinstance(node, LineDict):  # one mapping the spec took as a list of one ('data: {...}')
            continue
        else:
            parts.append(str(step))
            break
    dotted = ".".join(parts).replace(".[", "[")
    return line, dotted
