"""A task's own local data file replaced by a corrected one of the same size and modification time (``cp -p``,
``tar``, ``rsync -t`` keep mtimes): datasets keys its prepared copy by path and mtime, so lm-eval's
``load_dataset`` would serve the old rows; proctor's has it rebuild from the files (red team 13, probe 524)."""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("lm_eval")

from proctor.dialects.lmeval import data_map  # noqa: E402


def _labels(folder, cache):
    import datasets

    with data_map.serving({}, {"test"}, "t", None, (folder,)):
        loaded = datasets.load_dataset("json", data_files={"test": str(folder / "d.jsonl")}, cache_dir=str(cache))
    return [row["label"] for row in loaded["test"]]


def test_a_replaced_file_of_the_same_mtime_is_read_again(tmp_path):
    data, cache = tmp_path / "d.jsonl", tmp_path / "cache"
    rows = [{"q": f"Which is right {i}?", "label": 0} for i in range(6)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    stamp = (1767225600, 1767225600)  # 2026-01-01
    os.utime(data, stamp)
    assert _labels(tmp_path, cache) == [0] * 6
    data.write_text("".join(json.dumps({**r, "label": 1}) + "\n" for r in rows))  # same size
    os.utime(data, stamp)
    assert _labels(tmp_path, cache) == [1] * 6
