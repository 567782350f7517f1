"""The GLM example's own header says how to run it: that command, as written, runs (its module: needs
--trust-task-code, so the header must name it)."""

from __future__ import annotations

import shlex

from tests.conftest import REPO
from tests.support.cli_runs import proctor, results

EXAMPLE = REPO / "examples" / "glm130b" / "lambada_style" / "lambada_style.yaml"


def test_the_examples_header_command_runs_as_written(tiny_model_dir, tmp_path):
    header = next(line for line in EXAMPLE.read_text().splitlines() if line.startswith("# Run: "))
    words = shlex.split(header[len("# Run: ") :].partition("(")[0])
    assert words[:2] == ["proctor", "run"] and "--trust-task-code" in words
    proctor(*words[1:], "--model", str(tiny_model_dir), "--limit", "2", "-o", str(tmp_path / "run"), "-q", cwd=REPO)
    tasks = results(tmp_path / "run")["tasks"]
    assert {name: task["n_samples"] for name, task in tasks.items()} == {"lambada_style/validation": 2}
