"""The console around a run: plain progress lines when stderr is not a terminal, a truthful ETA, a quiet
``-q`` (no third-party bars or known deprecation notices), each log message once, and a model or
dataset the hub cannot give failing at once with one line (no network: a closed loopback port or a
local fake hub stands in for the hub)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from proctor.cli.progress import Clock, ProgressState, clock_text
from tests.conftest import EXAMPLES


def proctor(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "proctor.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=600,
    )


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ticks:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def quickstart(model: Path, out: Path, *args: str, **kwargs):
    """``proctor run`` of the quickstart on ``model`` into ``out``, in a fresh process, with ``args``."""
    return proctor("run", str(EXAMPLES / "quickstart"), "--model", str(model), "-o", str(out), *args, **kwargs)


def test_eta_is_the_rate_from_the_first_answers_and_leaves_reused_answers_out():
    now = Ticks()
    state = ProgressState(now)
    state.update("a", 0, 100)  # announced at t=0
    state.update("b", 0, 50)
    now.t = 10.0
    state.update("a", 0, 100)  # a's requests begin at t=10
    assert state.tasks["a"].eta(now.t) is None and clock_text(None) == "-:--:--"
    now.t = 15.0
    state.update("a", 10, 100)  # 10 answers in 5 s: 90 left take 45 s
    assert state.tasks["a"].eta(now.t) == pytest.approx(45.0)
    assert state.overall.eta(now.t) == pytest.approx(5 * 140 / 10)  # the run: 140 left at the same rate
    now.t = 20.0
    state.update("a", 100, 100)
    now.t = 30.0
    state.update("b", 0, 50)
    state.reused("b", 40)  # 40 answers from the store: no work, no rate
    state.update("b", 40, 50)
    assert state.tasks["b"].eta(now.t) is None
    now.t = 32.0
    state.update("b", 45, 50)  # 5 computed in 2 s: 5 left take 2 s, not 40/45ths of that
    assert state.tasks["b"].eta(now.t) == pytest.approx(2.0)
    assert Clock(total=5, done=5, start=0.0).eta(9.0) == 0.0
    assert clock_text(3725.4) == "1:02:05"


def test_a_run_without_a_terminal_prints_plain_progress_lines(tiny_model_dir, tmp_path):
    proc = quickstart(
        tiny_model_dir,
        tmp_path / "run",
        "--limit",
        "4",
        env={"PROCTOR_PROGRESS_INTERVAL": "0"},
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    unique = {name: t["requests"]["unique"] for name, t in results["tasks"].items()}
    lines = [line for line in proc.stderr.splitlines() if line.startswith("progress: ")]
    total = sum(unique.values())
    for name, n in unique.items():  # each task's last line: all its requests, marked done
        assert f"progress: {name} {n}/{n} done" in proc.stderr
    assert re.search(rf"all tasks {total}/{total} \(100%\) · elapsed \d+:\d\d:\d\d · ETA 0:00:00$", lines[-1])
    assert all("ETA -:--:--" not in line for line in lines)  # every line comes after answers: it has a rate
    assert "\r" not in proc.stderr and "\x1b[" not in proc.stderr  # no bar redrawn in a log


def test_plain_progress_moves_within_one_chunk_as_sequences_finish(tiny_model_dir, tmp_path):
    """6 generations, all in one engine chunk (256 requests): a line per finished sequence, not one per chunk."""
    proc = quickstart(
        tiny_model_dir,
        tmp_path / "run",
        "--limit",
        "6",
        "--batch-size",
        "1",
        env={"PROCTOR_PROGRESS_INTERVAL": "0"},
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["tasks"]["quickstart_short_answers"]["requests"]["unique"] == 6
    counts = re.findall(r"^progress: quickstart_short_answers (\d)/6", proc.stderr, re.MULTILINE)
    assert counts == ["1", "2", "3", "4", "5", "6"]
    first = next(line for line in proc.stderr.splitlines() if line.startswith("progress: "))
    assert "all tasks 24/30 (80%)" in first  # the run's total was known from its first line


def test_quiet_prints_nothing_but_the_results(tiny_model_dir, tmp_path):
    proc = quickstart(
        tiny_model_dir,
        tmp_path / "run",
        "--limit",
        "3",
        "-q",
    )
    assert proc.returncode == 0, proc.stderr
    # no weight-loading bar, no deprecation notice, no progress: only what the run warns of (the random tiny model's
    # answers run to max_tokens, which a warning must still say)
    noise = [line for line in proc.stderr.splitlines() if not line.startswith(("warning: ", "WARNING proctor."))]
    assert noise == [], proc.stderr
    assert "quickstart_science_mc" in proc.stdout and "run folder:" in proc.stdout
    # each of the run's warnings once: as it happened, not again in the list at the end
    (results,) = (tmp_path / "run").rglob("results.json")
    warned = json.loads(results.read_text())["warnings"]
    assert warned and all(proc.stderr.count(text) == 1 for text in warned), proc.stderr


def test_bad_progress_interval_is_one_clear_error(tmp_path):
    proc = proctor(
        "run", str(EXAMPLES / "quickstart"), "-o", str(tmp_path / "run"), env={"PROCTOR_PROGRESS_INTERVAL": "soon"}
    )
    assert (
        proc.returncode == 2
        and proc.stderr.strip() == "error: PROCTOR_PROGRESS_INTERVAL takes a number of seconds >= 0, got 'soon'"
    )


def test_a_library_warning_is_printed_once():
    code = (
        "import logging\n"
        "from proctor.cli.console import configure_logging\n"
        "configure_logging(); configure_logging()\n"
        "import huggingface_hub.utils.logging as hub_logging\n"
        "hub_logging.get_logger('huggingface_hub.x').warning('hub says hello')\n"
        "logging.getLogger('proctor').warning('proctor says hello')\n"
        "logging.getLogger('somelib').warning('somelib says hello')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    for who in ("hub", "proctor", "somelib"):
        assert proc.stderr.count(f"{who} says hello") == 1, proc.stderr
    assert "WARNING proctor: proctor says hello" in proc.stderr


def test_a_mistyped_model_fails_at_once_when_the_hub_cannot_be_reached(tmp_path):
    endpoint = f"http://127.0.0.1:{closed_port()}"
    proc = proctor(
        "run",
        str(EXAMPLES / "quickstart"),
        "--model",
        "nosuchmodel",
        "-o",
        str(tmp_path / "run"),
        env={"HF_ENDPOINT": endpoint, "HF_HUB_OFFLINE": "0"},
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: --model 'nosuchmodel': not a folder, not in the Hugging Face cache, and {endpoint} cannot be reached "
        "([Errno 111] Connection refused)"
    ]
    offline = proctor(
        "run",
        str(EXAMPLES / "quickstart"),
        "--model",
        "nosuchmodel",
        "-o",
        str(tmp_path / "run2"),
        env={"HF_HUB_OFFLINE": "1"},
    )
    assert offline.returncode == 2 and len(offline.stderr.strip().splitlines()) == 1
    assert "not in the Hugging Face cache, and the hub is offline" in offline.stderr


class _FakeHub(BaseHTTPRequestHandler):
    """Answers like the hub for a model it does not have."""

    def log_message(self, *args) -> None:
        pass

    def _missing(self) -> None:
        body = b'{"error": "Repository not found"}'
        self.send_response(404)
        self.send_header("X-Error-Code", "RepoNotFound")  # what the hub sends
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_HEAD = _missing


def test_a_model_the_hub_does_not_have_fails_at_once(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proc = proctor(
            "run",
            str(EXAMPLES / "quickstart"),
            "--model",
            "nosuchorg/nosuchmodel",
            "-o",
            str(tmp_path / "run"),
            env={"HF_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}", "HF_HUB_OFFLINE": "0"},
        )
    finally:
        server.shutdown()
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: --model 'nosuchorg/nosuchmodel': no such folder, and no model of that name on the Hugging Face hub "
        "(a private one needs `hf auth login`)"
    ]


def test_an_unmapped_lm_eval_dataset_fails_at_once_without_the_hub(tmp_path):
    pytest.importorskip("lm_eval")
    (tmp_path / "quiz.yaml").write_text(
        "task: quiz\ndataset_path: example/quiz\noutput_type: multiple_choice\ntest_split: test\n"
        "doc_to_text: '{{q}}'\ndoc_to_choice: '{{options}}'\ndoc_to_target: 0\n"
        "metric_list:\n  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n"
    )
    endpoint = f"http://127.0.0.1:{closed_port()}"
    proc = proctor(
        "run",
        str(tmp_path / "quiz.yaml"),
        "-o",
        str(tmp_path / "run"),
        env={"HF_ENDPOINT": endpoint, "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0"},
    )
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert f"dataset not available offline ({endpoint} cannot be reached" in line
    assert "map a local copy with --lmeval-data example/quiz::SPLIT=PATH" in line


def test_a_hub_dataset_fails_at_once_without_the_hub(tmp_path):
    pytest.importorskip("datasets")
    (tmp_path / "task.yaml").write_text(
        "name: hubbed\nkind: generate\ndata: {hub: someone/some-set, split: test}\n"
        "prompt: '{{ q }}'\ntarget: '{{ a }}'\n"
        "metrics: [exact_match]\n"
    )
    endpoint = f"http://127.0.0.1:{closed_port()}"
    proc = proctor(
        "validate",
        str(tmp_path / "task.yaml"),
        env={"HF_ENDPOINT": endpoint, "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0"},
    )
    assert proc.returncode == 2
    assert f"dataset not available offline: someone/some-set ({endpoint} cannot be reached" in proc.stderr
    assert "Retrying" not in proc.stderr
