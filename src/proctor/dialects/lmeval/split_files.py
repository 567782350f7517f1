"""Which split an lm-eval task evaluates, and the files it reads, for the audit's ``data.split``.

lm-eval evaluates its ``test_split``, else its ``validation_split``; a local dataset's ``dataset_kwargs.data_files``
maps each split to its files, and a mapped local copy (``--lmeval-data ID::test=PATH``) names one split's files
too. The audit (``audit/source_file_rules.py``) decides whether that is a training split beside a held-out one;
this module only reads the task file's settings, as lm-eval resolved them (its ``include:`` files too).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from proctor.audit.source_file_rules import EvaluatedSplit

_SPLIT_KEYS = ("test_split", "validation_split", "training_split", "fewshot_split")


def _files(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    return ()


def _line(source: str | None, key: str, after: str | None = None) -> int | None:
    """The task file's line setting ``key`` (below the line setting ``after``, where given); None where the key is
    set in a file it includes."""
    if not source or not Path(source).is_file():
        return None
    try:
        lines = Path(source).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    start = 0
    if after is not None:
        found = next((i for i, text in enumerate(lines) if re.match(rf"\s*{re.escape(after)}\s*:", text)), None)
        if found is None:
            return None
        start = found + 1
    pattern = re.compile(rf"\s*['\"]?{re.escape(key)}['\"]?\s*:")
    return next((i + 1 for i, text in enumerate(lines[start:], start) if pattern.match(text)), None)


def evaluated_split(config: Mapping[str, Any], source: str | None, mapped: Sequence[Any] = ()) -> EvaluatedSplit | None:
    """The split lm-eval evaluates for this task ``config`` (its YAML, resolved), read from ``source``; ``mapped``:
    the ``data_map.Splits`` handed to lm-eval (the files a mapped local copy gives each split)."""
    setting = "test_split" if config.get("test_split") else "validation_split"
    split = config.get(setting)
    if not isinstance(split, str):
        return None
    kwargs = config.get("dataset_kwargs")
    data_files = kwargs.get("data_files") if isinstance(kwargs, Mapping) else None
    files: tuple[str, ...] = ()
    others: dict[str, tuple[str, ...]] = {}
    line = _line(source, setting)
    files_setting, files_line = None, None
    if isinstance(data_files, Mapping):
        files = _files(data_files.get(split))
        others.update({str(name): _files(value) for name, value in data_files.items() if name != split})
        if files:
            files_setting, files_line = f"dataset_kwargs.data_files.{split}", _line(source, split, "data_files")
    elif data_files is not None and split == "train":
        files = _files(data_files)  # one file or a list: datasets names its one split 'train'
    for splits in mapped:
        source_files = getattr(splits, "sources", {}).get(split)
        if source_files is not None and not files:
            files = tuple(str(p) for p in source_files.paths)
    for key in _SPLIT_KEYS:
        name = config.get(key)
        if isinstance(name, str) and name != split:
            others.setdefault(name, ())
    records = kwargs.get("field") if isinstance(kwargs, Mapping) else None  # datasets' json: the records' key
    if not isinstance(records, str):
        records = None
    records_line = _line(source, "field", "dataset_kwargs") if records else None
    return EvaluatedSplit(split, setting, files, others, source, line, files_setting, files_line, records, records_line)
