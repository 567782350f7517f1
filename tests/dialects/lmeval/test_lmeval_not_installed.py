"""lm-eval task files given as paths where lm-eval is not installed: an error that says how to install it
(was: internal error ModuleNotFoundError), for ``validate``, ``run`` and an ``lm_eval:`` name alike; through
the CLI's entry point in this process, with lm-eval made unimportable."""

from __future__ import annotations

import sys

import pytest

from tests.support.cli_runs import QUESTIONS, jsonl, run_in_process, write
from tests.support.lmeval_quiz import JSON_TASK as TASK

HINT = (
    "running lm-evaluation-harness task files needs the 'lm_eval' package. "
    "Install it with: pip install 'proctor[lmeval]'"
)


@pytest.fixture
def without_lm_eval(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "lm_eval", None)  # import lm_eval (and lm_eval.anything) fails
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "quiz.yaml", TASK)
    jsonl(tmp_path / "data.jsonl", QUESTIONS)


@pytest.mark.parametrize(
    "args",
    [["validate", "quiz.yaml"], ["run", "quiz.yaml", "--model", "no-such-model"], ["ls", "."]],
    ids=["validate", "run", "ls"],
)
def test_a_task_file_path_says_how_to_install_lm_eval(without_lm_eval, args):
    code, output = run_in_process(args)
    assert "internal error" not in output and "Traceback" not in output, output
    assert HINT in output, output
    assert code == 2, output
