"""Where an lm-eval task's dataset comes from: the hub when online, else local copies mapped by
dataset id, config name and split.

A mapping key is ``ID``, ``ID:CONFIG``, ``ID:CONFIG:SPLIT`` or ``ID::SPLIT`` (any config); its value
is a ``save_to_disk`` folder (a ``DatasetDict`` for ``ID`` / ``ID:CONFIG``, a ``Dataset`` for one
split), a folder holding ``<split>.jsonl|.json|.parquet|.csv`` files, or one such file (for a split).
Keys come from ``--lmeval-data KEY=PATH`` and from ``--lmeval-data-file FILE`` (YAML or JSON,
``KEY: PATH``, relative paths from the file's folder).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator, Mapping

from proctor.core.errors import TaskDefinitionError
from proctor.data.hub import offline, unreachable

_FILE_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv")
_LOCAL_BUILDERS = {"json", "csv", "parquet", "arrow", "text", "pandas", "imagefolder", "audiofolder"}


def parse_key(key: str) -> tuple[str, str | None, str | None]:
    parts = key.split(":")
    if len(parts) > 3 or not parts[0]:
        raise ValueError(f"a dataset key is ID, ID:CONFIG, ID:CONFIG:SPLIT or ID::SPLIT, got '{key}'")
    dataset, config, split = (parts + [None, None])[:3]
    assert dataset is not None  # parts[0], checked above
    return dataset, config or None, split or None


def read_mapping_file(path: str | Path) -> dict[str, str]:
    import yaml

    file = Path(path).expanduser()
    if not file.is_file():
        raise TaskDefinitionError("lm-eval data mapping file not found", file=file)
    from proctor.core.yaml_bounds import safe_load
    from proctor.core.yaml_lines import read_text, yaml_error

    text = read_text(file)
    try:
        document = safe_load(text)
    except yaml.YAMLError as exc:
        raise yaml_error(exc, file, text) from None
    if not isinstance(document, dict) or not all(isinstance(v, str) for v in document.values()):
        raise TaskDefinitionError("the mapping file holds 'DATASET_ID[:CONFIG[:SPLIT]]: PATH' entries", file=file)
    out = {}
    for key, value in document.items():
        try:
            parse_key(str(key))
        except ValueError as exc:
            raise TaskDefinitionError(str(exc), file=file, field=str(key)) from None
        target = Path(value).expanduser()
        out[str(key)] = str(target if target.is_absolute() else (file.parent / target).resolve())
    return out


def _working_copy(folder: Path) -> Path:
    """A copy of a ``save_to_disk`` folder under ``PROCTOR_HOME/lmeval-datasets``, made once per
    version of it (path, file sizes and modification times), so the user's folder is never written."""
    import hashlib
    import shutil
    import tempfile

    from proctor.models.default import proctor_home

    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("cache-"))
    digest = hashlib.sha256(str(folder.resolve()).encode())
    for file in files:
        stat = file.stat()
        digest.update(f"{file.relative_to(folder)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    target = proctor_home() / "lmeval-datasets" / digest.hexdigest()[:16]
    if not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".copy-"))
        for file in files:
            (staging / file.relative_to(folder)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, staging / file.relative_to(folder))
        try:
            staging.rename(target)  # atomic: a concurrent run either sees the whole copy or makes its own
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _read(path: Path, split: str | None) -> Any:
    """A ``Dataset`` (one split) or a dict of split -> ``Dataset`` from a local copy."""
    import datasets

    if path.is_dir() and ((path / "dataset_dict.json").is_file() or (path / "state.json").is_file()):
        # Read from proctor's own copy: a Dataset backed by the user's folder would have lm-eval's
        # process_docs (``dataset.map``) write cache-*.arrow files into it. In the copy, those caches
        # serve the next run, as datasets' own cache serves lm-eval's.
        loaded = datasets.load_from_disk(str(_working_copy(path)))
        return loaded if isinstance(loaded, datasets.Dataset) else dict(loaded)
    if path.is_dir():
        found = {}
        for file in sorted(path.iterdir()):
            if file.suffix in _FILE_SUFFIXES and (split is None or file.stem == split):
                found[file.stem] = _read(file, file.stem)
        return found if split is None else found.get(split)
    if path.is_file():
        from proctor.data.readers import read_rows

        rows = read_rows(path)
        plain = [{k: v for k, v in row.items() if k != "_row"} for row in rows]
        try:
            return datasets.Dataset.from_list(plain)
        except Exception as exc:  # pyarrow: a column whose values differ in type from row to row
            raise _mixed_column(path, rows, exc) from None
    raise TaskDefinitionError("the mapped local copy does not exist", file=path)


