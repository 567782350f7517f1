"""The import graph of a package read from its source (``ast``), modules named in strings included, and its circles.

An edge for each import statement (inside functions and ``if TYPE_CHECKING:`` blocks too) and, with
``strings=True``, for each string literal that is a dotted ``proctor.`` name, optionally followed by ``:attr`` (an
f-string counts by its leading text up to the ``:``): the string names the longest module its dotted prefix spells
(``proctor.dialects.aisteer.usecase_task.UseCaseTask`` names ``proctor.dialects.aisteer.usecase_task``), unless that
is the bare top package: ``"proctor.run_dir"`` (a tracker's key) or ``"proctor.plugins"`` (an entry-point group)
name no module. A logger's name (``logging.getLogger("proctor.engine.runner")``) names no code either.

As grimp, ``from pkg import sub`` is an edge to ``pkg.sub`` when that is a module, and importing ``a.b.c`` is no
edge to ``a`` or ``a.b`` (Python runs their ``__init__`` first, but a package importing its own modules would
otherwise always be a circle).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

# a whole string literal naming a module, with an attribute after ':' (or a dotted attribute path)
_NAMED = re.compile(r"proctor(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_][\w.]*)?")
_F_STRING_HEAD = re.compile(r"proctor(?:\.[A-Za-z_]\w*)+:")  # an f-string's leading "proctor.x.y:" text


def modules_under(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` (a folder under ``root``) by dotted name; a package by its ``__init__``."""
    found = {}
    for file in sorted((root / package.replace(".", "/")).rglob("*.py")):
        parts = list(file.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = file
    return found


def _longest_module(dotted: str, modules: dict[str, Path], least: int = 1) -> str | None:
    """The longest module ``dotted`` starts with, of at least ``least`` parts."""
    parts = dotted.split(".")
    for end in range(len(parts), least - 1, -1):
        name = ".".join(parts[:end])
        if name in modules:
            return name
    return None


def _named_in_string(node: ast.AST) -> str | None:
    """The dotted name a string literal (or an f-string's leading text) gives, without ``:attr``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and _NAMED.fullmatch(node.value.strip()):
        return node.value.strip().partition(":")[0]
    if isinstance(node, ast.JoinedStr) and node.values:
        head = node.values[0]
        if isinstance(head, ast.Constant) and isinstance(head.value, str) and _F_STRING_HEAD.fullmatch(head.value):
            return head.value[:-1]
    return None


def _is_get_logger(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    function = node.func
    return (function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)) == "getLogger"


def _imported(node: ast.AST, module: str, is_package: bool, modules: dict[str, Path]) -> list[str]:
    """The modules an import statement names (relative imports resolved against ``module``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        anchor = module.split(".") if is_package else module.split(".")[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]


def import_graph(root: Path, package: str, strings: bool = True) -> dict[str, set[str]]:
    """module -> the modules of ``package`` it imports (or, with ``strings``, names in a string), itself left out."""
    modules = modules_under(root, package)
    graph: dict[str, set[str]] = {}
    for module, file in modules.items():
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        logger_names = {id(arg) for node in ast.walk(tree) if _is_get_logger(node) for arg in node.args}
        targets: set[str] = set()
        for node in ast.walk(tree):
            named = None if not strings or id(node) in logger_names else _named_in_string(node)
            names = [named] if named else _imported(node, module, file.name == "__init__.py", modules)
            for name in names:
                target = _longest_module(name, modules, least=2 if named else 1)
                if target is not None and target != module:
                    targets.add(target)
        graph[module] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(graph[root])))]
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)
