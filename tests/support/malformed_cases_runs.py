"""Malformed run folders and command-line values for tests/cross_cutting/test_malformed_inputs.py, beyond the
run-folder cases of malformed_cases_more.py: each was seen to end in a traceback, an internal error, a raw
exception text, an error only after the model loaded, or exit 0 on nonsense, before its fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support.malformed_cases import Case
from tests.support.malformed_cases_more import _run_folder

RUNS: list[Case] = []
RUN = ["run", "task.yaml", "-o", "out"]


def add(id, args, expect, files=None, before_model=True, setup=None, code=None):
    assert id.startswith("runs3-"), id
    RUNS.append(Case(id, list(args), list(expect), dict(files or {}), before_model, setup, code))


def _edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _renamed(old: str, new: str, *, task: bool):
    """Run folders a and b, b's task (``task``) or metric renamed from ``old`` to ``new`` in both its files."""

    def setup(folder: Path) -> None:
        _run_folder(folder, "a")
        run = _run_folder(folder, "b")
        lines = []
        for line in (run / "samples.jsonl").read_text().splitlines():
            record = json.loads(line)
            if task:
                record["task"] = new
            else:
                record["metrics"] = {new: record["metrics"].pop(old)}
            lines.append(json.dumps(record) + "\n")
        (run / "samples.jsonl").write_text("".join(lines))

        def change(results):
            results["samples_bytes"] = len("".join(lines).encode())
            if task:
                results["tasks"][new] = results["tasks"].pop(old)
            else:
                metrics = results["tasks"]["arith"]["metrics"]
                metrics[new] = metrics.pop(old)

        _edit_json(run / "results.json", change)

    return setup


def _samples_folder(folder: Path) -> None:
    """A run folder whose samples.jsonl is a folder (a copy gone wrong, a tool that made it one)."""
    run = _run_folder(folder)
    (run / "samples.jsonl").unlink()
    (run / "samples.jsonl").mkdir()


def _two_runs_one_samples_folder(folder: Path) -> None:
    _run_folder(folder, "a")
    run = _run_folder(folder, "b")
    (run / "samples.jsonl").unlink()
    (run / "samples.jsonl").mkdir()


def _link(name: str, target: str):
    def setup(folder: Path) -> None:
        os.symlink(target, folder / name)

    return setup


def _manifest(change):
    """A run folder ``out`` whose run.json is edited by ``change``."""

    def setup(folder: Path) -> None:
        run = _run_folder(folder, "out")
        _edit_json(run / "run.json", change)

    return setup


def _manifest_bytes(content: bytes):
    def setup(folder: Path) -> None:
        run = _run_folder(folder, "out")
        (run / "run.json").write_bytes(content)

    return setup


# --- compare --------------------------------------------------------------------------------------------
def _two(folder: Path) -> None:
    _run_folder(folder, "a")
    _run_folder(folder, "b")


# a negative bootstrap seed reached numpy: "internal error: ValueError: expected non-negative integer"
add("runs3-compare-seed-negative", ["compare", "a", "b", "--seed", "-1"], ["--seed"], setup=_two)
# runs sharing no task compared nothing and exited 0 ("0 significant difference(s)")
add(
    "runs3-compare-no-shared-task",
    ["compare", "a", "b"],
    ["share no task", "arith", "other"],
    setup=_renamed("arith", "other", task=True),
)
# runs sharing a task but no metric of it compared nothing and exited 0
add(
    "runs3-compare-no-shared-metric",
    ["compare", "a", "b"],
    ["no metric", "acc", "acc_norm"],
    setup=_renamed("acc", "acc_norm", task=False),
)

# a run compared with itself showed every difference zero and exited 0, as if two runs had agreed
add("runs3-compare-same-run", ["compare", "a", "a"], ["a is named twice", "itself"], setup=_two)
add("runs3-compare-same-run-slash", ["compare", "a", "./a/"], ["a is named twice", "itself"], setup=_two)
add("runs3-compare-same-run-dots", ["compare", "a", "b/../a"], ["the same run folder", "itself"], setup=_two)


def _two_and_a_link(folder: Path) -> None:
    _two(folder)
    (folder / "link").symlink_to(folder / "b", target_is_directory=True)


add("runs3-compare-same-run-link", ["compare", "a", "b", "link"], ["b and link", "itself"], setup=_two_and_a_link)

# --- samples.jsonl that is a folder: "internal error: IsADirectoryError: [Errno 21] Is a directory" ------
add("runs3-report-samples-is-folder", ["report", "run"], ["run/samples.jsonl", "folder"], setup=_samples_folder)
add("runs3-export-samples-is-folder", ["export", "run"], ["run/samples.jsonl", "folder"], setup=_samples_folder)
add(
    "runs3-export-parquet-samples-is-folder",
    ["export", "run", "--to", "parquet"],
    ["run/samples.jsonl", "folder"],
    setup=_samples_folder,
)
add(
    "runs3-compare-samples-is-folder",
    ["compare", "a", "b"],
    ["b/samples.jsonl", "folder"],
    setup=_two_runs_one_samples_folder,
)

