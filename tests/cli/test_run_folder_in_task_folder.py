"""A run folder written inside the task folder (``-o tasks/out``) is not read back as task files: the next run of the
folder finds the same tasks, with no warning about the run's saved configurations, and gives the same numbers; a run
folder named as the tasks says what it is."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from tests.conftest import EXAMPLES


def proctor(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "proctor.cli", *args], cwd=cwd, capture_output=True, text=True)


def test_a_run_folder_inside_the_task_folder_is_passed_over(tiny_model_dir, tmp_path):
    shutil.copytree(EXAMPLES / "quickstart", tmp_path / "qs")
    model = ["--model", str(tiny_model_dir), "-t", "*_mc", "--limit", "6", "-q"]
    first = proctor("run", "qs", "-o", "qs/out", *model, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    listing = proctor("ls", "qs", cwd=tmp_path)
    assert listing.returncode == 0 and "2 task(s)" in listing.stdout, listing.stdout + listing.stderr
    assert "skipping" not in listing.stderr and "out/tasks" not in listing.stderr, listing.stderr
    second = proctor("run", "qs", "-o", "qs/again", *model, cwd=tmp_path)
    assert second.returncode == 0 and "skipping" not in second.stderr, second.stderr
    a, b = (json.loads((tmp_path / "qs" / d / "results.json").read_text()) for d in ("out", "again"))
    assert list(b["tasks"]) == ["quickstart_science_mc"]
    for metric in ("acc", "acc_norm"):
        assert (
            b["tasks"]["quickstart_science_mc"]["metrics"][metric]["value"]
            == (a["tasks"]["quickstart_science_mc"]["metrics"][metric]["value"])
        )
    named = proctor("run", "qs/out", *model, cwd=tmp_path)
    assert named.returncode != 0 and "Traceback" not in named.stderr
    assert "qs/out: a run folder" in named.stderr and "proctor report" in named.stderr, named.stderr