def _shape(value: Any) -> str:
    """A value's type as a table column holds it: ``list[str]``, ``int`` (None fits any column)."""
    if isinstance(value, list):
        inner = sorted({_shape(v) for v in value if v is not None})
        return f"list[{'|'.join(inner)}]"
    if isinstance(value, dict):
        return "mapping"
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


def _mixed_column(path: Path, rows: list[dict], exc: Exception) -> TaskDefinitionError:
    """The first field whose type changes between rows (or within a list), as an error naming file, row and field."""
    seen: dict[str, tuple[str, int]] = {}
    for number, row in enumerate(rows, 1):
        for key, value in row.items():
            if key == "_row" or value is None:
                continue
            shape = _shape(value)
            where = row.get("_row", number)
            if "|" in shape:
                return TaskDefinitionError(
                    f"the list in '{key}' mixes types ({shape}); a dataset column holds one type",
                    file=path,
                    row=where,
                    field=key,
                )
            first = seen.setdefault(key, (shape, where))
            if first[0] != shape:
                return TaskDefinitionError(
                    f"'{key}' is {shape} here but {first[0]} in row {first[1]}; a dataset column holds one type",
                    file=path,
                    row=where,
                    field=key,
                )
    return TaskDefinitionError(f"cannot read as a dataset: {type(exc).__name__}: {str(exc)[:200]}", file=path)


class Splits(dict):
    """The splits of a mapped dataset; a missing one is an error naming id, config and split, except
    a split lm-eval only reads for few-shot examples, which is empty (checked when shots are drawn)."""

    def __init__(self, dataset: str, config: str | None, splits: dict[str, Any], needed: set[str]) -> None:
        super().__init__(splits)
        self.dataset, self.config, self.needed = dataset, config, needed
        self.missing: set[str] = set()
        self.source: Any = None  # the task file asking, named in errors

    def __missing__(self, split: str) -> Any:
        if split in self.needed:
            have = ", ".join(sorted(self)) or "none"
            raise TaskDefinitionError(
                f"no local copy of dataset '{self.dataset}' config '{self.config}' split '{split}' "
                f"(the copy has: {have}; map one with --lmeval-data {self.dataset}:{self.config or ''}:{split}=PATH)",
                file=self.source,
                field="dataset_path",
            )
        import datasets

        self.missing.add(split)
        return datasets.Dataset.from_list([])


def lookup(mapping: Mapping[str, str], dataset: str, config: str | None, needed: set[str]) -> Splits | None:
    splits: dict[str, Any] = {}
    found = False
    for key, value in mapping.items():
        d, c, s = parse_key(key)
        if d != dataset or (c is not None and c != config):
            continue
        found = True
        loaded = _read(Path(value).expanduser(), s)
        if s is not None:
            if loaded is None:
                raise TaskDefinitionError(f"--lmeval-data {key}: no '{s}' data in {value}", file=value)
            splits[s] = loaded
        elif isinstance(loaded, dict):
            for name, part in loaded.items():
                splits.setdefault(name, part)
        else:
            raise TaskDefinitionError(
                f"--lmeval-data {key}: {value} holds one split; name it (ID:CONFIG:SPLIT)", file=value
            )
    return Splits(dataset, config, splits, needed) if found else None


