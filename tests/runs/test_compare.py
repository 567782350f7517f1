"""proctor compare: paired tests on shared samples."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from proctor import evaluate
from proctor.cli import app
from proctor.runs.compare import compare_runs, mcnemar_exact, paired_bootstrap
from tests.support.fakes import FakeModel, write_tasks


def test_mcnemar_exact_matches_the_binomial_tail():
    a = np.array([1] * 1 + [0] * 9 + [1] * 5)
    b = np.array([0] * 1 + [1] * 9 + [1] * 5)
    only_a, only_b, p = mcnemar_exact(a, b)
    assert (only_a, only_b) == (1, 9)
    assert p == 2 * (1 + 10) / 1024
    assert mcnemar_exact(a, a)[2] == 1.0


def test_bootstrap_interval_brackets_the_mean_and_is_seeded():
    diff = np.random.default_rng(1).normal(0.3, 1.0, 200)
    low, high = paired_bootstrap(diff, n_boot=500, seed=3)
    assert low < diff.mean() < high
    assert (low, high) == paired_bootstrap(diff, n_boot=500, seed=3)


def _runs(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=40, n_gen=6, star_gold=True)
    base = evaluate([tasks], FakeModel(), output_dir=tmp_path / "base").run_dir
    rerun = evaluate([tasks], FakeModel(), output_dir=tmp_path / "rerun").run_dir
    better = evaluate([tasks], FakeModel(prefer_gold=4.0), output_dir=tmp_path / "better").run_dir
    return base, rerun, better


def test_compare_flags_a_planted_difference_and_not_an_identical_rerun(tmp_path):
    base, rerun, better = _runs(tmp_path)
    found = compare_runs([base, rerun, better], alpha=0.05, n_boot=500)
    same, planted = found["comparisons"]
    assert not any(m["significant"] for t in same["tasks"].values() for m in t["metrics"].values())
    acc = planted["tasks"]["mc_alpha"]["metrics"]["acc"]
    assert acc["test"] == "mcnemar" and acc["significant"] and acc["diff"] > 0.3
    assert acc["mcnemar"]["p_value"] < 0.001 and acc["ci"][0] > 0
    brier = planted["tasks"]["mc_alpha"]["metrics"]["brier_score"]
    assert brier["test"] == "bootstrap" and brier["significant"] and brier["diff"] < 0
    # Generation is untouched by the planted skill: the same answers, nothing flagged.
    assert not any(m["significant"] for m in planted["tasks"]["gen_gamma"]["metrics"].values())


def test_compare_cli_prints_and_writes_json(tmp_path):
    base, rerun, better = _runs(tmp_path)
    out = tmp_path / "cmp.json"
    result = CliRunner().invoke(
        app, ["compare", str(base), str(better), "--alpha", "0.01", "--resamples", "300", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    flagged = sum(
        m["significant"]
        for t in json.loads(out.read_text())["comparisons"][0]["tasks"].values()
        for m in t["metrics"].values()
    )
    assert flagged > 0 and f"{flagged} significant difference(s) at alpha=0.01" in result.output
    data = json.loads(out.read_text())
    assert data["alpha"] == 0.01 and data["comparisons"][0]["tasks"]["mc_beta"]["metrics"]["acc"]["significant"]


def _shared_means(run_a, run_b, task, metric):
    """Independent of proctor: both runs' per-sample values matched by id, read straight from samples.jsonl."""

    def values(run):
        out = {}
        for line in (run / "samples.jsonl").read_text().splitlines():
            record = json.loads(line)
            if record["task"] == task:
                out[str(record["id"])] = float(record["metrics"][metric])
        return out

    a, b = values(run_a), values(run_b)
    shared = [i for i in a if i in b]
    return np.array([a[i] for i in shared]), np.array([b[i] for i in shared])


