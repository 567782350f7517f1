"""Data folders read as the library that wrote them reads them (``data/dataset_folders.py``): a ``save_to_disk``
folder's shards as its state.json lists them (cache files and stray shards left out, the count ``load_from_disk``
gives), its recorded training split told to the audit; a folder of two formats, of several splits' files, or a
DatasetDict is an error naming the files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from proctor.core.errors import TaskDefinitionError
from proctor.data.readers import read_rows

datasets = pytest.importorskip("datasets")

ROWS = {"q": ["q0", "q1", "q2", "q3", "q4", "q5"], "label": [0, 1, 2, 0, 1, 2]}


def saved(folder: Path, split: str | None = None, rows: dict = ROWS) -> Path:
    """``Dataset.save_to_disk`` of ``rows`` (recording ``split``), as datasets writes it."""
    info = datasets.DatasetInfo()
    datasets.Dataset.from_dict(rows, info=info, split=split).save_to_disk(str(folder))
    return folder


def test_a_cache_file_beside_the_shard_is_not_read(tmp_path):
    """``load_from_disk(...).map(...)`` writes cache-<fingerprint>.arrow into the folder, with rewritten rows:
    the folder still holds the 6 rows load_from_disk gives, not 12."""
    folder = saved(tmp_path / "ds")
    datasets.load_from_disk(str(folder)).map(lambda r: {"q": "Please answer: " + r["q"]})
    datasets.load_from_disk(str(folder)).filter(lambda r: r["label"] == 0)
    assert len([f for f in folder.iterdir() if f.name.startswith("cache-")]) == 2
    noticed: dict = {}
    rows = read_rows(folder, noticed=noticed)
    assert len(rows) == len(datasets.load_from_disk(str(folder))) == 6
    assert [r["q"] for r in rows] == ROWS["q"] and [r["_row"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert noticed == {}  # datasets' own cache files: nothing to tell


def test_a_shard_state_json_does_not_list_is_left_out_and_told(tmp_path):
    """A shard left by an earlier save (data-00001-of-00002.arrow beside the listed data-00000-of-00001.arrow)
    is not read (3 rows, as load_from_disk), and the audit is told its name."""
    folder = saved(tmp_path / "ds", rows={"q": ["q0", "q1", "q2"], "label": [0, 1, 2]})
    other = saved(tmp_path / "old", rows={"q": ["x0", "x1", "x2"], "label": [2, 2, 2]})
    shutil.copy(other / "data-00000-of-00001.arrow", folder / "data-00001-of-00002.arrow")
    noticed: dict = {}
    rows = read_rows(folder, noticed=noticed)
    assert [r["q"] for r in rows] == ["q0", "q1", "q2"] and len(datasets.load_from_disk(str(folder))) == 3
    (hit,) = noticed["data.stray-file"]
    assert "data-00001-of-00002.arrow" in hit.message and "1 shard(s) it lists" in hit.message


def test_shards_are_read_in_the_order_state_json_lists_them(tmp_path):
    folder = saved(tmp_path / "ds")
    datasets.load_from_disk(str(folder))  # (written as one shard; list two, in reverse order of their names)
    shutil.copy(folder / "data-00000-of-00001.arrow", folder / "data-00000-of-00002.arrow")
    saved(tmp_path / "b", rows={"q": ["b0"], "label": [1]})
    shutil.copy(tmp_path / "b" / "data-00000-of-00001.arrow", folder / "data-00001-of-00002.arrow")
    state = json.loads((folder / "state.json").read_text())
    state["_data_files"] = [{"filename": "data-00001-of-00002.arrow"}, {"filename": "data-00000-of-00002.arrow"}]
    (folder / "state.json").write_text(json.dumps(state))
    (folder / "data-00000-of-00001.arrow").unlink()
    rows = read_rows(folder)
    assert [r["q"] for r in rows] == [r["q"] for r in datasets.load_from_disk(str(folder))] == ["b0", *ROWS["q"]]
    state["_data_files"].append({"filename": "data-00002-of-00003.arrow"})
    (folder / "state.json").write_text(json.dumps(state))
    with pytest.raises(TaskDefinitionError, match="lists data-00002-of-00003.arrow, which the folder does not hold"):
        read_rows(folder)


def test_a_folder_saved_from_the_training_split_is_told(tmp_path):
    noticed: dict = {}
    assert len(read_rows(saved(tmp_path / "eval_set", split="train"), noticed=noticed)) == 6
    (hit,) = noticed["data.split"]
    assert "records split 'train'" in hit.message and hit.file.endswith("state.json") and hit.field == "_split"
    for split in ("test", "validation", None):
        noticed = {}
        read_rows(saved(tmp_path / f"s-{split}", split=split), noticed=noticed)
        assert noticed == {}, split


def test_the_training_split_reaches_the_results_and_the_console(tmp_path, caplog):
    from proctor.api import evaluate
    from tests.support.fakes import FakeModel

    saved(tmp_path / "eval_set", split="train", rows={"q": ["Is it?", "Was it?"], "choices": [["yes", "no"]] * 2})
    task = "name: t\nkind: multiple_choice\ndata: {path: eval_set}\nprompt: '{{ q }}'\nchoices: '{{ choices }}'\n"
    (tmp_path / "t.yaml").write_text(task + "target: '0'\n")
    run = evaluate([tmp_path / "t.yaml"], FakeModel(), output_dir=tmp_path / "run")
    entry = json.loads((run.run_dir / "results.json").read_text())["tasks"]["t"]
    assert entry["n_samples"] == 2
    (finding,) = [a for a in entry.get("audit") or [] if a["rule"] == "data.split"]
    assert "records split 'train'" in finding["message"]
    assert "records split 'train'" in caplog.text


def test_a_folder_of_arrow_and_parquet_files_is_an_error_naming_both(tmp_path):
    folder = saved(tmp_path / "ds")
    pq.write_table(pa.table(ROWS), folder / "d.parquet")
    with pytest.raises(TaskDefinitionError) as caught:
        read_rows(folder)
    assert "data-00000-of-00001.arrow" in str(caught.value) and "d.parquet" in str(caught.value)
    assert [r["q"] for r in read_rows(folder, "parquet")] == ROWS["q"]  # 'format' says which: those files
    assert len(read_rows(folder, "arrow")) == 6


def test_a_folder_of_several_splits_files_is_an_error_naming_them(tmp_path):
    """A hub snapshot's data/ folder: test-*.parquet (6 rows) beside train-*.parquet (20): never 26 rows."""
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(pa.table(ROWS), folder / "test-00000-of-00001.parquet")
    pq.write_table(pa.table({"q": ["t"] * 20, "label": [0] * 20}), folder / "train-00000-of-00001.parquet")
    with pytest.raises(TaskDefinitionError) as caught:
        read_rows(folder)
    message = str(caught.value)
    assert "test-00000-of-00001.parquet" in message and "train-00000-of-00001.parquet" in message
    assert "'path: data/test-*.parquet'" in message
    (folder / "test-00000-of-00001.parquet").unlink()
    noticed: dict = {}
    assert len(read_rows(folder, noticed=noticed)) == 20  # the training split alone: read, and told
    assert "only files named as the training split" in noticed["data.split"][0].message


def test_spark_part_files_and_a_split_folder_are_read_whole(tmp_path):
    folder = tmp_path / "test"
    folder.mkdir()
    pq.write_table(pa.table({"q": ROWS["q"][:4]}), folder / "part-00000-abc.snappy.parquet")
    pq.write_table(pa.table({"q": ROWS["q"][4:]}), folder / "part-00001-abc.snappy.parquet")
    (folder / "_SUCCESS").write_text("")
    noticed: dict = {}
    rows = read_rows(folder, noticed=noticed)
    assert [r["q"] for r in rows] == ROWS["q"] and [r["_row"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert noticed == {}


def test_a_dataset_dict_folder_asks_for_its_split(tmp_path):
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_dict(ROWS), "test": datasets.Dataset.from_dict(ROWS)}
    ).save_to_disk(str(tmp_path / "ds"))
    with pytest.raises(TaskDefinitionError, match=r"one folder per split: train, test.*'path: ds/test'"):
        read_rows(tmp_path / "ds")
    assert len(read_rows(tmp_path / "ds" / "test")) == 6