def _local_files(path: Any, kwargs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(key, path)`` of each local file or folder a ``load_dataset`` call would read."""
    named: list[tuple[str, str]] = []
    if path and path not in _LOCAL_BUILDERS:
        named.append(("dataset_path", str(path)))
    if kwargs.get("data_dir"):
        named.append(("dataset_kwargs.data_dir", str(kwargs["data_dir"])))
    files = kwargs.get("data_files")
    values = files.values() if isinstance(files, Mapping) else [files] if files else []
    for value in values:
        named += [
            ("dataset_kwargs.data_files", str(v)) for v in (value if isinstance(value, (list, tuple)) else [value])
        ]
    return named


def check_local(path: Any, kwargs: Mapping[str, Any], roots: tuple[Path, ...], source: Any) -> None:
    """Local dataset files stay in the task's folder or a folder the user named (``data/paths.py``)."""
    from proctor.data.paths import check_inside

    for key, value in _local_files(path, kwargs):
        if "://" in value:
            continue  # a URL: datasets downloads it (a hub-like source, not a local file)
        check_inside(Path(value).expanduser(), roots, written=value, file=source, field=key)


def _local_splits(loaded: Any, path: Any, split_keys: Mapping[str, str], source: Any) -> Any:
    """A ``DatasetDict`` read by a local builder, whose missing split is an error naming the task file's key that
    asks for it and the splits there are (lm-eval's own ``self.dataset[split]`` is a bare KeyError)."""
    import datasets

    if not isinstance(loaded, datasets.DatasetDict):
        return loaded

    class LocalSplits(datasets.DatasetDict):
        def __missing__(self, split: str) -> Any:
            key = split_keys.get(split, "test_split")
            raise TaskDefinitionError(
                f"{key} '{split}' is not a split of the local dataset '{path}' (it has: {', '.join(self) or 'none'})",
                file=source,
                field=key,
            )

    return LocalSplits(loaded)


@contextlib.contextmanager
def serving(
    mapping: Mapping[str, str],
    needed: set[str],
    task: str,
    source: Any,
    roots: tuple[Path, ...] = (),
    split_keys: Mapping[str, str] | None = None,
) -> Iterator[list]:
    """While lm-eval builds a task, ``datasets.load_dataset`` reads mapped local copies first, then
    the hub (unless offline). Yields a list that receives each ``Splits`` handed out. Local files a
    task names itself (``dataset_path``, ``dataset_kwargs``) must lie in ``roots``; ``split_keys``
    (split -> the task file's key naming it) words the error for a split a local dataset lacks."""
    import datasets

    real = datasets.load_dataset
    handed: list = []

    def load_dataset(path: str | None = None, name: str | None = None, *args: Any, **kwargs: Any) -> Any:
        path = kwargs.pop("path", path)
        name = kwargs.pop("name", name)
        if path in _LOCAL_BUILDERS or (path and Path(str(path)).expanduser().exists()):
            check_local(path, kwargs, roots, source)
            try:
                loaded = real(path, name, *args, **kwargs)
            except FileNotFoundError as exc:  # datasets: "Unable to find '...'"
                field = next(
                    (f"dataset_kwargs.{k}" for k in ("data_files", "data_dir") if kwargs.get(k)), "dataset_path"
                )
                raise TaskDefinitionError(f"task '{task}': {exc}", file=source, field=field) from None
            return _local_splits(loaded, path, split_keys or {}, source)
        splits = lookup(mapping, str(path), name, needed)
        if splits is not None:
            splits.source = source
            handed.append(splits)
            return splits
        wanted = ", ".join(sorted(needed)) or "?"
        hint = f"map a local copy with --lmeval-data {path}:{name or ''}:SPLIT=PATH (or --lmeval-data-file)"
        reason = None if offline() else unreachable()  # fail now, not after the hub client's retries
        if offline() or reason is not None:
            why = f" ({reason})" if reason else ""
            raise TaskDefinitionError(
                f"task '{task}': dataset not available offline{why}: '{path}' "
                f"config '{name}' split(s) {wanted}; {hint}",
                file=source,
                field="dataset_path",
            )
        try:
            return real(path, name, *args, **kwargs)
        except Exception as exc:
            raise TaskDefinitionError(
                f"task '{task}': cannot read dataset '{path}' config '{name}' split(s) {wanted} from the hub "
                f"({type(exc).__name__}: {str(exc)[:200]}); {hint}",
                file=source,
                field="dataset_path",
            ) from None

    datasets.load_dataset = load_dataset
    try:
        yield handed
    finally:
        datasets.load_dataset = real