def test_compare_command_means_are_over_shared_samples_and_json_goes_into_the_first_run(tmp_path):
    """A has 40 samples, B the first 25 with a planted skill: A and B - A are both over the 25 shared samples."""
    import subprocess
    import sys

    from scipy.stats import binomtest

    tasks = write_tasks(tmp_path / "tasks", n_mc=40, n_gen=6, star_gold=True)
    run_a = evaluate([tasks], FakeModel(), output_dir=tmp_path / "a").run_dir
    run_b = evaluate([tasks], FakeModel(prefer_gold=1.5), output_dir=tmp_path / "b", limit=25).run_dir
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "proctor.cli", "compare", str(run_a), str(run_b), "--resamples", "1000"],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env={**__import__("os").environ, "COLUMNS": "80"},
    )
    assert proc.returncode == 0, proc.stderr
    assert list(elsewhere.iterdir()) == []  # nothing written into the current folder
    written = run_a / "comparison_vs_b.json"
    assert f"comparison: {written}" in proc.stdout.replace("\n", "")
    entry = json.loads(written.read_text())["comparisons"][0]["tasks"]["mc_alpha"]
    assert (entry["n_a"], entry["n_b"], entry["n_shared"]) == (40, 25, 25)
    a, b = _shared_means(run_a, run_b, "mc_alpha", "acc")
    acc = entry["metrics"]["acc"]
    assert acc["n_shared"] == a.size == 25
    assert acc["a"] == pytest.approx(a.mean()) and acc["b"] == pytest.approx(b.mean())
    assert acc["diff"] == pytest.approx(b.mean() - a.mean())
    whole_a = json.loads((run_a / "results.json").read_text())["tasks"]["mc_alpha"]["metrics"]["acc"]["value"]
    assert acc["run_a"] == whole_a and whole_a != pytest.approx(a.mean())  # the populations differ here
    only_a, only_b = int(np.sum((a == 1) & (b == 0))), int(np.sum((a == 0) & (b == 1)))
    assert acc["mcnemar"]["p_value"] == pytest.approx(binomtest(min(only_a, only_b), only_a + only_b, 0.5).pvalue)
    diff = b - a
    half = 1.96 * diff.std(ddof=1) / np.sqrt(diff.size)  # the normal interval: the bootstrap's must be near it
    low, high = acc["ci"]
    assert low < diff.mean() < high and abs((high - low) - 2 * half) < 0.35 * 2 * half
    # the printed row shows the shared-sample means, not A's whole-run mean
    row = next(line for line in proc.stdout.splitlines() if line.strip().startswith("acc ") and "mc_alpha" not in line)
    assert f"{a.mean():.4f}" in row and f"{b.mean():.4f}" in row and f"{diff.mean():.4f}" in row
    assert re.search(r"mc_alpha\s+n=40\s+n=25\s+25 shared", proc.stdout)
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda run: (run / "results.json").write_text("{not json"), "is not valid JSON"),
        (lambda run: (run / "results.json").write_text("[1, 2]"), "the whole file: Input should be an object"),
        (
            lambda run: (run / "results.json").write_text('{"tasks": {"mc_alpha": {"metrics": 3}}}'),
            "field 'tasks.mc_alpha.metrics'",
        ),
        (lambda run: (run / "results.json").unlink(), "no results.json"),
        (lambda run: (run / "samples.jsonl").write_text("{broken\n"), "samples.jsonl:1: not a JSON line"),
    ],
)
def test_compare_refuses_a_corrupt_run_in_one_line(tmp_path, damage, message):
    base, rerun, _ = _runs(tmp_path)
    results = json.loads((rerun / "results.json").read_text())
    results.pop("samples_bytes", None)  # a rewritten samples.jsonl is read whole
    (rerun / "results.json").write_text(json.dumps(results))
    damage(rerun)
    result = CliRunner().invoke(app, ["compare", str(base), str(rerun), "-o", str(tmp_path / "c.json")])
    assert result.exit_code != 0 and result.exception is not None
    assert message in str(result.exception)


def test_compare_that_cannot_write_its_file_says_so(tmp_path):
    base, rerun, _ = _runs(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = CliRunner().invoke(app, ["compare", str(base), str(rerun), "-o", str(blocker / "c.json")])
    assert result.exit_code != 0 and "name another file with -o" in str(result.exception)
