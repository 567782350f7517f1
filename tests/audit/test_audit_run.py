"""The audit through ``proctor run`` in a fresh interpreter, on the tiny model: a task with a duplicated choice
runs, its number is the one the rows give (computed here with transformers directly), and the finding reaches
the console (before the model loads) and results.json (the task's ``audit`` list and its warnings); the report
lists it too. ``--strict`` stops the same run before any model loads."""

from __future__ import annotations

import pytest

from tests.support.cli_runs import QUESTIONS, QUIZ, jsonl, proctor, results, run_proctor, write
from tests.support.hf_reference import direct_loglikelihood, reference  # noqa: F401  (fixture)

DUPLICATED = [*QUESTIONS[:4], {"id": "x", "question": "Sky?", "choices": ["blue", "Blue", "red"], "label": 2}]


def accuracy(reference, rows) -> float:  # noqa: F811
    hits = 0
    for row in rows:
        scores = [direct_loglikelihood(*reference, f"Q: {row['question']}\nA:", " " + c)[0] for c in row["choices"]]
        hits += max(range(len(scores)), key=scores.__getitem__) == row["label"]
    return hits / len(rows)


def test_run_records_a_finding_and_the_number_stays_the_rows(tiny_model_dir, reference, tmp_path):  # noqa: F811
    jsonl(tmp_path / "quiz" / "data.jsonl", DUPLICATED)
    write(tmp_path / "quiz" / "task.yaml", QUIZ)
    done = proctor("run", "quiz", "--model", str(tiny_model_dir), "-o", "run", cwd=tmp_path)
    console = done.stdout + done.stderr
    assert "audit [choices.duplicate]" in console and "row 5, field 'choices'" in console
    task = results(tmp_path / "run")["tasks"]["quiz"]
    assert task["metrics"]["acc"]["value"] == pytest.approx(accuracy(reference, DUPLICATED))
    (finding,) = task["audit"]
    assert finding["rule"] == "choices.duplicate" and finding["severity"] == "warning"
    assert (finding["row"], finding["field"], finding["sample"], finding["count"]) == (5, "choices", "x", 1)
    assert finding["file"].endswith("data.jsonl")
    assert any(w.startswith("audit [choices.duplicate]") for w in task["warnings"])
    assert any("quiz: audit [choices.duplicate]" in w for w in results(tmp_path / "run")["warnings"])
    proctor("report", "run", cwd=tmp_path)
    assert "choices.duplicate" in (tmp_path / "run" / "report.html").read_text()


def test_strict_stops_the_run_before_the_model_loads(tmp_path):
    jsonl(tmp_path / "quiz" / "data.jsonl", DUPLICATED)
    write(tmp_path / "quiz" / "task.yaml", QUIZ)
    # a model folder that does not exist: the run must stop at the audit, before the model is looked at
    done = run_proctor("run", "quiz", "--model", str(tmp_path / "no-model"), "-o", "run", "--strict", cwd=tmp_path)
    message = done.stdout + done.stderr
    assert done.returncode == 2, message
    assert "[choices.duplicate]" in message and "row 5, field 'choices'" in message
    assert "no-model" not in message and not (tmp_path / "run" / "results.json").exists()
