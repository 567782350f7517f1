"""docs/extending.md runs as written: its files (fenced blocks with ``file=NAME``) are copied into a folder,
each ``proctor`` command of its ``console`` blocks runs there in a fresh interpreter, and the numbers the
page gives are checked against the run folders."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PAGE = REPO / "docs" / "extending.md"
_BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.S | re.M)


def blocks() -> list[tuple[str, str, str]]:
    """(language, info after it, body) of every fenced block of the page."""
    return [(m.group(1), m.group(2).strip(), m.group(3)) for m in _BLOCK.finditer(PAGE.read_text(encoding="utf-8"))]


@pytest.fixture(scope="module")
def worked(tmp_path_factory) -> Path:
    """The page's files written to a folder and its commands run there."""
    folder = tmp_path_factory.mktemp("extending")
    commands = []
    for language, info, body in blocks():
        if info.startswith("file="):
            (folder / info[len("file=") :]).write_text(body, encoding="utf-8")
        elif language == "console":
            commands += [line for line in body.splitlines() if line.startswith("proctor ")]
    assert len(commands) == 3
    environment = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "200"}
    for command in commands:
        done = subprocess.run(
            [sys.executable, "-m", "proctor.cli", *shlex.split(command)[1:], "--quiet"],
            cwd=folder,
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, command + "\n" + done.stdout[-3000:] + done.stderr[-3000:]
    return folder


def metric(run: Path, task: str, name: str) -> float:
    return json.loads((run / "results.json").read_text())["tasks"][task]["metrics"][name]["value"]


def test_the_page_has_each_example():
    files = {info for _, info, _ in blocks() if info.startswith("file=")}
    assert {"file=shortest.py", "file=answer_chars.py", "file=answers_tsv.py", "file=quiz.py"} <= files


def test_the_model_backend(worked):
    assert metric(worked / "runs" / "backend", "capitals", "acc") == pytest.approx(2 / 3, abs=1e-12)
    assert metric(worked / "runs" / "backend", "echo", "exact_match") == 1.0


def test_the_metric_and_the_exporter(worked):
    assert metric(worked / "runs" / "more", "echo_more", "answer_chars") == 5.0
    assert (worked / "runs" / "more" / "answers.tsv").read_text() == "blue\tblue\nseven\tseven\noxygen\toxygen\n"


def test_the_dialect(worked):
    results = json.loads((worked / "runs" / "dialect" / "results.json").read_text())
    assert results["tasks"]["quiz/colours"]["dialect"] == "quiz"
    assert metric(worked / "runs" / "dialect", "quiz/colours", "acc") == pytest.approx(2 / 3, abs=1e-12)
