"""Reading one split of a local copy into a ``datasets.Dataset`` held in memory, and the record of what was read.

Files are read into memory (Parquet with pyarrow, datasets' Arrow files as Arrow streams; JSON lines, JSON,
CSV and gzipped JSON lines through ``proctor.data.readers.read_rows``, the native tasks' reader and its
checks): a ``Dataset`` backed by a file in the user's folder would have lm-eval's ``process_docs``
(``dataset.map``) write ``cache-*.arrow`` files beside it. A ``save_to_disk`` folder is read from proctor's
own copy of it (``_working_copy``), whose caches serve the next run.

``provenance`` is what results.json records per split: the paths read, in order, and the sha256 of their
bytes (streamed; a save_to_disk folder's files, its caches left out).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from proctor.core.errors import TaskDefinitionError
from proctor.core.home import proctor_home
from proctor.data.readers import ROW_KEY, read_rows
from proctor.dialects.lmeval.local_layouts import SplitSource, data_suffix

if TYPE_CHECKING:
    import datasets


class ReadFiles(TypedDict):
    """What results.json's ``data.files`` records for one split read from a local copy."""

    paths: list[str]  # the files (or the save_to_disk folder) read, in order
    sha256: str  # the digest of their bytes, in that order


def _working_copy(folder: Path) -> Path:
    """A copy of a ``save_to_disk`` folder under ``PROCTOR_HOME/lmeval-datasets``, made once per
    version of it (path, file sizes and modification times), so the user's folder is never written."""
    import shutil
    import tempfile

    files = _folder_files(folder)
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


def _folder_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(("cache-", ".")))


def read_files(paths: tuple[Path, ...]) -> datasets.Dataset:
    """The rows of these files, in order, as one in-memory ``Dataset``."""
    import datasets

    parts = [_read_one(path) for path in paths]
    if len(parts) == 1:
        return parts[0]
    try:
        return datasets.concatenate_datasets(parts)
    except Exception as exc:  # shards whose columns differ
        raise TaskDefinitionError(
            f"the shards {', '.join(p.name for p in paths)} do not hold the same columns: {str(exc)[:200]}",
            file=paths[0].parent,
        ) from None


def _read_one(path: Path) -> datasets.Dataset:
    import datasets

    suffix = data_suffix(path) or path.suffix
    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return datasets.Dataset(pq.read_table(path))
        if suffix == ".arrow":
            return datasets.Dataset.from_file(str(path), in_memory=True)
    except Exception as exc:
        raise TaskDefinitionError(
            f"cannot read as {suffix[1:]}: {type(exc).__name__}: {str(exc)[:200]}", file=path
        ) from None
    # the hub's gzipped .json files are JSON lines (C4's c4-train.00000-of-01024.json.gz), as datasets reads them
    rows = read_rows(path, "jsonl" if suffix == ".json.gz" else "auto")
    plain = [{k: v for k, v in row.items() if k != ROW_KEY} for row in rows]
    try:
        return datasets.Dataset.from_list(plain)
    except Exception as exc:  # pyarrow: a column whose values differ in type from row to row
        raise mixed_column(path, rows, exc) from None


def read_saved(folder: Path, member: str | None) -> datasets.Dataset | None:
    """One split of a ``save_to_disk`` folder (``member`` of a DatasetDict, or the folder's one Dataset)."""
    import datasets

    loaded = datasets.load_from_disk(str(_working_copy(folder)))
    if member is None:
        return loaded if isinstance(loaded, datasets.Dataset) else None
    return loaded[member] if isinstance(loaded, datasets.DatasetDict) and member in loaded else None


def read(source: SplitSource) -> datasets.Dataset | None:
    if source.form == "save_to_disk":
        return read_saved(source.paths[0], source.member)
    return read_files(source.paths)


def provenance(source: SplitSource) -> ReadFiles:
    """``{"paths": [...], "sha256": ...}``: the files read for a split and the digest of their bytes, in order."""
    if source.form == "save_to_disk":
        folder = source.paths[0]
        root = folder / source.member if source.member and (folder / source.member).is_dir() else folder
        files = _folder_files(root)
        shown = [str(root)]
    else:
        files = list(source.paths)
        shown = [str(p) for p in files]
    digest = hashlib.sha256()
    for file in files:
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return {"paths": shown, "sha256": digest.hexdigest()}


def _shape(value: object) -> str:
    """A value's type as a table column holds it: ``list[str]``, ``int`` (None fits any column)."""
    if isinstance(value, list):
        inner = sorted({_shape(v) for v in value if v is not None})
        return f"list[{'|'.join(inner)}]"
    if isinstance(value, dict):
        return "mapping"
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


def mixed_column(path: Path, rows: list[dict], exc: Exception) -> TaskDefinitionError:
    """The first field whose type changes between rows (or within a list), as an error naming file, row and field."""
    seen: dict[str, tuple[str, int]] = {}
    for number, row in enumerate(rows, 1):
        for key, value in row.items():
            if key == ROW_KEY or value is None:
                continue
            shape = _shape(value)
            where = row.get(ROW_KEY, number)
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
