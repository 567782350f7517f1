"""lm-evaluation-harness task files, unmodified: the installed catalogue by name, or YAML files and
folders (see docs/lmeval.md).

- ``lm_eval:NAME`` names a task, group or tag in the installed ``lm_eval`` package (the ``lmeval``
  extra) and in any ``--lmeval-include DIR`` folders;
- a YAML file with a ``task`` or ``group`` key (and no native ``kind`` / ``tasks``) is an lm-eval
  task file; in a folder, a task or group that a group file of the same folder lists runs through
  that group only.

Options (``LmEvalOptions``; API: ``dialect_options``): ``lmeval_include`` (folders), ``lmeval_data`` ({KEY: PATH}, see
``data_map``), ``lmeval_data_file`` (a mapping file), ``trust_task_code`` (``!function`` code beside
task files outside the installed catalogue), ``lmeval_bootstrap_iters`` (lm-eval's
``bootstrap_iters`` for standard errors; default 100000, 0: none, as lm-eval), ``lmeval_metadata`` (lm-eval's
``--metadata``: merged into every task config's ``metadata``, so into its digest).
"""

from __future__ import annotations

import logging
from pathlib import Path

from proctor.core.errors import TaskDefinitionError
from proctor.core.task import Task
from proctor.dialects.lmeval.claims import PREFIX, claims_name, peek
from proctor.dialects.lmeval.options import LmEvalOptions

log = logging.getLogger(__name__)


DATA_FILE_VARIABLE = "PROCTOR_LMEVAL_DATA"


def _mapping(options: LmEvalOptions) -> dict[str, str]:
    """The data mapping: what ``PROCTOR_LMEVAL_DATA`` names (set once, e.g. in a shell profile: a mapping file,
    or a folder of copies as the key ``*``), then ``--lmeval-data-file``, then ``--lmeval-data`` keys, each
    overriding the same key before it."""
    import os

    from proctor.dialects.lmeval import data_map

    mapping: dict[str, str] = {}
    standing = os.environ.get(DATA_FILE_VARIABLE)
    if standing:
        where = Path(standing).expanduser()
        if where.is_dir():  # a folder of copies, one per dataset (data_map.under_root)
            mapping[data_map.ANY] = str(where.resolve())
        elif where.is_file():
            mapping.update(data_map.read_mapping_file(where))
        else:
            raise TaskDefinitionError(
                f"{DATA_FILE_VARIABLE} names neither a data mapping file nor a folder of copies: it does not exist",
                file=standing,
            )
    if options.lmeval_data_file:
        mapping.update(data_map.read_mapping_file(options.lmeval_data_file))
    for key, value in (options.lmeval_data or {}).items():
        try:
            data_map.parse_key(str(key))
        except ValueError as exc:
            raise TaskDefinitionError(f"--lmeval-data: {exc}") from None
        mapping[str(key)] = str(Path(value).expanduser().resolve())
    return mapping


def _recorded(options: LmEvalOptions) -> dict[str, int]:
    """Dialect options that change a task's results (they enter its spec, hence its hash)."""
    iters = options.lmeval_bootstrap_iters  # a count >= 0, checked by LmEvalOptions
    return {} if iters is None else {"bootstrap_iters": iters}


def _with_metadata(leaves: list, options: LmEvalOptions) -> list:
    """lm-eval's ``--metadata``: each config's ``metadata`` | the given object (TaskFactory's merge); copies, as
    the catalogue's leaves are cached."""
    import dataclasses

    extra = options.lmeval_metadata
    if not extra:
        return leaves
    return [
        dataclasses.replace(leaf, config={**leaf.config, "metadata": {**(leaf.config.get("metadata") or {}), **extra}})
        for leaf in leaves
    ]


def _include(options: LmEvalOptions) -> list[Path]:
    folders = [Path(p).expanduser() for p in options.lmeval_include or []]
    for folder in folders:
        if not folder.is_dir():
            raise TaskDefinitionError("--lmeval-include: no such folder", file=folder)
    return folders


