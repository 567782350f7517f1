"""The statistics' bad inputs, through the CLI's entry point in-process: a cluster field a row lacks, a power
question without a positive effect or without a pilot. One message naming the file, row and field; exit 2."""

from __future__ import annotations

import json

import pytest

from proctor.cli import main
from proctor.core.task_spec import TaskSpec
from tests.support.cli_runs import jsonl, write

pytestmark = pytest.mark.fast

TASK = """\
name: clustered
kind: multiple_choice
data: {path: data.jsonl, id: id}
prompt: "{{ question }}"
choices: "{{ choices }}"
target: "{{ label }}"
cluster: passage
"""


def _rows(n: int = 4) -> list[dict]:
    return [
        {"id": str(i), "passage": f"p{i // 2}", "question": f"q{i}?", "choices": ["a", "b"], "label": i % 2}
        for i in range(n)
    ]


def _exit_message(argv, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    captured = capsys.readouterr()
    message = " ".join((captured.out + captured.err).split())
    assert "Traceback" not in message and "internal error" not in message
    return message


def test_a_row_without_the_cluster_field_is_named(tmp_path, capsys):
    rows = _rows()
    del rows[2]["passage"]
    jsonl(tmp_path / "data.jsonl", rows)
    task = write(tmp_path / "task.yaml", TASK)
    message = _exit_message(["validate", str(task)], capsys)
    assert "data.jsonl" in message and "row 3" in message and "cluster" in message and "'passage'" in message


def test_a_list_as_a_cluster_is_refused(tmp_path, capsys):
    rows = _rows()
    rows[1]["passage"] = ["p", "q"]
    jsonl(tmp_path / "data.jsonl", rows)
    message = _exit_message(["validate", str(write(tmp_path / "task.yaml", TASK))], capsys)
    assert "row 2" in message and "a list" in message


def test_a_cluster_changes_the_hash_only_when_set():
    base = {"name": "t", "kind": "generate", "data": ["d.jsonl"], "prompt": "p", "target": "t"}
    assert "cluster" not in TaskSpec.model_validate(base).model_dump(mode="json")  # hashes as before the field
    assert TaskSpec.model_validate({**base, "cluster": "doc"}).model_dump(mode="json")["cluster"] == "doc"


def test_power_needs_a_positive_effect_and_a_run_folder(tmp_path, capsys):
    assert "--effect 0.0" in _exit_message(["power", str(tmp_path), "--effect", "0"], capsys)
    message = _exit_message(["power", str(tmp_path / "nowhere"), "--effect", "0.05"], capsys)
    assert str(tmp_path / "nowhere") in message
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.json").write_text(json.dumps({"tasks": "oops"}))
    message = _exit_message(["power", str(tmp_path / "run"), "--effect", "0.05"], capsys)
    assert "results.json" in message
