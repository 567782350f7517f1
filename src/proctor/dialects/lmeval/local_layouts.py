"""Which files of a mapped folder hold which split of a dataset config, for the layouts copies come in.

A folder mapped to a dataset id (``--lmeval-data ID=FOLDER``) may be:

- a hub snapshot (``huggingface-cli download --repo-type dataset``, ``snapshot_download``): its
  ``README.md`` card lists each config's files per split (``configs: [{config_name, data_files}]``),
  read as the hub reads it; without a card, config subfolders (``ARC-Easy/test-00000-of-00001.parquet``,
  ``data/ARC-Easy/...``) or a ``data/`` folder;
- a ``save_to_disk`` folder (``dataset_dict.json``: a ``DatasetDict``; ``state.json``: one ``Dataset``);
- a datasets cache folder (``<config>/<version>/<hash>/<builder>-<split>.arrow``);
- a folder of ``<split>.jsonl|json|parquet|csv|arrow`` files (``.jsonl.gz`` too).

A file's split is its name's last ``-`` part, shard numbers (``-00000-of-00003``) and a hash after them
dropped (``ai2_arc-test.arrow``, ``test-00000-of-00001.parquet``); a file named only by a number
(``0000.parquet``, the hub's parquet conversion) or ``data-…`` (a save_to_disk shard) takes its folder's
name. Split names are ``\\w+(\\.\\w+)*`` (the datasets library's rule), so a ``-`` never belongs to one.
The shards of one split are read in order, all of them (a missing shard is an error). Two different
sources for one split, or a config not found, is an error naming the folder, what was found there and
the mapping key that settles it; it is raised when that split is read, so a layout holding more than a
task needs still serves it.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA_SUFFIXES = (".jsonl.gz", ".json.gz", ".parquet", ".arrow", ".jsonl", ".json", ".csv")
_NOT_DATA = {"dataset_info.json", "dataset_infos.json", "state.json", "dataset_dict.json"}
_SHARD = re.compile(r"^(?P<base>.+?)-(?P<index>\d{5})-of-(?P<count>\d{5})(?:-[0-9a-f]{6,})?$")
_SPLIT_NAME = re.compile(r"\w+(\.\w+)*")


@dataclass(frozen=True)
class SplitSource:
    """Where one split is read from: ``files`` (read in this order) or a ``save_to_disk`` folder
    (``paths[0]``; ``member``: the split's name inside a ``DatasetDict``, None for one ``Dataset``);
    ``error``: why it cannot be read (an ambiguity, a missing shard), raised when the split is read."""

    split: str
    paths: tuple[Path, ...]
    form: str = "files"  # or "save_to_disk"
    member: str | None = None
    error: str | None = None


@dataclass
class Located:
    """A mapped folder's splits for one config; ``problem``: why none could be told (a config not found)."""

    folder: Path
    splits: dict[str, SplitSource] = field(default_factory=dict)
    problem: str | None = None


def data_suffix(path: Path) -> str | None:
    name = path.name.lower()
    return next((s for s in DATA_SUFFIXES if name.endswith(s)), None)


def _is_data(path: Path) -> bool:
    return (
        path.is_file()
        and data_suffix(path) is not None
        and path.name not in _NOT_DATA
        and not path.name.startswith((".", "cache-"))
    )


def _shown(paths: Any, folder: Path) -> str:
    names = []
    for path in paths:
        try:
            names.append(str(Path(path).relative_to(folder)))
        except ValueError:
            names.append(str(path))
    return ", ".join(names[:6]) + (f", ... ({len(names)} in all)" if len(names) > 6 else "")


def _key(dataset: str, config: str | None, split: str = "") -> str:
    return f"{dataset}:{config or ''}:{split}" if split else f"{dataset}:{config}" if config else dataset


# ---------------------------------------------------------------- a dataset card's configs (hub snapshots)
def card_configs(folder: Path) -> list[dict[str, Any]] | None:
    """The ``configs`` a hub snapshot's ``README.md`` front matter declares (None: no card, or none declared)."""
    readme = folder / "README.md"
    if not readme.is_file():
        return None
    stat = readme.stat()
    return _parsed_card(str(readme), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _parsed_card(readme: str, size: int, mtime_ns: int) -> list[dict[str, Any]] | None:
    """A card read once per version of it (a group such as MMLU asks for each of its 57 configs in turn)."""
    text = Path(readme).read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return None
    front = text[3:].split("\n---", 1)[0]
    import yaml

    from proctor.core.yaml_bounds import safe_load

    try:
        document = safe_load(front)
    except yaml.YAMLError:
        return None  # a card the hub could not read either: the folder's layout decides
    configs = document.get("configs") if isinstance(document, dict) else None
    if not isinstance(configs, list):
        return None
    return [c for c in configs if isinstance(c, dict) and isinstance(c.get("config_name"), str)] or None


def _card_files(entry: dict[str, Any]) -> dict[str, list[str]]:
    """A card config's ``data_files`` as split -> glob patterns (a bare pattern or list: the ``train`` split)."""
    given = entry.get("data_files")
    if isinstance(given, str):
        return {"train": [given]}
    if isinstance(given, dict):
        return {str(k): [v] if isinstance(v, str) else [str(p) for p in v or []] for k, v in given.items()}
    out: dict[str, list[str]] = {}
    for item in given if isinstance(given, list) else []:
        if isinstance(item, str):
            out.setdefault("train", []).append(item)
        elif isinstance(item, dict) and "split" in item:
            path = item.get("path")
            out.setdefault(str(item["split"]), []).extend([path] if isinstance(path, str) else map(str, path or []))
    return out


def _from_card(folder: Path, configs: list[dict[str, Any]], dataset: str, config: str | None) -> Located:
    names = [str(c["config_name"]) for c in configs]
    if config is None:
        chosen = (
            next((c for c in configs if c.get("default") is True), None)
            or next((c for c in configs if c["config_name"] == "default"), None)
            or (configs[0] if len(configs) == 1 else None)
        )
        if chosen is None:
            return Located(
                folder,
                problem=f"the dataset card {folder / 'README.md'} declares configs {', '.join(names)} and none is "
                "the default; the task names no config",
            )
    else:
        chosen = next((c for c in configs if c["config_name"] == config), None)
        if chosen is None:
            return Located(
                folder,
                problem=f"config '{config}' is not among the configs the dataset card {folder / 'README.md'} declares "
                f"({', '.join(names)}); map a copy of it with --lmeval-data {_key(dataset, config)}=PATH",
            )
    located = Located(folder)
    for split, patterns in _card_files(chosen).items():
        files: list[Path] = []
        for pattern in patterns:
            files += sorted(p for p in folder.glob(pattern) if _is_data(p) and p not in files)
        error = None
        if not files:
            error = (
                f"the dataset card {folder / 'README.md'} gives config '{chosen['config_name']}' split '{split}' "
                f"as {', '.join(patterns)}, and no file in {folder} matches"
            )
        located.splits[split] = SplitSource(split, tuple(files), error=error)
    return located


# ---------------------------------------------------------------- folders of files
def _save_to_disk(folder: Path) -> Located | None:
    """A ``save_to_disk`` folder's splits (None: not one)."""
    import json

    if (folder / "dataset_dict.json").is_file():
        try:
            names = json.loads((folder / "dataset_dict.json").read_text(encoding="utf-8")).get("splits") or []
        except (OSError, ValueError, AttributeError):
            names = [p.name for p in folder.iterdir() if (p / "state.json").is_file()]
        return Located(
            folder, {str(s): SplitSource(str(s), (folder,), form="save_to_disk", member=str(s)) for s in names}
        )
    if (folder / "state.json").is_file():
        return Located(folder, {"": SplitSource("", (folder,), form="save_to_disk")})  # one Dataset: its split unnamed
    return None


def _split_of(file: Path, root: Path) -> tuple[str, str, int, int] | None:
    """(split, the set of files it belongs to, shard index, shard count or 0) of a data file; None: no split."""
    suffix = data_suffix(file) or ""
    stem = file.name[: -len(suffix)]
    match = _SHARD.match(stem)
    base, index, count = (match["base"], int(match["index"]), int(match["count"])) if match else (stem, 0, 0)
    if base.isdigit() or base == "data":  # 0000.parquet (the hub's parquet conversion), data-00000-of-00001.arrow
        if file.parent == root:
            return None
        return file.parent.name, f"{file.parent}/*{suffix}", int(base) if base.isdigit() else index, count
    split = base.rsplit("-", 1)[-1]
    if not _SPLIT_NAME.fullmatch(split):
        return None
    return split, f"{file.parent / base}{suffix}", index, count


def _walk(root: Path) -> list[tuple[str, str, int, int, Path]]:
    """Each data file under ``root`` with its split, set and shard; a nested save_to_disk ``Dataset`` folder
    is one source named by its folder (a DatasetDict's split folders)."""
    found = []
    for where, dirs, files in os.walk(root):
        here = Path(where)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if here != root and (here / "state.json").is_file():
            found.append((here.name, f"{here}/", 0, 0, here))
            dirs[:] = []
            continue
        for name in sorted(files):
            path = here / name
            if _is_data(path):
                parsed = _split_of(path, root)
                if parsed is not None:
                    found.append((*parsed, path))
    return found


def _from_files(root: Path, folder: Path, dataset: str, config: str | None) -> Located:
    sets: dict[str, dict[str, list[tuple[int, int, Path]]]] = {}
    for split, members, index, count, path in _walk(root):
        sets.setdefault(split, {}).setdefault(members, []).append((index, count, path))
    located = Located(folder)
    for split, by_set in sets.items():
        if len(by_set) > 1:
            paths = [p for shards in by_set.values() for _, _, p in shards]
            located.splits[split] = SplitSource(
                split,
                tuple(paths),
                error=f"split '{split}' is held by more than one source in {folder}: {_shown(paths, folder)}; "
                f"map the one to read with --lmeval-data {_key(dataset, config, split)}=PATH",
            )
            continue
        (members, shards), *_ = by_set.items()
        shards.sort(key=lambda s: (s[0], str(s[2])))
        if members.endswith("/") and shards[0][2].is_dir():
            located.splits[split] = SplitSource(split, (shards[0][2],), form="save_to_disk")
            continue
        count = max(c for _, c, _ in shards)
        error = None
        if count and [i for i, _, _ in shards] != list(range(count)):
            have = sorted({i for i, _, _ in shards})
            error = (
                f"split '{split}' in {folder} is sharded in {count} files and shard(s) "
                f"{', '.join(str(i) for i in range(count) if i not in have) or 'numbered twice'} are missing or "
                f"repeated ({_shown([p for *_, p in shards], folder)})"
            )
        located.splits[split] = SplitSource(split, tuple(p for *_, p in shards), error=error)
    return located


def _config_folders(folder: Path) -> list[Path]:
    """Subfolders holding a config's files: split files below them (``ARC-Easy/test-....parquet``). A split's
    own folder (``test/0000.parquet``, a save_to_disk ``test/`` with its ``state.json``) is none: its files
    take their split from the folder, which seen from inside names none."""
    subfolders = (p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "data")
    return [sub for sub in sorted(subfolders) if not (sub / "state.json").is_file() and _walk(sub)]


def _loose_files(folder: Path) -> bool:
    """Data files right in the folder or its ``data/`` folder (one config's files, not configs' folders)."""
    return any(_is_data(p) for base in (folder, folder / "data") if base.is_dir() for p in base.iterdir())


def locate(folder: Path, dataset: str, config: str | None) -> Located:
    """The splits of ``config`` (None: the dataset's default) of ``dataset`` in a mapped folder."""
    configs = card_configs(folder)
    if configs is not None:
        return _from_card(folder, configs, dataset, config)
    whole = _save_to_disk(folder)
    if whole is not None:
        return whole
    if config is not None:
        for candidate in (folder / config, folder / "data" / config):
            if candidate.is_dir():
                return _save_to_disk(candidate) or _from_files(candidate, folder, dataset, config)
    if not _loose_files(folder):
        subfolders = _config_folders(folder)
        if len(subfolders) == 1 and config is None:
            return _save_to_disk(subfolders[0]) or _from_files(subfolders[0], folder, dataset, config)
        if subfolders:
            names = ", ".join(p.name for p in subfolders)
            wanted = f"config '{config}' has no folder there" if config else "the task names no config"
            return Located(
                folder,
                problem=f"{folder} holds the configs {names} (one folder each); {wanted}: map a config's folder with "
                f"--lmeval-data {_key(dataset, config or subfolders[0].name)}={subfolders[0]}",
            )
    return _from_files(folder, folder, dataset, config)