def load_named(text: str, options: LmEvalOptions | None = None) -> list[Task]:
    """``lm_eval:NAME`` -> the task, or a group's / tag's tasks."""
    from proctor.dialects.lmeval import catalogue, specs

    options = options or LmEvalOptions()
    name = str(text)[len(PREFIX) :]
    include = _include(options)
    where = "the lm_eval catalogue" + (f" and {', '.join(map(str, include))}" if include else "")
    trusted = options.trust_task_code
    leaves = None
    folder = None if include else catalogue.folder_of(name)
    if folder is not None:  # its own catalogue folder first: fast; anything it lacks -> the full index
        small = catalogue.manager([folder], defaults=False)
        if name in small.task_index:
            try:
                leaves = catalogue.resolve(name, small, trusted, where)
            except TaskDefinitionError as exc:
                if "unknown" not in str(exc) and "no lm-eval task" not in str(exc):
                    raise
    if leaves is None:
        tm = catalogue.manager(include)
        if name not in tm.task_index:
            raise catalogue.unknown_name(name, tm, where)
        leaves = catalogue.resolve(name, tm, trusted, where)
    mapping = _mapping(options)
    return [
        specs.to_task(leaf, mapping, f"{PREFIX}{name}", _recorded(options)) for leaf in _with_metadata(leaves, options)
    ]


def load(path: Path, explicit: bool, options: LmEvalOptions | None = None) -> list[Task]:
    """An lm-eval task or group file (groups expand to their tasks)."""
    from proctor.dialects.lmeval import catalogue, library, specs

    options = options or LmEvalOptions()
    library.lm_eval()  # an install hint where lm-eval is missing, before anything of it is imported
    from lm_eval.tasks._index import TaskIndex

    document = peek(path)
    own = str(document.get("group") or document.get("task"))
    folder = path.parent.resolve()
    local = TaskIndex.build([folder])
    if not explicit and own in catalogue.group_members(local):
        log.debug("%s: '%s' runs through a group of its folder", path, own)
        return []
    include = [folder, *_include(options)]
    members = [m for m in _referenced(document) if m not in local]
    tm = catalogue.manager(include, defaults=bool(members) or bool(options.lmeval_include))
    entry = tm.task_index.get(own)
    # by name when the index holds this very file (lm-eval names a group loaded by path after its task list)
    spec: str | Path = (
        own
        if entry is not None and entry.yaml_path is not None and Path(entry.yaml_path).resolve() == path.resolve()
        else path.resolve()
    )
    leaves = catalogue.resolve(spec, tm, options.trust_task_code, str(folder))
    mapping = _mapping(options)
    return [specs.to_task(leaf, mapping, str(path), _recorded(options)) for leaf in _with_metadata(leaves, options)]


def _referenced(document: dict) -> list[str]:
    """Names a group file lists (which may live in the installed catalogue)."""
    items = document.get("task")
    if not isinstance(items, list):
        return []
    return [
        str(i if isinstance(i, str) else i.get("task") or i.get("group")) for i in items if isinstance(i, (str, dict))
    ]


def catalogue_rows(queries: list[str], include: list[str] | None = None) -> list[tuple[str, str, str]]:
    """(name, output type / group / tag, file) of the catalogue entries matching the queries."""
    import fnmatch

    from proctor.dialects.lmeval import listing_cache

    patterns = [q[len(PREFIX) :] or "*" for q in queries if claims_name(q)]
    folders = include or []
    for folder in folders:
        if not Path(folder).expanduser().is_dir():
            raise TaskDefinitionError("--lmeval-include: no such folder", file=folder)

    def build() -> list[tuple[str, str, str]]:
        from proctor.dialects.lmeval import catalogue

        return catalogue.listing(folders)

    rows = listing_cache.cached_listing(folders, build)
    return [row for row in rows if any(fnmatch.fnmatchcase(row[0], p) for p in patterns)]
