"""Finding lm-eval tasks and groups: by name in the installed catalogue (plus folders the user
names), or by file. Resolving one gives its leaf tasks, each with its merged config and the groups
(with ``aggregate_metric_list``) above it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from proctor.core.errors import TaskDefinitionError
from proctor.core.home import proctor_home
from proctor.core.names import close_names
from proctor.core.task import GroupAggregate
from proctor.dialects.lmeval import library
from proctor.dialects.lmeval.task_config import TaskConfig

if TYPE_CHECKING:
    from lm_eval.config.group import AggMetricConfig
    from lm_eval.tasks import TaskManager
    from lm_eval.tasks._index import Entry

log = logging.getLogger(__name__)

_MANAGERS: dict[tuple[tuple[str, ...], bool], TaskManager] = {}


@dataclass
class Leaf:
    """One lm-eval task to run: its merged config and where it came from."""

    name: str
    config: TaskConfig
    source: Path | None
    groups: list[tuple[str, bool]] = field(default_factory=list)  # (group, weight_by_size), innermost first
    # group -> the metrics its aggregate_metric_list names (lm-eval averages those only): the audit's
    # group.metric-not-shared reads them (core/task.GROUP_METRICS)
    group_metrics: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # group -> its aggregate_metric_list as lm-eval read it (defaults filled in: weight_by_size true), which the
    # group's score follows entry by entry (core/task.GROUP_AGGREGATION)
    aggregation: dict[str, tuple[GroupAggregate, ...]] = field(default_factory=dict)


def manager(include: Iterable[str | Path] = (), defaults: bool = True) -> TaskManager:
    """A cached ``TaskManager`` over the installed catalogue (``defaults``) and ``include`` folders."""
    library.lm_eval()
    key = (tuple(str(Path(p).resolve()) for p in include), defaults)
    if key not in _MANAGERS:
        from lm_eval.tasks import TaskManager

        paths = [Path(p) for p in key[0]]
        _MANAGERS[key] = TaskManager(include_path=paths or None, include_defaults=defaults)
    return _MANAGERS[key]


def _index_file() -> Path:
    return proctor_home() / f"lm_eval-{library.lm_eval().__version__}-index.json"


def folder_of(name: str) -> Path | None:
    """The catalogue folder defining ``name``, from a name -> file index cached under PROCTOR_HOME
    (building lm-eval's full index reads ~10,000 YAML files; a task's own folder is read in a blink)."""
    import json
    import os

    file = _index_file()
    root = library.catalogue_root()
    index: dict[str, str] | None = None
    if file.is_file():
        try:
            saved = json.loads(file.read_text())
            index = saved["names"] if saved.get("root") == str(root) else None
        except (ValueError, KeyError):
            index = None
    if index is None:
        tm = manager()
        index = {n: str(e.yaml_path.parent) for n, e in tm.task_index.items() if e.yaml_path is not None}
        for n, e in tm.task_index.items():  # a tag lives where its tasks do, when they share a folder
            if e.yaml_path is None and e.tags:
                folders = {index.get(t) for t in e.tags}
                shared = folders.pop() if len(folders) == 1 else None
                if shared is not None:
                    index[n] = shared
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            tmp = file.with_name(f"{file.name}.{os.getpid()}.tmp")  # its own: two processes may build at once
            tmp.write_text(json.dumps({"root": str(root), "names": index}))
            tmp.replace(file)
        except OSError:
            pass
    folder = index.get(name)
    return Path(folder) if folder else None


def entry_kind(entry: Entry) -> str:
    return entry.kind.name.lower()  # task, py_task, group, tag


def output_type(entry: Entry) -> str:
    cfg = entry.cfg or {}
    if entry_kind(entry) == "group":
        return "group"
    if entry_kind(entry) == "tag":
        return "tag"
    return str(cfg.get("output_type") or "generate_until")


def unknown_name(name: str, tm: TaskManager, where: str) -> TaskDefinitionError:
    close = close_names(name, tm.all_tasks, 5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return TaskDefinitionError(f"no lm-eval task, group or tag named '{name}' in {where}{hint}", field="task")


def _check_supported(config: TaskConfig, source: Path | None, name: str) -> None:
    if not isinstance(config.get("task"), str):  # a list without 'group:' would be one task named "['a', 'b']"
        raise TaskDefinitionError(
            f"a task's 'task' is its name, got {type(config.get('task')).__name__} {config.get('task')!r:.60} "
            "(a group lists its tasks under 'task' beside 'group: NAME')",
            file=source,
            field="task",
        )
    if "class" in config:
        raise TaskDefinitionError(
            f"task '{name}' is a Python task class ('class:'), which proctor does not run; "
            "only YAML tasks are supported",
            file=source,
            field="class",
        )
    for key in ("doc_to_image", "doc_to_audio"):
        if config.get(key):
            raise TaskDefinitionError(
                f"task '{name}': '{key}' (multimodal input) is not supported", file=source, field=key
            )
    if config.get("use_prompt"):
        raise TaskDefinitionError(
            f"task '{name}': 'use_prompt' (promptsource) is not supported", file=source, field="use_prompt"
        )
    repeats = config.get("repeats", 1)
    if repeats not in (None, 1) and config.get("output_type") != "generate_until":
        raise TaskDefinitionError(
            f"task '{name}': 'repeats' is only supported for generate_until", file=source, field="repeats"
        )


def _walk(
    node: object,
    above: list[tuple[str, bool]],
    out: list[Leaf],
    spec: str = "",
    aggregated: dict[str, tuple[str, ...]] | None = None,
    rules: dict[str, tuple[GroupAggregate, ...]] | None = None,
) -> None:
    from lm_eval.api.group import Group

    aggregated = aggregated or {}
    rules = rules or {}
    if isinstance(node, Group):
        groups = above
        if node.aggregate_metric_list:
            weighted = all(bool(a.weight_by_size) for a in node.aggregate_metric_list)
            groups = [(str(node.name), weighted), *above]
            named = tuple(dict.fromkeys(str(a.metric) for a in node.aggregate_metric_list))
            aggregated = {**aggregated, str(node.name): named}
            rules = {**rules, str(node.name): tuple(_aggregate(a) for a in node.aggregate_metric_list)}
        for child in node:
            _walk(child, groups, out, spec, aggregated, rules)
        return
    captured = getattr(node, "captured", None)
    if captured is None:  # lm-eval built a task file's own class ('class: !function ...') instead of a YAML task
        file = spec if Path(spec).suffix in (".yaml", ".yml") else None
        raise TaskDefinitionError(
            "a task here is a Python task class ('class: !function ...', "
            f"{type(node).__module__}.{type(node).__qualname__}), "
            "which proctor does not run; only YAML tasks are supported",
            file=file,
            field="class",
        )
    config = captured.config
    source_text = (config.get("metadata") or {}).get("config_source")
    source = Path(source_text) if source_text and source_text != "inline" else None
    if source is not None and not any(config.get(k) for k in ("dataset_path", "custom_dataset")):
        raise TaskDefinitionError(
            f"task '{captured.task_name}': 'dataset_path' is missing: it names the dataset lm-eval loads "
            "(a hub id, or json / csv with dataset_kwargs.data_files)",
            file=source,
            field="dataset_path",
        )
    if not any(config.get(k) for k in ("dataset_path", "custom_dataset", "dataset_kwargs")):
        member = captured.task_name.rsplit("::", 1)[-1]  # lm-eval names an inline member 'group::name'
        raise TaskDefinitionError(
            f"task '{member}' is defined nowhere lm-eval looks (no task file declares it, and an inline entry "
            "gives no dataset_path): a typo in a group's task list?",
            file=source or (Path(spec) if spec else None),
            field="task",
        )
    _check_supported(config, source, captured.task_name)
    out.append(Leaf(captured.task_name, config, source, list(above), dict(aggregated), dict(rules)))


def _aggregate(entry: AggMetricConfig) -> GroupAggregate:
    """One ``aggregate_metric_list`` entry (lm-eval's AggMetricConfig: a bare filter string already made a list,
    weight_by_size true unless the file says false)."""
    filters = entry.filter_list
    return GroupAggregate(
        str(entry.metric), None if filters is None else tuple(str(f) for f in filters), bool(entry.weight_by_size)
    )


def _file_of(spec: str | Path, tm: TaskManager) -> str | None:
    """The YAML file a name or path stands for (None for a catalogue name without one)."""
    if Path(str(spec)).suffix in (".yaml", ".yml"):
        return str(spec)
    entry = tm.task_index.get(str(spec))
    return str(entry.yaml_path) if entry is not None and entry.yaml_path is not None else None


def resolve(spec: str | Path, tm: TaskManager, trusted: bool, where: str) -> list[Leaf]:
    """The leaf tasks of a name or YAML file (groups expanded, tags expanded)."""
    with library.consent(trusted), library.capturing():
        try:
            built = tm._load_spec(str(spec))
        except TaskDefinitionError:
            raise
        except KeyError as exc:
            name = str(spec)
            if Path(name).suffix in (".yaml", ".yml"):
                raise TaskDefinitionError(f"a group member is unknown: {exc.args[0]}", file=name) from None
            missing = exc.args[0] if exc.args else name
            if missing == name or "not a registered" in str(missing):
                raise unknown_name(name, tm, where) from None
            raise TaskDefinitionError(f"'{name}' refers to an unknown task or group: {missing}", field="task") from None
        except RecursionError:
            raise TaskDefinitionError(
                f"'{spec}' never ends: a group lists itself among its tasks, directly or through another group",
                file=_file_of(spec, tm),
                field="task",
            ) from None
        except SyntaxError as exc:  # a '!function' module that does not compile
            raise TaskDefinitionError(
                f"{exc.msg}: the Python that a '!function' in {_file_of(spec, tm) or spec} imports does not compile",
                file=exc.filename,
                line=exc.lineno,
                field="!function",
            ) from None
        except Exception as exc:  # lm-eval's own validation (TaskConfig fields, bad includes, ...)
            raise TaskDefinitionError(
                f"lm-eval cannot load '{spec}': {type(exc).__name__}: {exc}", file=_file_of(spec, tm), field="task"
            ) from None
    leaves: list[Leaf] = []
    for node in built if isinstance(built, list) else [built]:
        _walk(node, [], leaves, _file_of(spec, tm) or str(spec))
    return leaves


def group_members(index: dict[str, Entry]) -> set[str]:
    """Names listed as members of a group in ``index`` (tasks run through that group)."""
    members: set[str] = set()
    for entry in index.values():
        if entry_kind(entry) != "group":
            continue
        for item in (entry.cfg or {}).get("task") or []:
            if isinstance(item, str):
                members.add(item)
            elif isinstance(item, dict):
                members.add(str(item.get("task") or item.get("group")))
    return members


def listing(include: Iterable[str | Path] = ()) -> list[tuple[str, str, str]]:
    """(name, output type or group/tag, file) for every catalogue entry."""
    tm = manager(include)
    rows = []
    for name in tm.all_tasks:
        entry = tm.task_index[name]
        rows.append((name, output_type(entry), str(entry.yaml_path or "")))
    return rows
