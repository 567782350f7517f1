"""``--model steer:FILE.py:NAME`` whose function raises is an error naming the file and the line that raised,
not an internal error; through the CLI's entry point in this process."""

from __future__ import annotations

from tests.support.cli_runs import QUESTIONS, QUIZ, jsonl, run_in_process, write


def test_a_steering_factory_that_raises_names_its_file_and_line(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "quiz.yaml", QUIZ)
    jsonl(tmp_path / "data.jsonl", QUESTIONS)
    write(tmp_path / "pipes.py", "def steering(model):\n    raise ValueError('no steering today')\n")
    code, output = run_in_process(
        ["run", "quiz.yaml", "--model", "steer:pipes.py:steering", "--model-arg", f"base={tiny_model_dir}"]
    )
    assert code == 2, output
    assert "internal error" not in output and "Traceback" not in output, output
    assert "pipes.py:2, field 'steering': ValueError: no steering today (raised in steering)" in output, output
