"""Named pipes and devices given as task or data files are refused with an error naming them (reading one
would wait for a writer forever, or never end); through the CLI's entry point in this process."""

from __future__ import annotations

import os

import pytest

from tests.support.cli_runs import QUESTIONS, QUIZ, jsonl, run_in_process, write

pytestmark = [pytest.mark.fast, pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are a POSIX thing")]


def _refused(args: list[str], *words: str) -> str:
    code, output = run_in_process(args)
    assert code == 2, output
    assert "Traceback" not in output and "internal error" not in output, output
    for word in words:
        assert word in output, output
    return output


def test_a_task_file_that_is_a_named_pipe(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "quiz.yaml")
    _refused(["validate", "quiz.yaml"], "quiz.yaml: this is a named pipe (FIFO), not a regular file")


def test_a_data_file_that_is_a_named_pipe(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "quiz.yaml", QUIZ)
    os.mkfifo(tmp_path / "data.jsonl")
    _refused(["validate", "quiz.yaml"], "quiz.yaml, field 'data.path': ", "data.jsonl is a named pipe (FIFO)")


def test_a_named_pipe_matched_by_a_glob(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "quiz.yaml", QUIZ.replace("path: data.jsonl", "path: 'parts/*.jsonl'"))
    jsonl(tmp_path / "parts" / "a.jsonl", QUESTIONS)
    os.mkfifo(tmp_path / "parts" / "b.jsonl")
    _refused(["validate", "quiz.yaml"], "field 'data.path': ", "b.jsonl is a named pipe (FIFO)")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_data_file_that_is_a_device(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "quiz.yaml", QUIZ.replace("path: data.jsonl", 'path: "${DEV}/zero"'))
    _refused(
        ["validate", "quiz.yaml", "--var", "DEV=/dev"],
        "quiz.yaml, field 'data.path': /dev/zero is a character device, not a regular file",
    )


def test_a_task_file_given_to_run_is_refused_before_any_model_loads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "quiz.yaml")
    _refused(["run", "quiz.yaml", "--model", "no-such-model-folder"], "named pipe (FIFO)")


def test_a_glm_data_file_that_is_a_named_pipe(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path / "evens.yaml",
        'name: evens\ntype: mul\npath: evens\nfile-pattern: "*.jsonl"\nmetrics: [Accuracy]\n',
    )
    (tmp_path / "data" / "evens").mkdir(parents=True)
    os.mkfifo(tmp_path / "data" / "evens" / "validation.jsonl")
    _refused(
        ["validate", "evens.yaml", "--data-path", str(tmp_path / "data")],
        "evens.yaml, field 'data.path': ",
        "validation.jsonl is a named pipe (FIFO)",
    )
