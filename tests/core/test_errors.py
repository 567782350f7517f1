"""Every kind of bad input stops before model work with one message naming file, line/row and field."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from proctor import TaskDefinitionError
from proctor.api import load_tasks
from proctor.engine.prepare import prepare_task


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


@pytest.fixture
def data(tmp_path):
    rows = [
        {"question": "2+2?", "choices": ["3", "4"], "label": 1},
        {"question": "1+1?", "choices": ["2", "5"], "label": 0},
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


GOOD = """
tasks:
  - name: arithmetic
    kind: multiple_choice
    data: data.jsonl
    prompt: "Q: {{ question }}\\nA:"
    choices: "{{ choices }}"
    target: "{{ label }}"
    metrics: [acc]
"""


def prepare_all(path: Path):
    return [prepare_task(t, {}) for t in load_tasks([path])]


@pytest.mark.fast
def test_good_file_prepares(data):
    (prepared,) = prepare_all(write(data, "good.yaml", GOOD))
    assert [s.gold for s in prepared.samples] == [(1,), (0,)]
    assert prepared.samples[0].prompt.text == "Q: 2+2?\nA:"


def test_missing_field_names_file_line_and_field(data):
    path = write(data, "t.yaml", GOOD.replace('    prompt: "Q: {{ question }}\\nA:"\n', ""))
    with pytest.raises(TaskDefinitionError) as info:
        load_tasks([path])
    message = str(info.value)
    assert str(path) in message and "prompt" in message
    assert info.value.line == 2  # the task's own line


@pytest.mark.fast
def test_mistyped_field_names_the_line(data):
    path = write(data, "t.yaml", GOOD.replace("    metrics: [acc]", "    metrics: [acc]\n    promtp: oops"))
    with pytest.raises(TaskDefinitionError) as info:
        load_tasks([path])
    assert info.value.line == 9 and info.value.field == "promtp"
    assert f"{path}:9" in str(info.value) and "unknown field 'promtp'" in str(info.value)


def test_wrong_type_names_the_line_and_field(data):
    path = write(data, "t.yaml", GOOD.replace("    metrics: [acc]", "    limit: many"))
    with pytest.raises(TaskDefinitionError) as info:
        load_tasks([path])
    assert f"{path}:8" in str(info.value) and info.value.field == "limit"


def test_unknown_kind_is_reported(data):
    path = write(data, "t.yaml", GOOD.replace("kind: multiple_choice", "kind: multiple-choice"))
    with pytest.raises(TaskDefinitionError) as info:
        load_tasks([path])
    assert f"{path}:3" in str(info.value) and info.value.field == "kind"


@pytest.mark.fast
def test_row_missing_a_template_field_names_data_file_and_row(data):
    with (data / "data.jsonl").open("a") as handle:
        handle.write(json.dumps({"query": "no question here", "choices": ["a", "b"], "label": 0}) + "\n")
    path = write(data, "t.yaml", GOOD)
    with pytest.raises(TaskDefinitionError) as info:
        prepare_all(path)
    error = info.value
    assert error.file.endswith("data.jsonl") and error.row == 3 and error.field == "prompt"
    assert "'question' is undefined" in str(error)


@pytest.mark.fast
def test_unknown_metric_is_an_error_with_a_suggestion(data):
    path = write(data, "t.yaml", GOOD.replace("metrics: [acc]", "metrics: [acc, accuracy_norm]"))
    with pytest.raises(TaskDefinitionError) as info:
        prepare_all(path)
    assert info.value.field == "metrics" and info.value.line == 8
    assert "unknown metric 'accuracy_norm'" in str(info.value)


@pytest.mark.fast
def test_metric_for_another_kind_is_an_error(data):
    path = write(data, "t.yaml", GOOD.replace("metrics: [acc]", "metrics: [exact_match]"))
    with pytest.raises(TaskDefinitionError, match="not available for 'multiple_choice'"):
        prepare_all(path)


@pytest.mark.fast
def test_unreadable_data_file(data):
    (data / "data.jsonl").write_text('{"question": "ok", "choices": ["a"], "label": 0}\n{not json\n')
    path = write(data, "t.yaml", GOOD)
    with pytest.raises(TaskDefinitionError) as info:
        prepare_all(path)
    assert info.value.file.endswith("data.jsonl") and info.value.line == 2
    assert "not valid JSON" in str(info.value)


def test_missing_data_file(data):
    path = write(data, "t.yaml", GOOD.replace("data: data.jsonl", "data: nowhere.jsonl"))
    with pytest.raises(TaskDefinitionError, match="nowhere.jsonl"):
        prepare_all(path)


def test_template_syntax_error_names_the_yaml_line(data):
    path = write(data, "t.yaml", GOOD.replace("{{ question }}", "{{ question }"))
    with pytest.raises(TaskDefinitionError) as info:
        prepare_all(path)
    assert info.value.field == "prompt" and info.value.line == 5 and "template syntax error" in str(info.value)


@pytest.mark.fast
def test_target_out_of_range_names_the_row(data):
    path = write(data, "t.yaml", GOOD.replace('target: "{{ label }}"', 'target: "{{ label + 5 }}"'))
    with pytest.raises(TaskDefinitionError) as info:
        prepare_all(path)
    assert info.value.row == 1 and info.value.field == "target"


@pytest.mark.fast
def test_yaml_syntax_error_names_the_line(data):
    path = write(data, "t.yaml", GOOD.replace("    kind: multiple_choice", "    kind: [multiple_choice"))
    with pytest.raises(TaskDefinitionError) as info:
        load_tasks([path])
    assert info.value.line is not None and "invalid YAML" in str(info.value)


def test_csv_with_wrong_column_count_names_the_line(tmp_path):
    (tmp_path / "d.csv").write_text("q,a,b,answer\nfine,x,y,A\nbroken,x,A\n")
    path = write(
        tmp_path,
        "t.yaml",
        """
        name: csvtask
        kind: multiple_choice
        data: d.csv
        prompt: "{{ q }}"
        choices: ["{{ a }}", "{{ b }}"]
        target: "{{ 'AB'.index(answer) }}"
        """,
    )
    with pytest.raises(TaskDefinitionError) as info:
        prepare_all(path)
    assert info.value.line == 3 and "3 columns, expected 4" in str(info.value)


def test_cli_prints_one_clear_line_and_no_traceback(data):
    path = write(data, "t.yaml", GOOD.replace("{{ question }}", "{{ question }"))
    proc = subprocess.run([sys.executable, "-m", "proctor.cli", "validate", str(path)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"{path}:5" in proc.stderr and "prompt" in proc.stderr


def test_cli_run_fails_before_loading_any_model(data):
    path = write(data, "t.yaml", GOOD.replace("metrics: [acc]", "metrics: [bogus]"))
    proc = subprocess.run(
        [sys.executable, "-m", "proctor.cli", "run", str(path), "--model", "/no/such/model/folder", "-q"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "unknown metric 'bogus'" in proc.stderr and "Traceback" not in proc.stderr
