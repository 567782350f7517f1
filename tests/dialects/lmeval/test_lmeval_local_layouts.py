"""lm-eval datasets from local copies in the layouts people have (a hub snapshot with or without its card,
config and ``data/`` folders, shards, the datasets cache's Arrow files, the hub's parquet conversion,
gzipped JSON lines), mapped once for the whole dataset; what results.json records of the files read; the
standing mapping file ``PROCTOR_LMEVAL_DATA``; and ``proctor ls 'lm_eval:…'`` answered from its saved listing.

Rows: ARC-Easy validation rows of ../shared/data in the hub's schema."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")

from proctor.dialects.lmeval.local_layouts import locate  # noqa: E402
from tests.conftest import shared_path  # noqa: E402
from tests.support.cli_runs import proctor, results, run_in_process, samples  # noqa: E402

ARC = "allenai/ai2_arc"
# arc_easy's fields as the catalogue's task file has them, in a task file of the test's own
TASK = """\
task: arc_local
dataset_path: allenai/ai2_arc
dataset_name: ARC-Easy
output_type: multiple_choice
test_split: test
doc_to_text: "Question: {{question}}\\nAnswer:"
doc_to_target: "{{choices.label.index(answerKey)}}"
doc_to_choice: "{{choices.text}}"
metric_list:
  - metric: acc
metadata:
  version: 1
"""


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    import datasets

    data = datasets.load_from_disk(str(shared_path("data") / "arc_easy" / "hf_arrow_validation"), keep_in_memory=True)
    return [dict(r) for r in data.select(range(30))]


def parquet(path: Path, items: list[dict]) -> Path:
    import datasets

    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(items).to_parquet(str(path))
    return path


def arrow(path: Path, items: list[dict], scratch: Path) -> Path:
    """A datasets Arrow file (the stream format of the datasets cache and of save_to_disk)."""
    import datasets

    datasets.Dataset.from_list(items).save_to_disk(str(scratch))
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(scratch / "data-00000-of-00001.arrow", path)
    return path


def jsonl(path: Path, items: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    return path


CARD = """\
---
license: cc-by-sa-4.0
configs:
- config_name: ARC-Challenge
  data_files:
  - split: test
    path: ARC-Challenge/test-*
- config_name: ARC-Easy
  data_files:
  - split: test
    path: ARC-Easy/test-*
  - split: train
    path: ARC-Easy/train-*
