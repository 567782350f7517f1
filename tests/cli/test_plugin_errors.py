"""A ``--plugin`` file whose ``register`` raises is an error naming the file and the line that raised, not an
internal error; through the CLI's entry point in this process."""

from __future__ import annotations

import pytest

from tests.support.cli_runs import QUESTIONS, QUIZ, jsonl, run_in_process, write

pytestmark = pytest.mark.fast


def test_a_plugin_whose_register_raises_names_its_file_and_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "quiz.yaml", QUIZ)
    jsonl(tmp_path / "data.jsonl", QUESTIONS)
    write(tmp_path / "plug.py", "def register(registry):\n    settings = {}\n    return settings['metric']\n")
    code, output = run_in_process(["run", "quiz.yaml", "--plugin", "plug.py", "--model", "no-such-model"])
    assert code == 2, output
    assert "internal error" not in output and "Traceback" not in output, output
    assert f"{tmp_path / 'plug.py'}:3, field '--plugin': KeyError: 'metric' (raised in register)" in output, output