# --- run's options ---------------------------------------------------------------------------------------
# a repeated --var key: the last one won without a word (--model-arg refuses its repeated keys)
add("runs3-run-var-twice", RUN + ["--var", "X=1", "--var", "X=2"], ["--var", "'X'", "twice"])
add(
    "runs3-run-var-and-data-dir",
    RUN + ["--data-dir", ".", "--var", "PROCTOR_DATA=/data"],
    ["--var", "PROCTOR_DATA", "--data-dir"],
)

# -o naming a run folder's own file: the page or comparison replaced it, exit 0, and the run was gone
add(
    "runs3-report-over-results",
    ["report", "run", "-o", "run/results.json"],
    ["run/results.json", "-o"],
    setup=_run_folder,
)
add(
    "runs3-report-over-samples",
    ["report", "run", "-o", "run/samples.jsonl"],
    ["run/samples.jsonl", "-o"],
    setup=_run_folder,
)
add("runs3-compare-over-run-json", ["compare", "a", "b", "-o", "b/run.json"], ["b/run.json", "-o"], setup=_two)
add("runs3-view-over-results", ["view", ".", "-o", "run/results.json"], ["run/results.json", "-o"], setup=_run_folder)

# results.json from a later proctor with a field this one does not know: "Extra inputs are not permitted
# (edited by hand, or damaged?); re-run the run to rebuild it" (it is neither)
add(
    "runs3-report-results-from-newer-proctor",
    ["report", "run"],
    ["run/results.json", "99.1.0", "upgrade"],
    setup=lambda f: _edit_json(_run_folder(f) / "results.json", lambda r: r.update(proctor_version="99.1.0", later=1)),
)

# --- export's options ------------------------------------------------------------------------------------
# --database without --to duckdb was ignored: lm-eval and parquet files were written, no database, exit 0
add(
    "runs3-export-database-without-duckdb",
    ["export", "run", "--database", "runs.duckdb"],
    ["--database", "duckdb"],
    setup=_run_folder,
)

# two runs whose folders share a name: "wrote runs.duckdb (2 run(s))", exit 0, and the first run's rows replaced
# by the second's (the tables key a run by its folder's name)
add(
    "runs3-export-duckdb-same-folder-name",
    ["export", "one/run", "two/run", "--to", "duckdb", "--database", "runs.duckdb"],
    ["one/run", "two/run", "'run'", "rename"],
    setup=lambda f: (_run_folder(f / "one"), _run_folder(f / "two")),
)


# a run's saved task configuration (tasks/NAME.yaml, read by the lm-eval export) damaged: "internal error:
# ParserError", "UnicodeDecodeError", "AttributeError: 'list' object has no attribute 'get'"
def _task_config(content: bytes):
    def setup(folder: Path) -> None:
        run = _run_folder(folder)
        (run / "tasks").mkdir()
        (run / "tasks" / "arith.yaml").write_bytes(content)

    return setup


LM_EVAL = ["export", "run", "--to", "lm-eval"]
add("runs3-export-task-config-not-yaml", LM_EVAL, ["run/tasks/arith.yaml", "yaml"], setup=_task_config(b"spec: {{{\n"))
add("runs3-export-task-config-binary", LM_EVAL, ["run/tasks/arith.yaml", "utf-8"], setup=_task_config(b"\xff\xfe\x00"))
add("runs3-export-task-config-list", LM_EVAL, ["run/tasks/arith.yaml", "spec"], setup=_task_config(b"- 1\n"))
add(
    "runs3-export-task-config-fewshot-number",
    LM_EVAL,
    ["run/tasks/arith.yaml", "spec.fewshot", "mapping"],
    setup=_task_config(b"spec:\n  kind: multiple_choice\n  fewshot: 5\n"),
)
# "run/tasks: ... does not have proctor's layout (AttributeError ...)" naming no file or field; a field of the right
# shape holding the wrong type: "internal error: ValueError: invalid literal for int()",
# and a stop string that is text, not a list, exported as one stop per character with exit 0
add(
    "runs3-export-task-config-count-text",
    LM_EVAL,
    ["run/tasks/arith.yaml", "spec.fewshot.count", "whole number"],
    setup=_task_config(b"spec:\n  kind: multiple_choice\n  fewshot: {count: five}\n"),
)
add(
    "runs3-export-task-config-stop-text",
    LM_EVAL,
    ["run/tasks/arith.yaml", "spec.generation.stop", "list"],
    setup=_task_config(b"spec:\n  kind: generate\n  generation: {stop: '###'}\n"),
)
add(
    "runs3-export-task-config-data-text",
    LM_EVAL,
    ["run/tasks/arith.yaml", "spec.data[0]", "mapping"],
    setup=_task_config(b"spec:\n  kind: multiple_choice\n  data: [quiz.jsonl]\n"),
)