---
# ai2_arc
"""


def snapshot(folder: Path, items: list[dict], card: bool = True) -> Path:
    """A hub snapshot of allenai/ai2_arc: config folders, the test split in two shards (7 + the rest)."""
    parquet(folder / "ARC-Easy" / "test-00000-of-00002.parquet", items[:7])
    parquet(folder / "ARC-Easy" / "test-00001-of-00002.parquet", items[7:])
    parquet(folder / "ARC-Easy" / "train-00000-of-00001.parquet", items[:3])
    parquet(folder / "ARC-Challenge" / "test-00000-of-00001.parquet", items[:2])
    if card:
        (folder / "README.md").write_text(CARD, encoding="utf-8")
    return folder


# ---------------------------------------------------------------- the command, in a fresh process
def test_a_hub_snapshot_mapped_whole_scores_as_the_single_file_mapping(rows, tiny_model_dir, tmp_path):
    """lm_eval:arc_easy on 12 rows: mapped as one file (the existing way) and as a hub snapshot (card, config
    folders, the split in two shards) named once in the standing mapping file: the same documents in the same
    order, the same accuracy; results.json names the shards read, in order, with the sha256 of their bytes."""
    items = rows[:12]
    single = jsonl(tmp_path / "arc_easy_test.jsonl", items)
    snap = snapshot(tmp_path / "copies" / "ai2_arc", items)
    env = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    args = ["run", "lm_eval:arc_easy", "--model", str(tiny_model_dir), "-q"]
    proctor(*args, "-o", "one", "--lmeval-data", f"{ARC}:ARC-Easy:test={single}", cwd=tmp_path, env=env)
    standing = tmp_path / "copies" / "lmeval-data.yaml"
    standing.write_text(f"{ARC}: ai2_arc\n", encoding="utf-8")  # relative to the file's folder
    proctor(*args, "-o", "snap", cwd=tmp_path, env={**env, "PROCTOR_LMEVAL_DATA": str(standing)})

    one, snapped = results(tmp_path / "one")["tasks"]["arc_easy"], results(tmp_path / "snap")["tasks"]["arc_easy"]
    assert one["n_samples"] == snapped["n_samples"] == 12
    assert snapped["metrics"]["acc,none"]["value"] == pytest.approx(one["metrics"]["acc,none"]["value"])
    prompts = [f"Question: {r['question']}\nAnswer:" for r in items]
    assert [s["prompt"] for s in samples(tmp_path / "snap")] == [s["prompt"] for s in samples(tmp_path / "one")]
    assert [s["prompt"] for s in samples(tmp_path / "snap")] == prompts  # both shards, in order
    shards = [snap / "ARC-Easy" / f"test-0000{i}-of-00002.parquet" for i in (0, 1)]
    files = snapped["data"]["files"]
    assert sorted(files) == ["test", "train"]  # lm-eval reads its few-shot split (train) even at 0-shot
    assert files["test"]["paths"] == [str(p) for p in shards]
    assert files["test"]["sha256"] == hashlib.sha256(b"".join(p.read_bytes() for p in shards)).hexdigest()
    assert one["data"]["files"] == {
        "test": {
            "paths": [str(single)],
            "sha256": hashlib.sha256(single.read_bytes()).hexdigest(),
        }
    }  # no train split mapped: an empty few-shot pool, nothing read


def test_ls_answers_from_its_saved_listing_without_importing_lm_eval(tmp_path, monkeypatch):
    """The first listing is built (lm-eval's index) and saved under PROCTOR_HOME; a fresh process lists from
    it without importing lm_eval, datasets or torch, with the same rows."""
    import subprocess
    import sys

    from proctor.dialects.lmeval.loader import catalogue_rows
    from tests.conftest import REPO

    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path))
    built = catalogue_rows(["lm_eval:arc_e*"])
    assert any(name == "arc_easy" for name, _, _ in built)
    script = (
        "import sys, json\n"
        "from proctor.dialects.lmeval.loader import catalogue_rows\n"
        "rows = catalogue_rows(['lm_eval:arc_e*'])\n"
        "print(json.dumps({'rows': rows, 'imported': [m for m in ('lm_eval', 'datasets', 'torch') "
        "if m in sys.modules]}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**__import__("os").environ, "PROCTOR_HOME": str(tmp_path), "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[-1])
    assert answer["imported"] == []
    assert [tuple(r) for r in answer["rows"]] == built


def test_the_saved_listing_is_rebuilt_when_a_task_file_changes(tmp_path, monkeypatch):
    from proctor.dialects.lmeval import listing_cache

    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    include = tmp_path / "tasks"
    include.mkdir()
    (include / "mine.yaml").write_text("task: mine\n")
    builds = []

    def build():
        builds.append(1)
        return [(f"row{len(builds)}", "task", "")]

    assert listing_cache.cached_listing([include], build) == [("row1", "task", "")]
    assert listing_cache.cached_listing([include], build) == [("row1", "task", "")]  # saved
    (include / "other.yaml").write_text("task: other\n")
    assert listing_cache.cached_listing([include], build) == [("row2", "task", "")]  # a file added
    assert listing_cache.cached_listing([], build) == [("row3", "task", "")]  # other include folders
    assert len(builds) == 3


# ---------------------------------------------------------------- layouts, in process
def _splits(folder: Path, config: str | None = "ARC-Easy") -> dict:
    located = locate(folder, ARC, config)
    assert located.problem is None, located.problem
    return {s: ([p.relative_to(folder).as_posix() for p in src.paths], src.error) for s, src in located.splits.items()}


def test_layouts_people_have_are_told_apart(rows, tmp_path):
    snap = snapshot(tmp_path / "snap", rows, card=False)  # no card: config folders
    assert _splits(snap) == {
        "test": (["ARC-Easy/test-00000-of-00002.parquet", "ARC-Easy/test-00001-of-00002.parquet"], None),
        "train": (["ARC-Easy/train-00000-of-00001.parquet"], None),
    }
    assert _splits(snapshot(tmp_path / "card", rows))["test"][0][1] == "ARC-Easy/test-00001-of-00002.parquet"
    data = tmp_path / "data_folder"  # one config's files in data/, sharded with the hub's hash after the count
    parquet(data / "data" / "test-00000-of-00001-0a1b2c3d4e5f.parquet", rows[:5])
    assert _splits(data) == {"test": (["data/test-00000-of-00001-0a1b2c3d4e5f.parquet"], None)}
    cache = tmp_path / "allenai___ai2_arc"  # the datasets cache: <config>/<version>/<hash>/<builder>-<split>.arrow
    arrow(cache / "ARC-Easy" / "0.0.0" / "210d026f" / "ai2_arc-test.arrow", rows[:4], tmp_path / "s1")
    arrow(cache / "ARC-Challenge" / "0.0.0" / "210d026f" / "ai2_arc-test.arrow", rows[:2], tmp_path / "s2")
    assert _splits(cache) == {"test": (["ARC-Easy/0.0.0/210d026f/ai2_arc-test.arrow"], None)}
    converted = tmp_path / "converted"  # the hub's parquet conversion: <config>/<split>/0000.parquet
    parquet(converted / "ARC-Easy" / "test" / "0000.parquet", rows[:3])
    parquet(converted / "ARC-Easy" / "test" / "0001.parquet", rows[3:5])
    assert _splits(converted)["test"] == (["ARC-Easy/test/0000.parquet", "ARC-Easy/test/0001.parquet"], None)
    flat = tmp_path / "flat"
    jsonl(flat / "validation.jsonl", rows[:2])
    with gzip.open(flat / "test.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in rows[:6]))
    assert _splits(flat) == {"test": (["test.jsonl.gz"], None), "validation": (["validation.jsonl"], None)}


def _validate(folder: Path, data_dir: Path, monkeypatch) -> tuple[int, str]:
    (folder / "arc_local.yaml").write_text(TASK, encoding="utf-8")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.chdir(folder)
    return run_in_process(["validate", "arc_local.yaml", "--lmeval-data", f"{ARC}={data_dir}"])


@pytest.mark.parametrize(
    "layout",
    ["snapshot", "cache-arrow", "converted", "gzip", "gzip-json", "save-to-disk-config"],
)
def test_each_layout_reads_the_tasks_rows(layout, rows, tmp_path, monkeypatch):
    """Through the command: the task's 9 rows are read from each layout, whole and in order."""
    import datasets

    items = rows[:9]
    copy = tmp_path / "copy"
    if layout == "snapshot":
        snapshot(copy, items, card=False)
    elif layout == "cache-arrow":
        arrow(copy / "ARC-Easy" / "0.0.0" / "abc" / "ai2_arc-test-00000-of-00002.arrow", items[:4], tmp_path / "a")
        arrow(copy / "ARC-Easy" / "0.0.0" / "abc" / "ai2_arc-test-00001-of-00002.arrow", items[4:], tmp_path / "b")
    elif layout == "converted":
        parquet(copy / "ARC-Easy" / "test" / "0000.parquet", items[:5])
        parquet(copy / "ARC-Easy" / "test" / "0001.parquet", items[5:])
    elif layout in ("gzip", "gzip-json"):  # the hub's gzipped .json files hold JSON lines too
        (copy / "ARC-Easy").mkdir(parents=True)
        name = "test.jsonl.gz" if layout == "gzip" else "test.json.gz"
        with gzip.open(copy / "ARC-Easy" / name, "wt", encoding="utf-8") as handle:
            handle.write("".join(json.dumps(r) + "\n" for r in items))
    else:  # one save_to_disk DatasetDict per config folder
        datasets.DatasetDict({"test": datasets.Dataset.from_list(items)}).save_to_disk(str(copy / "ARC-Easy"))
    code, output = _validate(tmp_path, copy, monkeypatch)
    assert code == 0, output
    from proctor.api import load_tasks
    from proctor.engine.prepare import prepare_task

    (task,) = load_tasks([tmp_path / "arc_local.yaml"], options={"lmeval_data": {ARC: str(copy)}})
    prepared = prepare_task(task, {})
    assert [s.sample.given.target for s in prepared.samples] == [
        r["choices"]["label"].index(r["answerKey"]) for r in items
    ]
    assert prepared.data["files"]["test"]["sha256"]


@pytest.mark.parametrize(
    "case, expect",
    [
        ("two-files", ["copy", "test.jsonl", "test.parquet", "allenai/ai2_arc:ARC-Easy:test=PATH"]),
        ("no-config-folder", ["copy", "ARC-Challenge", "other", "ARC-Easy", "--lmeval-data allenai/ai2_arc:ARC-Easy="]),
        ("card-without-config", ["README.md", "ARC-Easy", "ARC-Challenge", "--lmeval-data allenai/ai2_arc:ARC-Easy="]),
        ("missing-shard", ["copy", "test", "sharded in 3 files", "1"]),
        ("card-pattern-matches-nothing", ["README.md", "ARC-Easy", "test", "no file"]),
        ("bad-gzip-line", ["test.jsonl.gz:2", "line 2 is not valid JSON"]),
        ("gzip-repeated-key", ["test.jsonl.gz:2", "field 'answerKey'", "'answerKey' is given twice"]),
        ("not-gzip", ["test.jsonl.gz", "cannot decompress the gzip file"]),
        ("mixed-column", ["test.jsonl", "answerKey", "one type"]),
    ],
)
def test_a_layout_that_cannot_be_told_apart_is_an_error_naming_folder_found_and_key(
    case, expect, rows, tmp_path, monkeypatch
):
    copy = tmp_path / "copy"
    if case == "two-files":
        jsonl(copy / "test.jsonl", rows[:3])
        parquet(copy / "test.parquet", rows[:3])
    elif case == "no-config-folder":
        parquet(copy / "ARC-Challenge" / "test-00000-of-00001.parquet", rows[:3])
        parquet(copy / "other" / "test-00000-of-00001.parquet", rows[:3])
    elif case == "card-without-config":
        parquet(copy / "ARC-Challenge" / "test-00000-of-00001.parquet", rows[:3])
        (copy / "README.md").write_text(CARD.replace("ARC-Easy", "ARC-Other"), encoding="utf-8")
    elif case == "missing-shard":
        parquet(copy / "ARC-Easy" / "test-00000-of-00003.parquet", rows[:3])
        parquet(copy / "ARC-Easy" / "test-00002-of-00003.parquet", rows[3:6])
    elif case == "card-pattern-matches-nothing":
        parquet(copy / "ARC-Challenge" / "test-00000-of-00001.parquet", rows[:3])
        (copy / "README.md").write_text(CARD, encoding="utf-8")
    elif case == "mixed-column":
        jsonl(copy / "ARC-Easy" / "test.jsonl", [rows[0], {**rows[1], "answerKey": 3}])
    elif case == "gzip-repeated-key":  # json.loads would keep the second value without a word
        (copy / "ARC-Easy").mkdir(parents=True)
        with gzip.open(copy / "ARC-Easy" / "test.jsonl.gz", "wt", encoding="utf-8") as handle:
            handle.write(json.dumps(rows[0]) + "\n" + json.dumps(rows[1])[:-1] + ', "answerKey": "Z"}\n')
    elif case == "not-gzip":
        jsonl(copy / "ARC-Easy" / "test.jsonl.gz", rows[:3])
    else:
        (copy / "ARC-Easy").mkdir(parents=True)
        with gzip.open(copy / "ARC-Easy" / "test.jsonl.gz", "wt", encoding="utf-8") as handle:
            handle.write(json.dumps(rows[0]) + "\n{not json\n")
    code, output = _validate(tmp_path, copy, monkeypatch)
    assert code == 2, output
    assert "Traceback" not in output and "internal error" not in output
    flat = " ".join(output.split())
    for word in expect:
        assert word in flat, f"{case}: {word!r} not in {output}"


def test_the_standing_mapping_file_must_exist(tmp_path, monkeypatch):
    (tmp_path / "arc_local.yaml").write_text(TASK, encoding="utf-8")
    monkeypatch.setenv("PROCTOR_LMEVAL_DATA", str(tmp_path / "nowhere.yaml"))
    monkeypatch.chdir(tmp_path)
    code, output = run_in_process(["validate", "arc_local.yaml"])
    assert code == 2 and "PROCTOR_LMEVAL_DATA" in output and "nowhere.yaml" in output, output


def test_a_split_key_wins_over_the_folder_mapped_whole(rows, tmp_path):
    from proctor.dialects.lmeval.data_map import lookup

    snap = snapshot(tmp_path / "snap", rows)
    own = jsonl(tmp_path / "mine.jsonl", rows[20:24])
    for mapping in (
        {ARC: str(snap), f"{ARC}:ARC-Easy:test": str(own)},
        {f"{ARC}:ARC-Easy:test": str(own), ARC: str(snap)},
    ):
        splits = lookup(mapping, ARC, "ARC-Easy", {"test"})
        assert splits is not None
        assert [r["id"] for r in splits["test"]] == [r["id"] for r in rows[20:24]]
        assert len(splits["train"]) == 3  # from the snapshot
        assert splits.read["test"]["paths"] == [str(own)]


@pytest.mark.parametrize("cache", ["datasets-cache", "hub-cache", "local-dir"])
def test_a_folder_of_copies_serves_each_dataset_found_in_it(cache, rows, tmp_path, monkeypatch):
    """PROCTOR_LMEVAL_DATA naming a folder (the key ``*``): a copied datasets cache (``ORG___NAME``), hub cache
    (``datasets--ORG--NAME/snapshots/REV``) or ``--local-dir ROOT/ORG/NAME`` downloads, found by dataset id."""
    from proctor.api import load_tasks
    from proctor.engine.prepare import prepare_task

    root = tmp_path / "copies"
    if cache == "datasets-cache":
        arrow(
            root / "allenai___ai2_arc" / "ARC-Easy" / "0.0.0" / "abc" / "ai2_arc-test.arrow", rows[:5], tmp_path / "a"
        )
    elif cache == "hub-cache":
        snapshot(root / "datasets--allenai--ai2_arc" / "snapshots" / "0123abcd", rows[:5])
    else:
        snapshot(root / "allenai" / "ai2_arc", rows[:5])
    (tmp_path / "arc_local.yaml").write_text(TASK, encoding="utf-8")
    monkeypatch.setenv("PROCTOR_LMEVAL_DATA", str(root))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    (task,) = load_tasks([tmp_path / "arc_local.yaml"])
    prepared = prepare_task(task, {})
    assert [s.sample.given.prompt for s in prepared.samples] == [
        f"Question: {r['question']}\nAnswer:" for r in rows[:5]
    ]
    assert str(root) in prepared.data["files"]["test"]["paths"][0]


def test_a_folder_of_copies_without_the_dataset_names_where_it_looked(tmp_path, monkeypatch):
    (tmp_path / "copies" / "someone___else").mkdir(parents=True)
    (tmp_path / "arc_local.yaml").write_text(TASK, encoding="utf-8")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    code, output = run_in_process(["validate", "arc_local.yaml", "--lmeval-data", f"*={tmp_path / 'copies'}"])
    flat = " ".join(output.split())
    assert code == 2, output
    assert "not available offline" in flat and str(tmp_path / "copies") in flat and "allenai___ai2_arc" in flat, output


def test_one_snapshot_mapping_serves_each_config_the_tasks_read(rows, tmp_path):
    """arc_easy and arc_challenge read ARC-Easy and ARC-Challenge from the one folder mapped for allenai/ai2_arc."""
    from proctor.dialects.lmeval.data_map import lookup

    for card in (True, False):
        snap = snapshot(tmp_path / f"snap-{card}", rows[:10], card=card)
        easy = lookup({ARC: str(snap)}, ARC, "ARC-Easy", {"test"})
        hard = lookup({ARC: str(snap)}, ARC, "ARC-Challenge", {"test"})
        assert easy is not None and hard is not None
        assert [r["id"] for r in easy["test"]] == [r["id"] for r in rows[:10]]
        assert [r["id"] for r in hard["test"]] == [r["id"] for r in rows[:2]]
        assert hard.read["test"]["paths"] == [str(snap / "ARC-Challenge" / "test-00000-of-00001.parquet")]
