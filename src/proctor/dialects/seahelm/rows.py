"""SEA-HELM rows: read from a local data file or folder (``read_rows``: jsonl, json, csv, parquet, a
``<lang>/<split>.*`` layout or a ``datasets.save_to_disk`` copy; ``folder_lacks`` says beforehand why
a folder has none), and held as a list of row dicts that also reads by column, as a ``datasets.Dataset``
does (``RowList``, ``as_rows``).

Kept apart from the dataloaders because the dialect (checking data paths at load), the offline
``datasets.load_dataset`` stand-in and the task handler read and hold rows without a dataloader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from proctor.core.errors import ProctorError, TaskDefinitionError
from proctor.core.special_files import refuse_special


def candidate_files(split: str | None, lang: str | None) -> list[str]:
    """The files a data folder is searched for, in order (then a ``save_to_disk`` copy)."""
    names = []
    for stem in [f"{lang}/{split}", f"{lang}_{split}", f"{split}/{lang}", split, lang] if split else [lang]:
        if stem:
            names += [f"{stem}{s}" for s in (".jsonl", ".json", ".parquet", ".csv")]
    return names


def folder_lacks(path: Path, split: str, lang: str) -> str | None:
    """Why ``read_rows(path, split, lang)`` would find nothing (None: it finds a file, or ``path`` is a file
    or a ``save_to_disk`` copy, whose rows are filtered by language when read)."""
    path = Path(path)
    if not path.is_dir() or any(
        (path / marker).is_file() for marker in ("dataset_dict.json", "state.json", "dataset_info.json")
    ):
        return None
    names = candidate_files(split, lang)
    if any((path / name).is_file() for name in names):
        return None
    return f"{path} has no '{split}' data for language '{lang}' (looked for {', '.join(names[:3])}, ...)"


def read_rows(path: Path, split: str | None = None, lang: str | None = None) -> list[dict]:
    """Rows of a local SEA-HELM data file (jsonl/json/csv/parquet) or folder (``<lang>/<split>.*``,
    ``<lang>_<split>.*``, ``<split>.*``, or a ``datasets.save_to_disk`` folder)."""
    path = Path(path)
    if path.is_dir():
        names = candidate_files(split, lang)
        for name in names:
            if (path / name).is_file():
                return read_rows(path / name)
        try:
            from datasets import load_from_disk

            data = load_from_disk(str(path))
            if hasattr(data, "keys"):  # DatasetDict
                data = data[split] if split in data else data[list(data.keys())[0]]
            rows = data.to_list()
            return [r for r in rows if not lang or (r.get("metadata") or {}).get("language", lang) == lang]
        except Exception:
            raise ProctorError(
                f"no '{split}' data for language '{lang}' in {path} (looked for {', '.join(names[:4])}, ...)"
            ) from None
    refuse_special(path, "data file")  # a FIFO or device would hang or never end
    from proctor.data.file_text import compression
    from proctor.data.readers import json_document, json_values

    suffix = Path(path.stem).suffix if compression(path) else path.suffix  # test.jsonl.gz: JSON lines, gzipped
    if suffix == ".jsonl":
        return [row for _, row in json_values(path)]
    if suffix == ".json":
        data = json_document(path)
        if isinstance(data, list):
            return data
        if isinstance(data, dict):
            return data.get("data", [])
        raise TaskDefinitionError(
            f"holds a {type(data).__name__}: expected a list of rows, or an object whose 'data' holds them", file=path
        )
    import pandas as pd

    frame = pd.read_parquet(path) if suffix == ".parquet" else pd.read_csv(path)
    return frame.to_dict("records")


class RowList(list):
    """Rows as proctor holds them, also read by column as a ``datasets.Dataset`` is
    (``self.dataset["conversations"]`` in task-folder code): a missing column names the row without it."""

    def __getitem__(self, key):
        if isinstance(key, str):
            for index, row in enumerate(self):
                if key not in row:
                    raise KeyError(f"{key} (row {index + 1} has no '{key}')")
            return [row[key] for row in self]
        return super().__getitem__(key)

    @property
    def column_names(self) -> list[str]:
        return list(dict.fromkeys(k for row in self for k in row))

    def map(self, function, *args: Any, **kwargs: Any) -> "RowList":
        """``Dataset.map(fn)`` for a row function (task-folder code such as ONERULER's formatters), in-process."""
        return RowList({**row, **(function(dict(row)) or {})} for row in self)


def as_rows(dataset: Any) -> list[dict]:
    if dataset is None:
        return []
    if isinstance(dataset, list):
        return dataset
    if hasattr(dataset, "to_list"):
        return dataset.to_list()
    if hasattr(dataset, "to_dict"):
        return dataset.to_dict("records")
    return list(dataset)
