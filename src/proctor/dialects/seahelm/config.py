"""Load SEA-HELM task configs: every ``config.yaml`` below ``seahelm_tasks/`` merged, ``${task.field}``
interpolation resolved across files (as SEA-HELM does with OmegaConf), file paths resolved."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from proctor.core.errors import TaskDefinitionError
from proctor.core.yaml_bounds import safe_load
from proctor.core.yaml_lines import read_text, yaml_error
from proctor.dialects.seahelm.claims import TASKS_FOLDER, tasks_root

_INTERP = re.compile(r"\$\{([^${}]+)\}")
_ROOT_FILES = ("constants.yaml", "task_config.yaml", "reasoning_generation_config.yaml")


@dataclass
class ConfigTree:
    root: Path  # the repository root (holds seahelm_tasks/)
    tasks: dict[str, dict]  # task id -> resolved config
    files: dict[str, Path]  # task id -> config.yaml defining it
    constants: dict = field(default_factory=dict)
    reasoning: dict = field(default_factory=dict)
    task_sets: dict = field(default_factory=dict)  # task_config.yaml: set name -> {lang: [task ids] | "all"}


def _read(path: Path) -> Any:
    text = read_text(path)
    try:
        return safe_load(text)
    except yaml.YAMLError as exc:
        raise yaml_error(exc, path, text) from None


def _lookup(merged: dict, dotted: str, file: Path, stack: tuple[str, ...]) -> object:
    if dotted in stack:
        raise TaskDefinitionError(f"circular interpolation: {' -> '.join(stack + (dotted,))}", file=file)
    node: object = merged
    for part in dotted.strip().split("."):
        if not isinstance(node, dict) or part not in node:
            raise TaskDefinitionError(
                f"interpolation '${{{dotted}}}' names nothing in the merged SEA-HELM configs", file=file
            )
        node = node[part]
    return _resolve(copy.deepcopy(node), merged, file, stack + (dotted,))


def _resolve(value: object, merged: dict, file: Path, stack: tuple[str, ...] = ()) -> object:
    if isinstance(value, dict):
        return {k: _resolve(v, merged, file, stack) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, merged, file, stack) for v in value]
    if isinstance(value, str) and "${" in value:
        whole = _INTERP.fullmatch(value.strip())
        if whole:
            return _lookup(merged, whole.group(1), file, stack)
        return _INTERP.sub(lambda m: str(_lookup(merged, m.group(1), file, stack)), value)
    return value


_CACHE: dict[tuple, ConfigTree] = {}


def load_tree(start: Path) -> ConfigTree:
    """All task configs of the tree containing ``start`` (a config.yaml or a folder); a config outside
    any ``seahelm_tasks`` folder is read alone."""
    start = start.resolve()
    troot = tasks_root(start)
    files = (
        sorted(troot.rglob("config.yaml"))
        if troot is not None
        else [start if start.is_file() else start / "config.yaml"]
    )
    extra = [troot / "task_config.yaml"] if troot is not None and (troot / "task_config.yaml").is_file() else []
    key = tuple((str(f), f.stat().st_mtime_ns) for f in files + extra)
    if key in _CACHE:
        return _CACHE[key]
    merged: dict[str, object] = {}  # task id -> its config as written
    owners: dict[str, Path] = {}
    for file in files:
        document = _read(file)
        if document is None:
            continue
        if not isinstance(document, dict):
            raise TaskDefinitionError("a SEA-HELM config.yaml maps task ids to task configs", file=file)
        for task_id, cfg in document.items():
            if task_id in owners:
                raise TaskDefinitionError(
                    f"task '{task_id}' is also defined in {owners[task_id]}", file=file, field=str(task_id)
                )
            merged[task_id] = cfg
            owners[task_id] = file
    tasks = {}
    for task_id, cfg in merged.items():
        resolved = _resolve(cfg, merged, owners[task_id])
        if not isinstance(resolved, dict):
            raise TaskDefinitionError("a task config must be a mapping", file=owners[task_id], field=str(task_id))
        tasks[task_id] = resolved
    root = troot.parent if troot is not None else files[0].parent
    constants: dict[str, object] = {}  # the YAML files' mappings
    reasoning: dict[str, object] = {}
    task_sets: dict[str, object] = {}
    if troot is not None:
        if (troot / "task_config.yaml").is_file():
            task_sets = _read(troot / "task_config.yaml") or {}
            if not isinstance(task_sets, dict):
                raise TaskDefinitionError(
                    "task_config.yaml maps task-set names to {language: [task ids]}", file=troot / "task_config.yaml"
                )
        if (troot / "constants.yaml").is_file():
            constants = _read(troot / "constants.yaml") or {}
        if (troot / "reasoning_generation_config.yaml").is_file():
            reasoning = (_read(troot / "reasoning_generation_config.yaml") or {}).get("reasoning_generation_kwargs", {})
    tree = ConfigTree(root, tasks, owners, constants, reasoning, task_sets)
    _CACHE[key] = tree
    return tree


def resolve_file(reference: str, root: Path, config_file: Path, code_field: str | None = None) -> Path | None:
    """A task-folder path: relative to SEA-HELM's repository root, else to the config's folder. Code
    (``code_field`` given: ``dataloader_file``, ...) must lie in the repository root, symlinks followed;
    data files are checked against the run's data roots when the task is prepared (``task.py``)."""
    from proctor.data.paths import check_inside

    path = Path(reference).expanduser()
    candidates = [path] if path.is_absolute() else [root / path, config_file.parent / path]
    for candidate in candidates:
        if candidate.exists():
            if code_field is None:
                return candidate
            return check_inside(candidate, (root,), written=reference, file=config_file, field=code_field)
    return None


