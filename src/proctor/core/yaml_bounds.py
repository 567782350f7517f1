"""YAML alias bombs refused: a document whose aliases expand it past ``MAX_EXPANDED`` nodes is an error.

PyYAML builds an alias (``*name``) as a reference to the anchored value, so a "billion laughs" document
(nine lists of nine references to the list before, nine levels deep) loads into little memory; what reads
it next (validation, hashing, JSON) walks every reference and runs for hours or fills the memory. Every
YAML proctor or a dialect loads goes through a loader with ``AliasBound``'s ``get_single_data``, which
counts the nodes the document expands to (each shared node once, so in time linear in the file) before
building any Python object. lm-eval's own loader gets the same check (``dialects/lmeval/library.py``).
"""

from __future__ import annotations

from typing import Any, Iterator

import yaml

MAX_EXPANDED = 1_000_000  # nodes a document expands to, past what it holds written out ...
RATIO = 10  # ... and past this many times its own nodes: a long file without aliases is no bomb


class YamlAliasBomb(yaml.YAMLError):
    """The document's aliases expand it too far; ``problem_mark`` is where the document starts."""

    def __init__(self, expanded: int, written: int, mark: yaml.Mark | None) -> None:
        name = str(getattr(mark, "name", "") or "")
        where = f" {name}" if name and not name.startswith("<") else ""  # a file lm-eval includes: named
        self.problem = (
            f"the aliases (*name) of{where or ' the document'} expand it to {expanded:,} values from {written:,} "
            "written (an alias bomb?); write the values out, or refer to fewer"
        )
        self.problem_mark = mark
        super().__init__(self.problem)


class YamlSelfReference(yaml.YAMLError):
    def __init__(self, mark: yaml.Mark | None) -> None:
        self.problem = "a value refers to itself through an alias (*name inside its own &name)"
        self.problem_mark = mark
        super().__init__(self.problem)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def check_expansion(root: yaml.Node) -> None:
    """Raise ``YamlAliasBomb`` if ``root`` expands too far, ``YamlSelfReference`` on a cycle of aliases."""
    sizes: dict[int, int] = {}  # a node's expanded size, by id (a shared node is counted once)
    open_ids = {id(root)}  # the nodes on the path from the root: meeting one again is a cycle
    stack: list[tuple[yaml.Node, list[yaml.Node], Iterator[yaml.Node]]] = []
    children = _children(root)
    stack.append((root, children, iter(children)))
    while stack:
        node, below, pending = stack[-1]
        for child in pending:
            if id(child) not in sizes:
                break
        else:  # every child is sized: so is the node
            stack.pop()
            open_ids.discard(id(node))
            sizes[id(node)] = 1 + sum([sizes[id(c)] for c in below])
            continue
        if id(child) in open_ids:
            raise YamlSelfReference(child.start_mark)
        open_ids.add(id(child))
        grandchildren = _children(child)
        if grandchildren:
            stack.append((child, grandchildren, iter(grandchildren)))
        else:  # a scalar: sized at once
            open_ids.discard(id(child))
            sizes[id(child)] = 1
    expanded, written = sizes[id(root)], len(sizes)
    if expanded > max(MAX_EXPANDED, RATIO * written):
        raise YamlAliasBomb(expanded, written, root.start_mark)


class AliasBound:
    """A loader mixin (before PyYAML's loader class among the bases): the document's expansion is checked
    before any object is built."""

    def get_single_data(self) -> Any:
        node = self.get_single_node()  # type: ignore[attr-defined]  # the loader's composer
        if node is None:
            return None
        check_expansion(node)
        return self.construct_document(node)  # type: ignore[attr-defined]  # the loader's constructor


_Safe: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when present


class BoundedSafeLoader(AliasBound, _Safe):  # type: ignore[misc]
    """``yaml.safe_load``'s loader with the alias check."""


def safe_load(stream: Any) -> Any:
    """``yaml.safe_load`` with the alias check: what the dialects read their own YAML files with."""
    return yaml.load(stream, Loader=BoundedSafeLoader)  # noqa: S506 - a SafeLoader
