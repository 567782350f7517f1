"""A finished run stays a finished run whatever the console: a closed stdout, a pipe whose reader has gone,
a console that cannot encode the tables' characters. Each is a fresh ``proctor run`` process (the streams
are the process's own), on a --plugin model that answers at once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.cli_runs import QUESTIONS, QUIZ, jsonl, results, slow_model_plugin, write

RUN = ["run", "quiz.yaml", "--model", "slow:fake", "--plugin", "slow_model.py", "-o", "run"]


@pytest.fixture
def folder(tmp_path) -> Path:
    write(tmp_path / "quiz.yaml", QUIZ.replace("name: quiz", "name: quiz-été"))  # a name ASCII cannot print
    jsonl(tmp_path / "data.jsonl", QUESTIONS)
    slow_model_plugin(tmp_path, 0.0)
    return tmp_path


def _env(**extra: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "200", **extra}
    env.pop("PROCTOR_TRACEBACK", None)
    return env


def _finished(folder: Path) -> None:
    assert results(folder / "run")["tasks"]["quiz-été"]["n_samples"] == 5


def test_a_closed_stdout(folder):
    done = subprocess.run(
        [sys.executable, "-m", "proctor.cli", *RUN],
        cwd=folder,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.close(1),  # after the child's streams are set up: it starts with no fd 1
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    _finished(folder)


def test_a_pipe_whose_reader_has_gone(folder):
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "proctor.cli", *RUN],
            cwd=folder,
            env=_env(),
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=600,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert "note: the standard output was closed (a pipe's reader stopped)" in done.stderr
    _finished(folder)


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0"}])
def test_a_console_that_cannot_print_unicode(folder, env):
    done = subprocess.run(
        [sys.executable, "-m", "proctor.cli", *RUN],
        cwd=folder,
        env=_env(**env),
        capture_output=True,
        timeout=600,
    )
    out, err = done.stdout.decode("ascii", "replace"), done.stderr.decode("ascii", "replace")
    assert done.returncode == 0, err
    assert "Traceback" not in err and "internal error" not in err
    assert "quiz-?t?" in out or "quiz-été" in out, out  # the name, its letters as ? where ASCII lacks them
    assert "run folder: run" in out
    _finished(folder)