def looks_like_hub_id(reference: str) -> bool:
    """``owner/name`` without a file suffix: a Hugging Face dataset id."""
    return bool(re.fullmatch(r"[\w.-]+/[\w.-]+", reference)) and not re.search(
        r"\.(jsonl?|csv|tsv|parquet|arrow)$", reference
    )


DEFAULT_TASK_SET = "seahelm"  # what SEA-HELM's run_evaluation.sh passes as --tasks


def task_selection(tree: ConfigTree, names: str | list[str] | None) -> tuple[dict[str, set[str]] | None, str]:
    """({lang: task ids} to run, or None for every task; a label for messages), as SeaHelmEvaluation reads
    task_config.yaml: several sets are merged, ``"all"`` for a language is every task defined for it, and an
    ``aggregation_group`` name stands for the tasks of that group. No ``names``: SEA-HELM's default set when
    the tree's task_config.yaml defines it, else every task; ``all``: every task."""
    if isinstance(names, str):
        names = [names]
    names = [n.strip() for item in names or [] for n in str(item).split(",") if n.strip()]
    if not names:
        if DEFAULT_TASK_SET not in tree.task_sets:
            return None, "every task"
        names = [DEFAULT_TASK_SET]
    if "all" in names:
        return None, "every task"
    source = tree.root / TASKS_FOLDER / "task_config.yaml"
    by_lang: dict[str, list[str]] = {}
    aliases: dict[str, list[str]] = {}
    for task_id, cfg in tree.tasks.items():
        for lang in cfg.get("languages") or {}:
            by_lang.setdefault(str(lang), []).append(task_id)
        if cfg.get("aggregation_group"):
            aliases.setdefault(str(cfg["aggregation_group"]), []).append(task_id)
    selection: dict[str, set[str]] = {}
    for name in names:
        chosen = tree.task_sets.get(name)
        if not isinstance(chosen, dict):
            known = ", ".join(k for k, v in tree.task_sets.items() if isinstance(v, dict)) or "none"
            raise TaskDefinitionError(
                f"unknown SEA-HELM task set '{name}' (task_config.yaml defines: {known}; 'all' runs every task)",
                file=source if tree.task_sets else None,
                field=name,
            )
        for lang, entries in chosen.items():
            lang = str(lang)
            if isinstance(entries, str):
                if entries != "all":
                    raise TaskDefinitionError(
                        f"a task list or 'all' expected, got '{entries}'", file=source, field=f"{name}.{lang}"
                    )
                ids = list(by_lang.get(lang, []))
            else:
                ids = []
                for entry in entries or []:
                    ids += aliases.get(str(entry), [str(entry)])
            selection.setdefault(lang, set()).update(ids)
    return selection, "task set " + "+".join(f"'{n}'" for n in names)
