"""--limit-per-part: N rows (or a fraction) of each part of a task's breakdown, as lm-eval limits each
subtask of a group; --limit keeps cutting the task as a whole."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import Counter

import pytest

from proctor import evaluate
from proctor.core.errors import ProctorError
from tests.conftest import EXAMPLES, shared_path
from tests.support.fakes import FakeModel

SUBJECTS = ["algebra"] * 5 + ["botany"] * 3 + ["chemistry"] * 1


def _task(tmp_path):
    rows = [
        {"id": f"r{i}", "subject": s, "q": f"question {i}", "options": ["a", "b"], "label": i % 2}
        for i, s in enumerate(SUBJECTS[i] for i in (0, 5, 1, 6, 8, 2, 7, 3, 4))
    ]  # parts interleaved
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "task.yaml").write_text(
        "name: parts\nkind: multiple_choice\ndata: {path: rows.jsonl, id: id}\nprompt: '{{ q }}'\n"
        "choices: '{{ options }}'\ntarget: '{{ label }}'\nmetrics: [acc]\nbreakdown: subject\n"
    )
    return tmp_path / "task.yaml", rows


@pytest.mark.fast
def test_limit_per_part_takes_the_first_rows_of_each_part(tmp_path):
    task, rows = _task(tmp_path)
    result = evaluate([task], FakeModel(), output_dir=tmp_path / "a", limit=2, limit_per_part=True)
    kept = [json.loads(line)["id"] for line in (tmp_path / "a" / "samples.jsonl").read_text().splitlines()]
    expected, seen = [], Counter()
    for row in rows:  # independent: the first two of each subject, in the data's order
        if seen[row["subject"]] < 2:
            seen[row["subject"]] += 1
            expected.append(row["id"])
    assert kept == expected
    parts = result.tasks["parts"]["breakdown"]["subject"]
    assert {k: v["n_samples"] for k, v in parts.items()} == {"algebra": 2, "botany": 2, "chemistry": 1}
    assert result.results["limit"] == 2 and result.results["limit_per_part"] is True
    whole = evaluate([task], FakeModel(), output_dir=tmp_path / "b", limit=2)  # --limit: the first two rows
    assert whole.tasks["parts"]["n_samples"] == 2 and "limit_per_part" not in whole.results
    fraction = evaluate([task], FakeModel(), output_dir=tmp_path / "c", limit=0.5, limit_per_part=True)
    sizes = Counter(SUBJECTS)
    assert {k: v["n_samples"] for k, v in fraction.tasks["parts"]["breakdown"]["subject"].items()} == {
        k: math.ceil(n * 0.5) for k, n in sizes.items()
    }  # lm-eval's rounding, per part


@pytest.mark.fast
def test_a_run_folder_does_not_mix_limit_modes(tmp_path):
    task, _ = _task(tmp_path)
    evaluate([task], FakeModel(), output_dir=tmp_path / "run", limit=2, limit_per_part=True)
    with pytest.raises(ProctorError, match="limit"):
        evaluate([task], FakeModel(), output_dir=tmp_path / "run", limit=2)


def test_limit_per_part_on_mmlu_takes_each_subject(tiny_model_dir, tmp_path):
    data = shared_path("data")
    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "proctor.cli",
            "run",
            str(EXAMPLES / "benchmarks" / "mmlu.yaml"),
            "--data-dir",
            str(data),
            "--model",
            str(tiny_model_dir),
            "--limit-per-part",
            "2",
            "-o",
            str(out),
            "-q",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    subjects = sorted(p.name[: -len("_test.csv")] for p in (data / "mmlu").glob("*_test.csv"))
    results = json.loads((out / "results.json").read_text())
    parts = results["tasks"]["mmlu"]["breakdown"]["subject"]
    assert sorted(parts) == subjects and all(p["n_samples"] == 2 for p in parts.values())
    assert results["tasks"]["mmlu"]["n_samples"] == 2 * len(subjects)
    accs = [parts[s]["metrics"]["acc"]["value"] for s in subjects]
    assert results["tasks"]["mmlu"]["metrics"]["acc"]["value"] == pytest.approx(sum(accs) / len(accs))  # equal parts
    for subject in subjects:  # the table prints each part with its count
        assert f"{subject} (2): acc = " in proc.stdout
