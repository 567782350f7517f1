"""How many of src/proctor's annotations contain ``Any`` (issue 48's count), read from the source with ``ast``.

An annotation is a parameter's, a return value's or a variable's (``x: T = ...``); it "contains Any" when its
source text names ``Any`` anywhere (``dict[str, Any]``, ``Any | None``). Type aliases whose value contains
``Any`` are listed too (``any_aliases``), so that a new one is a reviewed choice rather than a way around the count.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class AnnotationCount:
    total: int
    with_any: int

    @property
    def share(self) -> float:
        return self.with_any / self.total if self.total else 0.0


def _annotations(tree: ast.AST) -> list[ast.expr]:
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, *(a for a in (args.vararg, args.kwarg) if a)]
            found += [a.annotation for a in every if a.annotation is not None]
            if node.returns is not None:
                found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
    return found


def count_source(text: str) -> AnnotationCount:
    annotations = _annotations(ast.parse(text))
    return AnnotationCount(len(annotations), sum("Any" in ast.unparse(a) for a in annotations))


def count_tree(root: Path) -> AnnotationCount:
    counts = [count_source(path.read_text(encoding="utf-8")) for path in sorted(root.rglob("*.py"))]
    return AnnotationCount(sum(c.total for c in counts), sum(c.with_any for c in counts))


def any_aliases(root: Path) -> set[str]:
    """``module:Name`` for each module-level ``Name = <type containing Any>`` (or ``Name: TypeAlias = ...``)."""
    found: set[str] = set()
    for path in sorted(root.rglob("*.py")):
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name, value = node.targets[0].id, node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                if "TypeAlias" not in ast.unparse(node.annotation):
                    continue
                name, value = node.target.id, node.value
            else:
                continue
            text = ast.unparse(value)
            is_type = isinstance(value, (ast.Subscript, ast.Name, ast.BinOp, ast.Attribute))
            if is_type and "Any" in text and name[:1].isupper():
                found.add(f"{module}:{name}")
    return found
