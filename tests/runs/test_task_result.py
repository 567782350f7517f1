"""A task's result is built as a typed ``TaskResult`` (runs/results_schema.py): each field is checked as it is set,
numbers keep the type they were computed with, and results.json lists the fields in the documented order."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from pydantic import ValidationError

from proctor.runs.task_result import TaskResult
from tests.conftest import REPO
from tests.support.fakes import write_tasks


def _minimal(**more) -> TaskResult:
    return TaskResult.model_validate(
        {
            "kind": "generate",
            "dialect": "native",
            "source": None,
            "version": "1",
            "changes": None,
            "hash": "h",
            "group": None,
            "n_samples": 3,
            "data": None,
            "metrics": {"exact_match": {"value": 2, "stderr": 0.5}},
            "higher_is_better": {"exact_match": True},
            "requests": {"total": 3, "unique": 3, "type": "generate"},
            "timing": {"model_seconds": 0.1, "total_seconds": 0.2},
            **more,
        }
    )


@pytest.mark.fast
def test_fields_set_are_written_in_the_listed_order_and_numbers_keep_their_type():
    result = _minimal()
    result.add_warning("first")
    result.usage = {"requests": 3, "prompt_tokens": 12, "estimated_cost": 0.25}
    result.set_fields({"n_shot": 5, "my_dialect_field": {"x": 1}})  # a task class's own report
    entry = result.as_dict()
    assert list(entry) == [
        "kind",
        "dialect",
        "source",
        "version",
        "changes",
        "hash",
        "group",
        "n_samples",
        "data",
        "metrics",
        "higher_is_better",
        "requests",
        "timing",
        "n_shot",
        "usage",
        "warnings",
        "my_dialect_field",
    ]
    assert entry["metrics"]["exact_match"] == {"value": 2, "stderr": 0.5}  # no n_scored: never set
    assert type(entry["metrics"]["exact_match"]["value"]) is int and entry["usage"]["requests"] == 3
    assert type(entry["usage"]["prompt_tokens"]) is int and entry["warnings"] == ["first"]
    assert entry["changes"] is None and "mc_format" not in entry  # set to None is written; never set is not


@pytest.mark.fast
@pytest.mark.parametrize(
    "field, value, where",
    [
        ("n_shot", "five", "n_shot"),
        ("mc_format", "letters", "mc_format"),
        ("truncated", {"count": 1}, "truncated.n"),
        ("usage", {"tokens": "many"}, "usage.tokens"),
        ("metrics", {"acc": {"stderr": 0.1}}, "metrics.acc.value"),
    ],
)
def test_a_wrong_value_is_refused_when_it_is_set(field, value, where):
    result = _minimal()
    with pytest.raises(ValidationError) as caught:
        result.set_fields({field: value})
    assert any(
        ".".join(str(p) for p in e["loc"]).startswith(where) for e in caught.value.errors()
    )  # the field is named


def test_a_run_writes_the_typed_entries_in_the_documented_order(tmp_path, tiny_model_dir):
    """`proctor run` in a fresh process: every task's keys follow docs/results.md's TaskResult table, and each
    multiple-choice accuracy is the mean of the per-sample values in samples.jsonl."""
    tasks = write_tasks(tmp_path / "tasks", n_mc=6, n_gen=4)
    out = tmp_path / "run"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "proctor.cli",
            "run",
            str(tasks),
            "--model",
            f"hf:{tiny_model_dir}",
            "-o",
            str(out),
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    table = (
        (REPO / "docs" / "results.md")
        .read_text(encoding="utf-8")
        .split("## A task (`TaskResult`)")[1]
        .split("## A metric entry")[0]
    )
    documented = re.findall(r"^\| `(\w+)` \|", table, flags=re.M)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {"mc_alpha", "mc_beta", "gen_gamma", "ppl_delta"} <= set(results["tasks"])
    for name, entry in results["tasks"].items():
        assert list(entry) == [f for f in documented if f in entry], name
    for name in ("mc_alpha", "mc_beta"):
        per_sample = [s["metrics"]["acc"] for s in samples if s["task"] == name]
        assert len(per_sample) == 6 and results["tasks"][name]["metrics"]["acc"]["value"] == pytest.approx(
            sum(per_sample) / 6, abs=1e-12
        )
        assert (
            results["tasks"][name]["mc_format"] == "loglikelihood" and type(results["tasks"][name]["n_samples"]) is int
        )
