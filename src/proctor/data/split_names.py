"""The split a file's or folder's name says it holds (``anatomy_dev.csv``: validation): read where a folder's files
are listed (``data/dataset_folders.py``) and by the audit's rules over which files a task evaluates
(``audit/source_file_rules.py``)."""

from __future__ import annotations

import re

_WORDS = re.compile(r"[a-z]+")
# the words a file or folder name uses for a split, and the split each means
_SPLIT_WORDS = {
    "train": "train",
    "training": "train",
    "dev": "validation",
    "val": "validation",
    "valid": "validation",
    "validation": "validation",
    "test": "test",
    "testing": "test",
}


def split_of(name: str) -> str | None:
    """The split a file's name or path says it holds ('anatomy_dev.csv': validation), None where it names none
    or two ('train_test_pairs')."""
    said = {_SPLIT_WORDS[w] for w in _WORDS.findall(name.lower()) if w in _SPLIT_WORDS}
    return said.pop() if len(said) == 1 else None
