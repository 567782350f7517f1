"""A finished run re-run with the same ``-o`` reports its stored results without loading the model; a changed
task file still recomputes. The model is the tiny Llama behind a ``--plugin`` backend that records each load in a
file, so "not loaded" is counted, not timed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli_runs import QUESTIONS, QUIZ, jsonl, proctor, results, write

WATCHED_PLUGIN = """\
from pathlib import Path

from proctor.models.builtin_backends import identity_hf, load_hf


def load(rest, **options):
    with open("loads.txt", "a") as out:  # one line per load, in the folder the command runs in
        out.write(rest + "\\n")
    return load_hf(rest, **options)


def register(registry):
    registry.add_model_backend("watched", load, identity=identity_hf)
"""


def _loads(folder: Path) -> int:
    loads = folder / "loads.txt"
    return len(loads.read_text().splitlines()) if loads.is_file() else 0


def _table_values(stdout: str) -> list[str]:
    """The results table's lines naming the task (its numbers), as printed."""
    return [line.strip() for line in stdout.splitlines() if "quiz" in line and "run folder" not in line]


def test_finished_run_reported_without_loading_and_changed_task_recomputes(tmp_path, tiny_model_dir):
    write(tmp_path / "quiz.yaml", QUIZ)
    jsonl(tmp_path / "data.jsonl", QUESTIONS)
    write(tmp_path / "watched.py", WATCHED_PLUGIN)
    args = ("run", "quiz.yaml", "--model", f"watched:{tiny_model_dir}", "--plugin", "watched.py", "-o", "run")
    first = proctor(*args, cwd=tmp_path)
    assert _loads(tmp_path) == 1
    stored = results(tmp_path / "run")
    assert stored["status"] == "complete"
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["attempts"][-1]["model_request"]

    again = proctor(*args, cwd=tmp_path)
    assert _loads(tmp_path) == 1  # the model did not load
    assert "already complete" in again.stderr and "(no model loaded)" in again.stderr
    complete = next(line for line in again.stderr.splitlines() if "already complete" in line)
    assert complete.startswith("already complete: ")  # a plain notice, not a WARNING line
    assert results(tmp_path / "run") == stored  # nothing rewritten
    assert _table_values(again.stdout) == _table_values(first.stdout) != []  # the same table, the same numbers

    other_options = proctor(*args, "--batch-size", "2", cwd=tmp_path)  # another backend option: the normal way
    assert _loads(tmp_path) == 2 and "already complete" not in other_options.stderr

    jsonl(tmp_path / "data.jsonl", QUESTIONS[:3])  # a changed task: its content hash differs
    changed = proctor(*args, "--update", cwd=tmp_path)
    assert _loads(tmp_path) == 3 and "already complete" not in changed.stderr
    assert results(tmp_path / "run")["tasks"]["quiz"]["n_samples"] == 3
