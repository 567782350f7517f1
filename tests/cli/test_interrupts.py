"""Ctrl-C and SIGTERM stop a run with a message: how many answers were saved and the command that resumes;
running that command finishes the run with the numbers of a run never interrupted.

The run is a real ``proctor run`` in a fresh process, on a model (a ``--plugin`` backend) that takes a fifth
of a second per call, so the signal lands between stored batches; the test waits until the store holds some
answers before sending it.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.cli_runs import (
    QUESTIONS,
    QUIZ,
    jsonl,
    proctor,
    results,
    run_in_process,
    samples,
    slow_model_plugin,
    write,
)

ROWS = [
    {**q, "id": f"{q['id']}{i}", "question": f"{i}. {q['question']}"} for i in range(4) for q in QUESTIONS
]  # 60 requests


def _task_folder(folder: Path) -> Path:
    write(folder / "tasks" / "quiz.yaml", QUIZ)
    jsonl(folder / "tasks" / "data.jsonl", ROWS)
    slow_model_plugin(folder, 0.2)
    return folder


def _stored(store: Path) -> int:
    if not store.is_file():
        return 0
    try:
        with sqlite3.connect(f"{store.as_uri()}?mode=ro", uri=True) as db:
            number: int = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            return number
    except sqlite3.Error:  # the store is being created
        return 0


def _signalled(args: list[str], folder: Path, ready, signum: int) -> subprocess.CompletedProcess:
    """``proctor ARGS`` started in ``folder`` in a fresh process, sent ``signum`` once ``ready()`` holds."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "400"}
    env.pop("PROCTOR_TRACEBACK", None)
    child = subprocess.Popen(
        [sys.executable, "-m", "proctor.cli", *args],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not ready():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the moment to send the signal never came"
            time.sleep(0.02)
        child.send_signal(signum)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def _interrupted(folder: Path, signum: int) -> subprocess.CompletedProcess:
    """``proctor run`` started in ``folder``, sent ``signum`` once its store holds answers."""
    args = ["run", "tasks", "--model", "slow:fake", "--plugin", "slow_model.py", "--chunk-size", "3", "-o", "run"]
    return _signalled(args, folder, lambda: _stored(folder / "run" / "store.sqlite") >= 6, signum)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> dict:
    folder = _task_folder(tmp_path_factory.mktemp("whole"))
    proctor("run", "tasks", "--model", "slow:fake", "--plugin", "slow_model.py", "-o", "run", cwd=folder)
    return results(folder / "run")


@pytest.mark.parametrize(("signum", "code", "name"), [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_says_what_was_saved_and_the_printed_command_resumes(signum, code, name, uninterrupted, tmp_path):
    folder = _task_folder(tmp_path)
    done = _interrupted(folder, signum)
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    saved = _stored(folder / "run" / "store.sqlite")
    assert 6 <= saved < 60  # stopped between batches, the store's batches kept
    assert f"interrupted by {name}" in done.stderr
    assert f"{saved} answer(s) saved in run" in done.stderr, done.stderr
    assert not (folder / "run" / "results.json").exists()  # an interrupted run is no finished one
    attempt = json.loads((folder / "run" / "run.json").read_text())["attempts"][-1]
    assert attempt["signal"].startswith(name) and attempt["saved"] == saved and "finished" not in attempt
    assert attempt["interrupted"] >= attempt["started"]
    resume = done.stderr.split("to resume, run:")[1].strip().splitlines()[0]
    assert resume.startswith("proctor run tasks ")
    again = proctor(*shlex.split(resume)[1:], cwd=folder)
    assert again.returncode == 0
    finished = results(folder / "run")
    resumed = json.loads((folder / "run" / "run.json").read_text())["attempts"][-1]
    assert resumed["resumed"] and "interrupted" not in resumed and resumed["responses"]["from_run_store"] == saved
    assert finished["tasks"]["quiz"]["metrics"] == uninterrupted["tasks"]["quiz"]["metrics"]
    assert finished["tasks"]["quiz"]["n_samples"] == 20
    assert len(samples(folder / "run")) == 20


def test_interrupted_while_the_model_loads_names_the_answers_an_earlier_attempt_kept(tmp_path):
    folder = _task_folder(tmp_path)
    first = _interrupted(folder, signal.SIGINT)
    assert first.returncode == 130, first.stderr
    saved = _stored(folder / "run" / "store.sqlite")
    slow_model_plugin(folder, 0.2, load=600)  # the next attempt is stopped while its model loads
    args = ["run", "tasks", "--model", "slow:fake", "--plugin", "slow_model.py", "--chunk-size", "3", "-o", "run"]
    done = _signalled(args, folder, (folder / "loading").exists, signal.SIGTERM)
    err = done.stderr
    assert done.returncode == 143, err
    assert f"interrupted by SIGTERM: {saved} answer(s) saved in run; to resume, run:" in err, err


def test_the_resume_command_keeps_the_answers_and_names_the_folder():
    from proctor.cli.interrupts import message, resume_command
    from proctor.core.errors import RunInterrupted

    # --restart would discard what was saved; a run folder made for the run is named; no password shown
    given = ["run", "t.yaml", "--model", "openai:m", "--base-url", "http://me:secret@host/v1", "--restart"]
    assert resume_command(given, "runs/20260101_m") == (
        "proctor run t.yaml --model openai:m --base-url 'http://me:***@host/v1' --output runs/20260101_m"
    )
    assert resume_command(["run", "my tasks", "-o", "out"], "out") == "proctor run 'my tasks' -o out"
    stopped = RunInterrupted(signal.SIGTERM, "SIGTERM")
    assert stopped.exit_code == 143
    assert message(stopped, ["run", "t.yaml"]) == "interrupted by SIGTERM before any answer was saved"
    stopped.run_dir, stopped.saved = Path("out"), 12
    assert message(stopped, ["run", "t.yaml", "-o", "out"]) == (
        "interrupted by SIGTERM: 12 answer(s) saved in out; to resume, run:\n  proctor run t.yaml -o out"
    )


def test_ctrl_c_stops_the_viewer_as_before(tmp_path):
    """``proctor view`` serves until stopped: Ctrl-C is its way out, a clean stop, not an interruption."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    child = subprocess.Popen(
        [sys.executable, "-m", "proctor.cli", "view", str(tmp_path), "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert "Ctrl-C stops" in child.stdout.readline()  # serving
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, err
    assert "proctor view: stopped" in out and "interrupted" not in err


def test_the_entry_point_runs_from_a_thread_too(tmp_path, monkeypatch):
    """Signal handlers can be installed from the main thread only: main() called from another leaves them."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "quiz.yaml", QUIZ)
    jsonl(tmp_path / "data.jsonl", QUESTIONS)
    outcome: list[tuple[int, str]] = []
    worker = threading.Thread(target=lambda: outcome.append(run_in_process(["validate", "quiz.yaml"])))
    worker.start()
    worker.join(timeout=300)
    ((code, output),) = outcome
    assert code == 0 and "1 task(s) valid" in output, output
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the main thread's, untouched


GENERATE = """\
name: echo
kind: generate
data: {path: data.jsonl, id: id}
prompt: "{{ question }}"
target: "{{ choices[label] }}"
generation: {max_tokens: 8}
metrics: [exact_match]
"""


def _slow_chat_server():
    """A stand-in chat server (NOT a model) that answers each question with its last word after 0.1 s, so a
    signal lands while requests are in flight on several connections."""
    from tests.support.openai_fakes import _json_handler, _Server

    def respond(path: str, body: dict, headers: dict) -> tuple[int, dict]:
        time.sleep(0.1)
        text = str(body["messages"][-1]["content"])
        reply = text.rstrip("?").split()[-1]
        choice = {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}
        return 200, {"object": "chat.completion", "choices": [choice], "usage": {}}

    return _Server(_json_handler(respond))


def test_an_openai_run_stopped_mid_flight_resumes_to_the_numbers_of_an_uninterrupted_one(tmp_path):
    """SIGINT while an ``openai:`` run has requests in flight on two connections: the answers that came back are
    kept, run.json records the interruption, and the printed command finishes with an uninterrupted run's numbers."""
    rows = [{**row, "choices": ["day", "have", "barks", "called", "on"]} for row in ROWS]
    for name in ("whole", "stopped"):
        write(tmp_path / name / "tasks" / "echo.yaml", GENERATE)
        jsonl(tmp_path / name / "tasks" / "data.jsonl", rows)
    with _slow_chat_server() as server:
        args = ["run", "tasks", "--model", "openai:stand-in", "--base-url", server.url]
        args += ["--model-arg", "endpoint=chat", "--max-connections", "2", "--chunk-size", "4", "-o", "run"]
        proctor(*args, cwd=tmp_path / "whole")
        folder = tmp_path / "stopped"
        done = _signalled(args, folder, lambda: _stored(folder / "run" / "store.sqlite") >= 8, signal.SIGINT)
        err = done.stderr
        assert done.returncode == 130, err
        assert "Traceback" not in err and "internal error" not in err, err
        saved = _stored(folder / "run" / "store.sqlite")
        assert 8 <= saved < 60 and f"{saved} answer(s) saved in run" in err, err
        attempt = json.loads((folder / "run" / "run.json").read_text())["attempts"][-1]
        assert attempt["saved"] == saved and attempt["signal"].startswith("SIGINT")
        resume = err.split("to resume, run:")[1].strip().splitlines()[0]
        again = proctor(*shlex.split(resume)[1:], cwd=folder)
        assert again.returncode == 0
    want, got = results(tmp_path / "whole" / "run"), results(folder / "run")
    assert got["tasks"]["echo"]["metrics"] == want["tasks"]["echo"]["metrics"]
    assert got["tasks"]["echo"]["metrics"]["exact_match"]["value"] > 0  # the stand-in's answers were scored
    by_id = {s["id"]: s for s in samples(tmp_path / "whole" / "run")}
    assert [(s["id"], s["generation"]) for s in samples(folder / "run")] == [
        (s["id"], by_id[s["id"]]["generation"]) for s in samples(folder / "run")
    ]
    assert json.loads((folder / "run" / "run.json").read_text())["attempts"][-1]["responses"]["from_run_store"] == saved
