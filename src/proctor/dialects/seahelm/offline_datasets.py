"""``datasets.load_dataset`` as task-folder code sees it: offline, from local copies.

SEA-HELM's task-folder dataloaders call ``load_dataset(<hub id>, <subset>, split=...)`` themselves.
After such a file is imported, its module-level ``load_dataset`` (``from datasets import
load_dataset``) and ``datasets`` (``import datasets``) names are pointed at this module's versions:

- a local path (the dialect already swapped a mapped hub id in ``filepath`` for its local copy) is read
  with :func:`proctor.dialects.seahelm.rows.read_rows`: a file, or a folder holding
  ``<subset>/<split>.jsonl``, ``<subset>_<split>.jsonl``, ``<split>.jsonl``, ... or a ``save_to_disk`` copy;
- a hub id mapped with ``--seahelm-data ID=PATH`` reads PATH the same way (the mapping is the task's,
  in force while its task-folder code runs: :func:`offline_copies`);
- the packaged builders ``json``/``csv``/``parquet`` read their ``data_files`` locally;
- anything else fails with "dataset not available offline: <id>".

The result is a ``datasets.Dataset`` (or ``DatasetDict`` when no split is asked), so the plug-in's
``filter``/``map``/``select`` work as they do in SEA-HELM.
"""

from __future__ import annotations

import contextlib
import contextvars
import types
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence, Union

from proctor.core.errors import ProctorError

# hub id -> local path (--seahelm-data) of the task whose code runs now; set only by offline_copies
_COPIES: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar("seahelm_offline_copies", default={})
_PACKAGED = {"json", "csv", "parquet", "text", "arrow"}


@contextlib.contextmanager
def offline_copies(mapping: Mapping[str, str] | None) -> Iterator[None]:
    """While inside: ``load_dataset`` / ``snapshot_download`` of task-folder code read hub ids from ``mapping``."""
    token = _COPIES.set(dict(mapping or {}))
    try:
        yield
    finally:
        _COPIES.reset(token)


def _local(reference: str) -> Path:
    return Path(_COPIES.get().get(reference, reference)).expanduser()


def _to_dataset(rows: list[dict]):
    from datasets import Dataset

    return Dataset.from_list([dict(r) for r in rows])


# ``datasets.load_dataset``'s ``data_files``: one file, a list of files, or split -> file(s)
DataFiles = Union[str, Path, Sequence[Union[str, Path]], Mapping[str, Union[str, Sequence[str]]]]


def _files(data_files: DataFiles | None, split: str | None) -> list[str | Path]:
    if data_files is None:
        return []
    if isinstance(data_files, dict):
        chosen = data_files.get(split or "train", next(iter(data_files.values())))
        return [chosen] if isinstance(chosen, str) else list(chosen)
    return [data_files] if isinstance(data_files, (str, Path)) else list(data_files)


def load_dataset(
    path: str, name: str | None = None, split: str | None = None, data_files: DataFiles | None = None, **_: Any
):
    """Offline stand-in for ``datasets.load_dataset`` (see the module docstring)."""
    from proctor.dialects.seahelm.rows import read_rows

    reference = str(path)
    if reference in _PACKAGED:
        files = _files(data_files, split)
        if not files:
            raise ProctorError(f"load_dataset('{reference}') needs data_files")
        rows: list[dict] = []
        for file in files:
            if not Path(file).exists():
                raise ProctorError(f"data file not found: {file}")
            rows += read_rows(Path(file))
        dataset = _to_dataset(rows)
        return dataset if split else {"train": dataset}
    local = _local(reference)
    if not local.exists():
        raise ProctorError(
            f"dataset not available offline: {reference} (map a local copy with --seahelm-data {reference}=PATH)"
        )
    if split is None:
        from datasets import DatasetDict

        return DatasetDict({"train": _to_dataset(read_rows(local, "train", name))})
    return _to_dataset(read_rows(local, split, name))


def snapshot_download(repo_id: str, *args: Any, repo_type: str | None = None, **_: Any) -> str:
    """Offline stand-in for ``huggingface_hub.snapshot_download``: the local folder of ``repo_id`` (a local
    path, or a hub id mapped with ``--seahelm-data``); anything else is "dataset not available offline"."""
    reference = str(repo_id)
    local = _local(reference)
    if not local.is_dir():
        raise ProctorError(
            f"dataset not available offline: {reference} (snapshot_download; map a local folder "
            f"with --seahelm-data {reference}=PATH)"
        )
    return str(local)


class _HubProxy(types.ModuleType):
    """The ``huggingface_hub`` module with ``snapshot_download`` replaced; everything else is the real one."""

    def __init__(self) -> None:
        super().__init__("huggingface_hub")
        self.snapshot_download = snapshot_download

    def __getattr__(self, name: str) -> Any:
        import huggingface_hub

        return getattr(huggingface_hub, name)


class _DatasetsProxy(types.ModuleType):
    """The ``datasets`` module with ``load_dataset`` replaced; everything else is the real one."""

    def __init__(self) -> None:
        super().__init__("datasets")
        self.load_dataset = load_dataset

    def __getattr__(self, name: str) -> Any:
        import datasets

        return getattr(datasets, name)


def patch_module(module: types.ModuleType) -> None:
    """Point a task-folder module's ``load_dataset`` / ``datasets`` / ``snapshot_download`` /
    ``huggingface_hub`` names at the offline versions."""
    huggingface_hub: types.ModuleType | None
    try:
        import huggingface_hub
    except ImportError:
        huggingface_hub = None
    if huggingface_hub is not None:
        for key, value in list(vars(module).items()):
            if value is huggingface_hub:
                setattr(module, key, _HubProxy())
            elif value is getattr(huggingface_hub, "snapshot_download", None):
                setattr(module, key, snapshot_download)
    try:
        import datasets
    except ImportError:
        return
    for key, value in list(vars(module).items()):
        if value is datasets:
            setattr(module, key, _DatasetsProxy())
        elif value is getattr(datasets, "load_dataset", None):
            setattr(module, key, load_dataset)