def _record_fields(**changes):
    """A run folder whose first sample record has ``changes`` (None: the field removed), results.json still covering
    the file."""

    def setup(folder: Path) -> None:
        run = _run_folder(folder)
        lines = (run / "samples.jsonl").read_text().splitlines()
        first = json.loads(lines[0])
        first.update(changes)
        first = {k: v for k, v in first.items() if v is not None}
        text = "".join(line + "\n" for line in [json.dumps(first), *lines[1:]])
        (run / "samples.jsonl").write_text(text)
        _edit_json(run / "results.json", lambda r: r.update(samples_bytes=len(text.encode())))

    return setup


# sample records edited by hand: "run/tasks: a task configuration does not have proctor's layout (AttributeError:
# 'list' object has no attribute 'values' ...)", blaming a file that is fine and naming no line or field
add(
    "runs3-export-record-filtered-resps-list",
    LM_EVAL,
    ["run/samples.jsonl:1", "filtered_resps", "object"],
    setup=_record_fields(arguments=[["q", " a"]], resps=[["-1.0"]], filtered_resps=[["1"]]),
)
add(
    "runs3-export-record-epochs-numbers",
    LM_EVAL,
    ["run/samples.jsonl:1", "epochs[0]", "object"],
    setup=_record_fields(choices=None, generation="4", epochs=[1, 2]),
)

# --- --output / --cache through a symbolic link that leads nowhere -------------------------------------
# --cache: "internal error: FileExistsError: [Errno 17] File exists" after the model loaded
add(
    "runs3-run-cache-symlink-loop",
    RUN + ["--cache", "loop"],
    ["--cache", "loop", "symbolic link"],
    setup=_link("loop", "loop"),
)
add(
    "runs3-run-cache-dangling-symlink",
    RUN + ["--cache", "gone"],
    ["--cache", "gone", "symbolic link", "missing/cache"],
    setup=_link("gone", "missing/cache"),
)
add(
    "runs3-run-cache-file-in-dangling-symlink",
    RUN + ["--cache", "gone/shared.sqlite"],
    ["--cache", "gone", "symbolic link"],
    setup=_link("gone", "missing/cache"),
)
# --output: "cannot open the run folder's lock file loop/.lock: File exists"
add(
    "runs3-run-output-symlink-loop",
    ["run", "task.yaml", "-o", "loop"],
    ["--output", "loop", "symbolic link"],
    setup=_link("loop", "loop"),
)
add(
    "runs3-run-output-dangling-symlink",
    ["run", "task.yaml", "-o", "gone"],
    ["--output", "gone", "symbolic link", "missing/run"],
    setup=_link("gone", "missing/run"),
)

# without --output a run makes its folder under ./runs: a file or a link to nowhere there failed only after the
# model loaded ("cannot open the run folder's lock file runs/..._tiny/.lock: Not a directory")
add("runs3-run-runs-folder-is-file", ["run", "task.yaml"], ["runs", "--output", "file"], {"runs": "notes\n"})
add(
    "runs3-run-runs-folder-symlink-loop",
    ["run", "task.yaml"],
    ["runs", "--output", "symbolic link"],
    setup=_link("runs", "runs"),
)


# a folder where the run writes a task's configuration: "internal error: IsADirectoryError" after the model loaded,
# results.json already removed
def _task_config_folder(folder: Path) -> None:
    run = _run_folder(folder, "out")
    (run / "tasks" / "arith.yaml").mkdir(parents=True)


add("runs3-resume-task-config-is-folder", RUN, ["out/tasks/arith.yaml", "folder"], setup=_task_config_folder)

# --- run.json of a run folder continued ------------------------------------------------------------------
# without 'tasks': "task 'arith' was not in this run" (the field's absence not named)
add("runs3-resume-manifest-no-tasks", RUN, ["out/run.json", "'tasks'"], setup=_manifest(lambda m: m.pop("tasks")))
# without 'model_hash': "model changed ()" only after the model loaded
add(
    "runs3-resume-manifest-no-model-hash",
    RUN,
    ["out/run.json", "'model_hash'"],
    setup=_manifest(lambda m: m.pop("model_hash")),
)
add("runs3-resume-manifest-no-model", RUN, ["out/run.json", "'model'"], setup=_manifest(lambda m: m.pop("model")))
add("runs3-resume-manifest-no-options", RUN, ["out/run.json", "'options'"], setup=_manifest(lambda m: m.pop("options")))
# not UTF-8: Python's codec text ("'utf-8' codec can't decode byte 0xff in position 13")
add(
    "runs3-resume-manifest-not-utf8",
    RUN,
    ["out/run.json", "utf-8", "offset 13", "--restart"],
    setup=_manifest_bytes(b'{"created": "\xff"}'),
)
# truncated: the JSON decoder's text ("Expecting ',' delimiter: line 1 column 20 (char 19)")
add(
    "runs3-resume-manifest-truncated",
    RUN,
    ["out/run.json", "not valid json", "line 1", "--restart"],
    setup=_manifest_bytes(b'{"created": "2025-01-01", "mod'),
)
add(
    "runs3-resume-manifest-empty",
    RUN,
    ["out/run.json", "empty", "--restart"],
    setup=_manifest_bytes(b""),
)
