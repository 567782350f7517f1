"""Score hierarchies: tasks -> group (macro/micro) -> levels (e.g. competency, language) -> overall.

Each task with a ``rollup`` entry contributes its ``metric``. When the task's metric carries per-
bootstrap values (several seeded runs), the bootstrap vectors are averaged level by level and each
level's standard error is sqrt(var(bootstrap means) / B); otherwise the stderr combines the children's.

A node of the deepest level whose score is not the mean of its groups (SEA-HELM's linguistic
diagnostics) is scored by a :class:`RollupRule` that a plug-in registered (``Registry.add_rollup_rule``).
"""

from __future__ import annotations

from typing import Any, Iterable, Protocol

import numpy as np

from proctor.scoring.aggregate import TaskEntry
from proctor.scoring.stats import bootstrap_stderr, pooled_stderr

# a node of the hierarchy, as results.json holds it: {"value", "stderr", "children", ...}; a subtree
# being built maps level values to such nodes
RollupNode = dict[str, Any]
LevelPath = tuple[str, ...]  # one value per level (e.g. ("knowledge", "en"))


class RollupRule(Protocol):
    """Scores some deepest-level nodes (e.g. a competency within a language) in its own way."""

    def member_key(self, name: str, result: TaskEntry, level_names: list[str]) -> str | None:
        """The key under which this task result goes to :meth:`apply` at its node, or None (not the rule's)."""

    def apply(self, entry: RollupNode, tasks: dict[str, TaskEntry]) -> None:
        """Rescore ``entry`` (the node, scored as the mean of its groups) from its ``tasks`` (by member key)."""


def _node(children: dict[str, RollupNode]) -> RollupNode:
    values = [c["value"] for c in children.values() if c["value"] is not None]
    value = float(np.mean(values)) if values else None
    boots = [c.get("bootstrap") for c in children.values()]
    entry: RollupNode = {"value": value, "stderr": None, "children": children}
    if boots and all(b is not None for b in boots) and len({len(b) for b in boots if b is not None}) == 1:
        vector = np.mean(np.asarray(boots, dtype=float), axis=0)
        entry["bootstrap"] = vector.tolist()
        entry["value"] = float(vector.mean())
        entry["stderr"] = bootstrap_stderr(vector)
    else:
        entry["stderr"] = pooled_stderr([c["stderr"] for c in children.values()])
    return entry


def rollup(task_results: dict[str, TaskEntry], rules: Iterable[RollupRule] | None = None) -> RollupNode | None:
    """The hierarchy over every task result holding a ``rollup`` entry; None when there is none.
    ``rules``: the roll-up rules to apply (default: those registered by plug-ins)."""
    if rules is None:
        from proctor.core.registry import registry

        rules = registry().rollup_rules
    rules = list(rules)
    members = {name: r for name, r in task_results.items() if r.get("rollup")}
    if not members:
        return None
    level_names = list(next(iter(members.values()))["rollup"]["levels"])
    # group leaves: path (level values) + group name -> tasks
    groups: dict[LevelPath, list[str]] = {}
    for name, result in members.items():
        spec = result["rollup"]
        path = tuple(spec["levels"].get(level, "?") for level in level_names)
        groups.setdefault(path + (spec.get("group") or name,), []).append(name)
    tree: RollupNode = {}
    for key, names in groups.items():
        leaves: dict[str, RollupNode] = {}
        for name in names:
            spec = members[name]["rollup"]
            entry = members[name]["metrics"].get(spec["metric"]) or {}
            leaves[name] = {
                "value": entry.get("value"),
                "stderr": entry.get("stderr"),
                "n_samples": members[name]["n_samples"],
                "metric": spec["metric"],
                **({"bootstrap": entry["bootstrap"]} if entry.get("bootstrap") else {}),
            }
        micro = members[names[0]]["rollup"].get("group_type") == "micro"
        if micro and all(leaf["value"] is not None for leaf in leaves.values()):
            total = sum(leaf["n_samples"] for leaf in leaves.values()) or 1
            group = _node(leaves)
            group["value"] = sum(leaf["value"] * leaf["n_samples"] for leaf in leaves.values()) / total
            group["type"] = "micro"
        else:
            group = _node(leaves)
            group["type"] = "macro"
        node = tree
        for part in key[:-1]:
            node = node.setdefault(part, {})
        node[key[-1]] = group

    special = _rule_members(members, level_names, rules)

    def build(node: RollupNode, depth: int, path: LevelPath = ()) -> RollupNode:
        if depth == len(level_names):
            entry = _node(node)  # node: group name -> group entry
            for index, rule in enumerate(rules):
                if (index, path) in special:
                    rule.apply(entry, special[(index, path)])
            return entry
        return _node({k: build(v, depth + 1, path + (k,)) for k, v in node.items()})

    top = build(tree, 0)
    top["levels"] = level_names + ["group", "task"]
    return top


def _rule_members(
    members: dict[str, TaskEntry], level_names: list[str], rules: list[RollupRule]
) -> dict[tuple[int, LevelPath], dict[str, TaskEntry]]:
    """Per (rule index, level path), the task results each rule takes there, by the rule's member key."""
    out: dict[tuple[int, LevelPath], dict[str, TaskEntry]] = {}
    for index, rule in enumerate(rules):
        for name, result in members.items():
            key = rule.member_key(name, result, level_names)
            if key is None:
                continue
            path = tuple(result["rollup"]["levels"].get(level, "?") for level in level_names)
            out.setdefault((index, path), {})[key] = result
    return out


def flatten(node: RollupNode, depth: int = 0, name: str = "overall") -> list[tuple[int, str, RollupNode]]:
    """(depth, name, entry) rows, parents before children, for printing."""
    rows = [(depth, name, node)]
    for child, entry in (node.get("children") or {}).items():
        if "children" in entry:
            rows += flatten(entry, depth + 1, child)
        else:
            rows.append((depth + 1, child, entry))
    return rows
