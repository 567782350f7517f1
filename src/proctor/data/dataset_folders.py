"""Which files of a data folder hold the data, read as the library that wrote the folder reads it.

A folder is not a pile of files. A Hugging Face ``save_to_disk`` folder lists its shards in state.json
(``_data_files``) and records the split it was saved from (``_split``): ``load_from_disk`` reads the listed shards
only, so a ``.map()`` or ``.filter()`` cache file (``cache-<fingerprint>.arrow``) or a shard left by an earlier save
beside them is no data; and a folder saved from ``ds["train"]`` holds training rows whatever the folder is called. A
hub snapshot's ``data/`` folder holds every split (``test-00000-of-00001.parquet`` beside ``train-...``), and a
folder may hold one dataset saved twice (its Arrow shards and a Parquet export): read together, any of these is a
number over rows the task never meant, with no error. So the folder's files are chosen here, and what cannot be
chosen is an error naming the files; what is read but doubtful (a training split, a shard not listed) is told to
the audit (``data.split``, ``data.stray-file``).
"""

from __future__ import annotations

import json
from pathlib import Path

from proctor.core.audit import Hit
from proctor.core.errors import TaskDefinitionError
from proctor.data.split_names import split_of

SPLIT_RULE = "data.split"  # the audit rule told of a folder holding a training split
STRAY_RULE = "data.stray-file"  # ... and of a save_to_disk folder's shard its state.json does not list

_FORMATS = {".arrow": "arrow", ".parquet": "parquet"}


def folder_files(path: Path, fmt: str, noticed: dict[str, list[Hit]] | None = None) -> tuple[str, list[Path]]:
    """The format (``fmt``, or the one the folder's files have where ``fmt`` is "auto") and the files of data
    folder ``path`` to read, in order; ``noticed`` receives, by audit rule id, what is read but doubtful."""
    if (path / "dataset_dict.json").is_file():  # DatasetDict.save_to_disk: one folder per split
        splits = json.loads((path / "dataset_dict.json").read_text(encoding="utf-8")).get("splits") or []
        raise TaskDefinitionError(
            f"a DatasetDict folder (one folder per split: {', '.join(map(str, splits))}): name the split to "
            f"evaluate, 'path: {path.name}/{_held_out_first(splits)}'",
            file=path,
        )
    by_format: dict[str, list[Path]] = {}
    for file in sorted(path.iterdir()):
        if file.is_file() and file.suffix.lower() in _FORMATS:
            by_format.setdefault(_FORMATS[file.suffix.lower()], []).append(file)
    if fmt == "auto":
        if len(by_format) > 1:  # one dataset saved twice (Arrow shards and a Parquet export), or two datasets
            arrow, parquet = by_format["arrow"][0].name, by_format["parquet"][0].name
            raise TaskDefinitionError(
                f"the data folder holds Arrow files ({arrow}) and Parquet files ({parquet}): reading both would "
                f"count rows twice or mix datasets, reading one would be a guess; name the files "
                f"('path: {path.name}/*.parquet', or one file), or set 'format'",
                file=path,
            )
        if not by_format:
            raise TaskDefinitionError(
                "a data folder must hold *.arrow (Hugging Face save_to_disk) or *.parquet files", file=path
            )
        fmt = next(iter(by_format))
    files = by_format.get(fmt, [])
    state = path / "state.json"
    if fmt == "arrow" and state.is_file():
        files = _listed_shards(path, state, files, noticed)
    else:
        _one_split(path, files, noticed)
    if not files:
        raise TaskDefinitionError(f"the data folder holds no *.{fmt} files", file=path)
    return fmt, files


def _held_out_first(splits: list[str]) -> str:
    held = [s for s in splits if split_of(str(s)) == "test"] + [s for s in splits if split_of(str(s)) == "validation"]
    return str((held or splits or ["SPLIT"])[0])


def _listed_shards(path: Path, state: Path, found: list[Path], noticed: dict[str, list[Hit]] | None) -> list[Path]:
    """A ``save_to_disk`` folder's shards as state.json lists them (``load_from_disk`` reads those alone); a
    listed shard missing is an error, a shard it does not list (not a cache file) and a training split are told."""
    try:
        record = json.loads(state.read_text(encoding="utf-8"))
        names = [str(entry["filename"]) for entry in record["_data_files"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise TaskDefinitionError(
            f"state.json does not list the folder's shards as save_to_disk writes it ({type(exc).__name__}: {exc})",
            file=state,
            field="_data_files",
        ) from None
    missing = [n for n in names if not (path / n).is_file()]
    if missing:
        raise TaskDefinitionError(
            f"state.json lists {missing[0]}, which the folder does not hold: the dataset is not whole",
            file=state,
            field="_data_files",
        )
    listed = set(names)
    strays = [f.name for f in found if f.name not in listed and not f.name.startswith("cache-")]
    if strays and noticed is not None:  # a cache-*.arrow is datasets' own, never data: left out without a word
        noticed.setdefault(STRAY_RULE, []).append(
            Hit(
                f"the save_to_disk folder holds {', '.join(strays[:3])}"
                + (f" and {len(strays) - 3} more" if len(strays) > 3 else "")
                + f", which its state.json does not list (a shard left by an earlier save?): not read, as "
                f"load_from_disk reads only the {len(names)} shard(s) it lists",
                file=str(path),
                field="data",
            )
        )
    split = record.get("_split") if isinstance(record, dict) else None
    if isinstance(split, str) and split_of(split) == "train" and noticed is not None:
        noticed.setdefault(SPLIT_RULE, []).append(
            Hit(
                f"the save_to_disk folder {path.name} records split '{split}' (its state.json's _split): it was saved "
                "from the training split, and its rows are scored as test rows; save the test (or validation) split",
                file=str(state),
                field="_split",
            )
        )
    return [path / n for n in names]


def _one_split(path: Path, files: list[Path], noticed: dict[str, list[Hit]] | None) -> None:
    """Files whose names say two splits (a hub snapshot's ``test-*.parquet`` beside ``train-*.parquet``) are an
    error naming them; files all named as the training split are told to the audit."""
    by_split: dict[str, list[str]] = {}
    for file in files:
        said = split_of(file.name)
        if said is not None:
            by_split.setdefault(said, []).append(file.name)
    if len(by_split) > 1:
        named = "; ".join(f"{split}: {', '.join(names[:2])}" for split, names in sorted(by_split.items()))
        pick = "test" if "test" in by_split else sorted(by_split)[0]
        raise TaskDefinitionError(
            f"the data folder holds the files of several splits ({named}): read together, their rows would be "
            f"scored as one set; name the split's files ('path: {path.name}/{pick}-*{files[0].suffix}')",
            file=path,
        )
    if set(by_split) == {"train"} and len(by_split["train"]) == len(files) and noticed is not None:
        noticed.setdefault(SPLIT_RULE, []).append(
            Hit(
                f"the data folder {path.name} holds only files named as the training split ({by_split['train'][0]}"
                + (f" and {len(files) - 1} more" if len(files) > 1 else "")
                + "): their rows are scored as test rows; read the test (or validation) split's files",
                file=str(path),
                field="data",
            )
        )
