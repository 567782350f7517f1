"""What a run folder holds, as a teammate on a shared file system sees it: every file honours the umask
(atomic writes included), and the lm-eval export is named after the model as the user named it and
records the bootstrap resamples used."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

pytest.importorskip("lm_eval")

from tests.support.lmeval_quiz import (  # noqa: E402
    TEMPLATE,  # an lm-eval task YAML on a mapped local copy
)

TASK = "task: quiz_plain\n" + TEMPLATE
ROWS = [
    {"question": "what is two plus two", "options": ["three", "four"], "label": 1},
    {"question": "what colour is the sky", "options": ["blue", "green"], "label": 0},
    {"question": "what is frozen water", "options": ["steam", "ice"], "label": 1},
]


def test_run_folder_files_honour_the_umask_and_the_export_names_the_model_as_given(tiny_model_dir, tmp_path):
    (tmp_path / "quiz.yaml").write_text(TASK)
    data = tmp_path / "data"
    data.mkdir()
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    out = tmp_path / "run"
    # the model named by a relative folder, from its parent: the export's folder is that name
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "proctor.cli",
            "run",
            str(tmp_path / "quiz.yaml"),
            "--model",
            tiny_model_dir.name,
            "--lmeval-data",
            f"example/quiz:small={data}",
            "--bootstrap-iters",
            "500",
            "-o",
            str(out),
            "-q",
        ],
        capture_output=True,
        text=True,
        cwd=tiny_model_dir.parent,
        preexec_fn=lambda: os.umask(0o027),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # -q: no lm-eval / transformers progress bars either
    files = [p for p in out.rglob("*") if p.is_file() and p.name != ".lock"]
    names = {str(p.relative_to(out)) for p in files}
    assert {"results.json", "run.json", "samples.jsonl", "samples.parquet", "store.sqlite"} <= names
    modes = {str(p.relative_to(out)): stat.S_IMODE(p.stat().st_mode) for p in files}
    assert set(modes.values()) == {0o640}, modes  # 0666 less the umask, for every file alike
    (results_file,) = (out / "lm_eval").rglob("results_*.json")
    assert results_file.parent.name == tiny_model_dir.name
    exported = json.loads(results_file.read_text())
    assert exported["model_name"] == tiny_model_dir.name and exported["model_name_sanitized"] == tiny_model_dir.name
    assert exported["config"]["bootstrap_iters"] == 500
    results = json.loads((out / "results.json").read_text())
    assert results["model_info"]["model_name"] == tiny_model_dir.name
    assert results["tasks"]["quiz_plain"]["bootstrap_iters"] == 500
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]  # no temporary file left behind


def test_user_model_name_drops_the_backend_prefix_and_falls_back_to_the_models_name():
    from proctor.runs.lm_eval_layout import sanitize, user_model_name

    assert (
        user_model_name({"model_info": {"model_name": "hf:HuggingFaceTB/SmolLM2-360M"}}) == "HuggingFaceTB/SmolLM2-360M"
    )
    assert (
        sanitize(user_model_name({"model_info": {"model_name": "hf:HuggingFaceTB/SmolLM2-360M"}}))
        == "HuggingFaceTB__SmolLM2-360M"
    )
    assert user_model_name({"model_info": {"model_name": "smollm2"}}) == "smollm2"
    assert (
        user_model_name({"model_info": {"model_name": "C:/models/x"}}) == "C:/models/x"
    )  # a drive letter is no backend
    assert (
        user_model_name({"model": {"model": "SmolLM2-135M-Instruct", "path": "/root/.cache/proctor/models/x"}})
        == "SmolLM2-135M-Instruct"
    )


def test_atomic_write_replaces_in_one_step_with_the_umask_mode(tmp_path):
    from proctor.runs.results import write_text_atomic

    old = os.umask(0o022)
    try:
        target = tmp_path / "a.json"
        write_text_atomic(target, "one")
        write_text_atomic(target, "two")
    finally:
        os.umask(old)
    assert target.read_text() == "two" and stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]
