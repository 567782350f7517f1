"""Run-folder safety: one writer per folder, samples that always agree with results.json after a
kill, options that change numbers in the resume check, and a bounded loss per kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from proctor import evaluate
from proctor.runs.executor import MAX_CHUNK_REQUESTS, MAX_LOGLIKELIHOOD_CHUNK, default_chunk_size
from proctor.runs.lock import RunFolderBusyError, hold_run_dir
from proctor.runs.manifest import RunMismatchError
from tests.conftest import REPO
from tests.support.fakes import FakeModel, stable, write_tasks

WORKER = REPO / "tests" / "support" / "kill_worker.py"


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO), env.get("PYTHONPATH", "")])
    return env


def _run_worker(tasks: Path, run: Path, log: Path, kill: str) -> int:
    proc = subprocess.run(
        [sys.executable, str(WORKER), str(tasks), str(run), str(log), kill],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode


def samples_agree_with_results(run: Path) -> None:
    """Every task results.json names has all its samples on disk; a complete run has no others."""
    results_path = run / "results.json"
    if not results_path.exists():
        return
    results = json.loads(results_path.read_text())
    counts: dict[str, int] = {}
    for line in (run / "samples.jsonl").read_text().split("\n"):
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a torn last line of a task in flight (not yet in results.json)
        counts[record["task"]] = counts.get(record["task"], 0) + 1
    for name, task in results["tasks"].items():
        assert counts.get(name) == task["n_samples"], (name, counts.get(name), task["n_samples"], results["status"])
    if results["status"] == "complete":
        assert set(counts) == set(results["tasks"]), (set(counts), set(results["tasks"]))


# ---------------------------------------------------------------------------------- one writer


def test_a_second_run_on_a_held_folder_refuses_naming_the_holder(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=2)
    run = tmp_path / "run"
    with hold_run_dir(run, ["proctor", "run", "first-command"]):
        model = FakeModel()
        with pytest.raises(RunFolderBusyError) as info:
            evaluate([tasks], model, output_dir=run)
        assert model.calls == []  # refused before any model work
    message = str(info.value)
    assert f"pid {os.getpid()}" in message and "first-command" in message and str(run) in message
    assert not (run / "store.sqlite").exists() and not (run / "results.json").exists()
    evaluate([tasks], FakeModel(), output_dir=run)  # released: the next run proceeds
    assert json.loads((run / "results.json").read_text())["status"] == "complete"


def test_cli_refuses_a_folder_held_by_another_process_and_a_killed_holder_does_not_block(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=2)
    run = tmp_path / "run"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from proctor.runs.lock import hold_run_dir\n"
            "with hold_run_dir(Path(sys.argv[1]), ['proctor', 'run', 'holder-cmd']):\n"
            "    print('held', flush=True); time.sleep(120)",
            str(run),
        ],
        env=_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        done = subprocess.run(
            [sys.executable, "-m", "proctor.cli", "run", str(tasks), "-o", str(run), "-q"],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert f"pid {holder.pid}" in done.stderr and "holder-cmd" in done.stderr and "in use" in done.stderr
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert (run / ".lock").exists()  # the killed holder's lock file stays, but it holds no lock
    evaluate([tasks], FakeModel(), output_dir=run)
    assert json.loads((run / "results.json").read_text())["status"] == "complete"


# ---------------------------------------------------------- samples agree with results.json


def test_kills_during_a_rerun_of_a_finished_run_never_leave_complete_results_beside_missing_samples(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=6, n_gen=3)
    base, run, log = tmp_path / "base", tmp_path / "run", tmp_path / "calls.log"
    assert _run_worker(tasks, base, tmp_path / "base.log", "none") == 0
    assert _run_worker(tasks, run, log, "none") == 0
    samples_agree_with_results(run)
    # A re-run of the finished run answers everything from the store; kill it at every write.
    for kill in ["manifest:1", "samples:1", "results:1", "samples:3", "results:4", "results:5", "manifest:2"]:
        assert _run_worker(tasks, run, log, kill) == -signal.SIGKILL, kill
        samples_agree_with_results(run)
    assert _run_worker(tasks, run, log, "none") == 0
    samples_agree_with_results(run)
    assert (run / "samples.jsonl").read_bytes() == (base / "samples.jsonl").read_bytes()

    def strip(p):
        return {
            k: v
            for k, v in stable(json.loads((p / "results.json").read_text())).items()
            if k not in ("created", "run_id")
        }

    assert strip(run) == strip(base)


# ------------------------------------------------------ options that change numbers are checked


def test_a_changed_chunk_size_is_refused_on_resume(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=2)
    run = tmp_path / "run"
    evaluate([tasks], FakeModel(batch_size=4), output_dir=run, chunk_size=2)
    with pytest.raises(RunMismatchError, match=r"option chunk_size changed \(2 -> None\)"):
        evaluate([tasks], FakeModel(batch_size=4), output_dir=run)  # the default chunk (4) differs
    with pytest.raises(RunMismatchError, match=r"option chunk_size changed \(2 -> 3\)"):
        evaluate([tasks], FakeModel(batch_size=4), output_dir=run, chunk_size=3)
    model = FakeModel(batch_size=4)
    evaluate([tasks], model, output_dir=run, chunk_size=2)  # the same chunk size resumes
    assert model.calls == []
    other = tmp_path / "other"
    evaluate([tasks], FakeModel(batch_size=4), output_dir=other)
    evaluate([tasks], FakeModel(batch_size=4), output_dir=other, chunk_size=4)  # = the default: same run


# ------------------------------------------------------------------------- bounded loss per kill


class Killed(BaseException):
    """Stands in for SIGKILL inside this process: nothing after it runs (the store commits per chunk)."""


class BigChunkModel(FakeModel):
    """A backend that asks for 256-request chunks, as the HF backend does."""

    chunk_requests = 256

    def __init__(self, *args, kill_at_call: int | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.kill_at_call = kill_at_call

    def _log(self, kind: str, n: int) -> None:
        super()._log(kind, n)
        if self.kill_at_call is not None and len(self.calls) == self.kill_at_call:
            raise Killed()


def test_a_kill_loses_at_most_one_capped_chunk_even_when_the_backend_asks_for_more(tmp_path):
    big = BigChunkModel(batch_size=1024)
    assert default_chunk_size(big, "loglikelihood") == MAX_LOGLIKELIHOOD_CHUNK == 256
    assert (
        default_chunk_size(big, "generate")
        == default_chunk_size(big, "rolling_loglikelihood")
        == MAX_CHUNK_REQUESTS
        == 64
    )
    tasks = write_tasks(tmp_path / "tasks", n_mc=150, n_gen=0)  # mc_alpha: 150 questions x 4 choices = 600 requests
    run = tmp_path / "run"
    killed = BigChunkModel(batch_size=1024, kill_at_call=2)
    with pytest.raises(Killed):
        evaluate([tasks], killed, output_dir=run, select=["mc_alpha"])
    total = 600  # every request distinct
    assert [n for _, n in killed.calls] == [256, 256]  # the second call was in flight when killed
    resumed = BigChunkModel(batch_size=1024)
    result = evaluate([tasks], resumed, output_dir=run, select=["mc_alpha"])
    recomputed = sum(n for _, n in resumed.calls)
    assert recomputed == total - 256  # the committed chunk is kept
    lost = sum(n for _, n in killed.calls) + recomputed - total  # model work done twice
    assert lost == 256 <= MAX_LOGLIKELIHOOD_CHUNK  # one chunk: the one in flight
    fresh = evaluate([tasks], BigChunkModel(batch_size=1024), output_dir=tmp_path / "fresh", select=["mc_alpha"])
    assert stable(result.results)["tasks"] == stable(fresh.results)["tasks"]


def test_output_and_cache_that_cannot_be_written_are_refused_before_any_work(tmp_path, monkeypatch):
    from proctor.core.errors import ProctorError

    tasks = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=2)
    (tmp_path / "afile").write_text("x")
    model = FakeModel()
    with pytest.raises(ProctorError, match="--output .*afile: is a file"):
        evaluate([tasks], model, output_dir=tmp_path / "afile")
    with pytest.raises(ProctorError, match="--output .*afile is a file, so the folder cannot be made"):
        evaluate([tasks], model, output_dir=tmp_path / "afile" / "run")
    with pytest.raises(ProctorError, match="--cache .*afile: is a file"):
        evaluate([tasks], model, output_dir=tmp_path / "run", cache=tmp_path / "afile")
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == locked else real_access(p, mode))
    with pytest.raises(ProctorError, match="--output .*locked is not writable"):  # (root may write anywhere: simulated)
        evaluate([tasks], model, output_dir=locked / "run")
    assert model.calls == []


def test_the_hf_backend_is_held_to_the_caps(tiny_model):
    # the backend declares its log-likelihood chunk: 1,024 requests of scoring units on the CPU (a chunk's
    # last forward call is padded, so larger chunks waste less); the engine asks for at most 64
    # generations or rolling log-likelihoods per call (docs/runs.md)
    assert tiny_model.layout.name == "units" and default_chunk_size(tiny_model, "loglikelihood") == 1024
    assert tiny_model.chunk_requests > MAX_CHUNK_REQUESTS and default_chunk_size(tiny_model, "generate") == 64


def test_samples_appended_before_results_names_their_task_are_not_part_of_the_run(tmp_path):
    """A kill between a task's samples (appended, fsynced) and the results.json that names it: readers
    (report, exports, compare) see exactly the tasks results.json lists; the rerun rewrites the rest."""
    from proctor.runs.results import RunWriter
    from proctor.runs.run_exports import iter_samples

    def results(status, names):  # the smallest results.json its schema accepts
        task = {
            "kind": "generate",
            "dialect": "native",
            "source": None,
            "version": "0",
            "hash": "h",
            "n_samples": 1,
            "metrics": {},
            "requests": {"unique": 1},
            "timing": {"total_seconds": 0.0},
        }
        return {
            "proctor_version": "0",
            "created": "2025-01-01T00:00:00+00:00",
            "command": None,
            "model": {},
            "status": status,
            "tasks": {name: dict(task) for name in names},
            "groups": {},
        }

    run = tmp_path / "run"
    writer = RunWriter(run)
    writer.append_samples([{"task": "a", "id": "1"}, {"task": "a", "id": "2"}])
    writer.write_results(results("running", ["a"]))
    writer.append_samples([{"task": "b", "id": "1"}])  # ... killed here, before results.json names b
    assert [r["task"] for r in iter_samples(run)] == ["a", "a"]
    assert json.loads((run / "results.json").read_text())["samples_bytes"] < (run / "samples.jsonl").stat().st_size
    writer.write_results(results("complete", ["a", "b"]))  # an uninterrupted run: all of it
    assert [r["task"] for r in iter_samples(run)] == ["a", "a", "b"]
