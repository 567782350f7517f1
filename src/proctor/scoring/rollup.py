"""Score hierarchies: tasks -> group (macro/micro) -> levels (e.g. competency, language) -> overall.

Each task with a ``rollup`` entry contributes its ``metric``. When the task's metric carries per-
bootstrap values (several seeded runs), the bootstrap vectors are averaged level by level and each
level's standard error is sqrt(var(bootstrap means) / B); otherwise the stderr combines the children's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from proctor.scoring.stats import bootstrap_stderr, pooled_stderr


def _node(children: dict[str, dict]) -> dict:
    values = [c["value"] for c in children.values() if c["value"] is not None]
    value = float(np.mean(values)) if values else None
    boots = [c.get("bootstrap") for c in children.values()]
    entry: dict[str, Any] = {"value": value, "stderr": None, "children": children}
    if boots and all(b is not None for b in boots) and len({len(b) for b in boots}) == 1:
        vector = np.mean(np.asarray(boots, dtype=float), axis=0)
        entry["bootstrap"] = vector.tolist()
        entry["value"] = float(vector.mean())
        entry["stderr"] = bootstrap_stderr(vector)
    else:
        entry["stderr"] = pooled_stderr([c["stderr"] for c in children.values()])
    return entry


def rollup(task_results: dict[str, dict]) -> dict | None:
    """The hierarchy over every task result holding a ``rollup`` entry; None when there is none."""
    members = {name: r for name, r in task_results.items() if r.get("rollup")}
    if not members:
        return None
    level_names = list(next(iter(members.values()))["rollup"]["levels"])
    # group leaves: path (level values) + group name -> tasks
    groups: dict[tuple, list[str]] = {}
    for name, result in members.items():
        spec = result["rollup"]
        path = tuple(spec["levels"].get(level, "?") for level in level_names)
        groups.setdefault(path + (spec.get("group") or name,), []).append(name)
    tree: dict = {}
    for key, names in groups.items():
        leaves = {}
        for name in names:
            spec = members[name]["rollup"]
            entry = members[name]["metrics"].get(spec["metric"]) or {}
            leaves[name] = {"value": entry.get("value"), "stderr": entry.get("stderr"), "n_samples": members[name]["n_samples"],
                            "metric": spec["metric"], **({"bootstrap": entry["bootstrap"]} if entry.get("bootstrap") else {})}
        micro = members[names[0]]["rollup"].get("group_type") == "micro"
        if micro and all(l["value"] is not None for l in leaves.values()):
            total = sum(l["n_samples"] for l in leaves.values()) or 1
            group = _node(leaves)
            group["value"] = sum(l["value"] * l["n_samples"] for l in leaves.values()) / total
            group["type"] = "micro"
        else:
            group = _node(leaves)
            group["type"] = "macro"
        node = tree
        for part in key[:-1]:
            node = node.setdefault(part, {})
        node[key[-1]] = group

    special = _special_paths(members, level_names)

    def build(node: dict, depth: int, path: tuple = ()) -> dict:
        if depth == len(level_names):
            entry = _node(node)  # node: group name -> group entry
            if path in special:
                _apply_lindsea(entry, special[path])
            return entry
        return _node({k: build(v, depth + 1, path + (k,)) for k, v in node.items()})

    top = build(tree, 0)
    top["levels"] = level_names + ["group", "task"]
    return top


def _special_paths(members: dict[str, dict], level_names: list[str]) -> dict[tuple, dict[str, dict]]:
    """SEA-HELM's linguistic-diagnostics tasks, per level path, by SEA-HELM task id (the result name
    is ``<task id>/<lang>``): their competency score is LINDSEA's, not the mean of the groups."""
    from proctor.dialects.seahelm.lindsea import COMPETENCY

    if "competency" not in level_names:
        return {}
    out: dict[tuple, dict[str, dict]] = {}
    for name, result in members.items():
        spec = result["rollup"]
        if result.get("dialect", "seahelm") != "seahelm" or spec["levels"].get("competency") != COMPETENCY:
            continue
        path = tuple(spec["levels"].get(level, "?") for level in level_names)
        out.setdefault(path, {})[name.rsplit("/", 1)[0]] = result
    return out


def _apply_lindsea(entry: dict, tasks: dict[str, dict]) -> None:
    from proctor.dialects.seahelm.lindsea import lindsea

    scored = lindsea(tasks)
    entry["value"] = scored["value"]
    entry["stderr"] = None
    entry.pop("bootstrap", None)
    entry["aggregation"] = "lindsea"
    entry["lindsea"] = {"categories": scored["categories"]}
    if scored["notes"]:
        entry["notes"] = scored["notes"]
    # the pragmatics groups show the pooled score rather than the mean of their tasks' (absent) metric
    for group, child in entry["children"].items():
        category = scored["categories"].get(group)
        if category is not None and "children" in child:
            child["value"], child["stderr"] = category["value"], None
            child.pop("bootstrap", None)


def flatten(node: dict, depth: int = 0, name: str = "overall") -> list[tuple[int, str, dict]]:
    """(depth, name, entry) rows, parents before children, for printing."""
    rows = [(depth, name, node)]
    for child, entry in (node.get("children") or {}).items():
        if "children" in entry:
            rows += flatten(entry, depth + 1, child)
        else:
            rows.append((depth + 1, child, entry))
    return rows
