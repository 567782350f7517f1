"""One set of replies, one number per metric, whatever the entry path: the same AISteer360 use case file run by
`proctor run` in a fresh process, through the Python API (`run_use_cases`, and `generate` + `evaluate` called
directly) and through AISteer360's `Benchmark` gives the same replies and the same evaluations, and
MCQAPositionalBias is AISteer360's formula (K = the letters observed) on them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, shared_path
from tests.support.aisteer_reference import independent_accuracy, independent_bias

DATA = ("examples", "aisteer360", "notebooks", "benchmarks", "commonsense_mcqa", "data", "evaluation_qa.first100.jsonl")

USE_CASE_FILE = """\
# AISteer360's names, as a notebook or use-case file writes them
from aisteer360.evaluation.metrics.custom.commonsense_mcqa.mcqa_accuracy import MCQAAccuracy
from aisteer360.evaluation.metrics.custom.commonsense_mcqa.mcqa_calibration import MCQACalibration
from aisteer360.evaluation.metrics.custom.commonsense_mcqa.mcqa_positional_bias import MCQAPositionalBias
from aisteer360.evaluation.use_cases.commonsense_mcqa.use_case import CommonsenseMCQA

use_case = CommonsenseMCQA(
    evaluation_data={data!r},
    evaluation_metrics=[MCQAAccuracy(), MCQAPositionalBias(), MCQACalibration()],
    num_samples=3,
    num_shuffling_runs=2,
    seed=555,
)
gen_kwargs = {{"max_new_tokens": 2}}
batch_size = 4
"""


def plain(value):
    return json.loads(json.dumps(value, default=str))


def test_one_number_per_metric_whatever_the_entry_path(tmp_path):
    from proctor.dialects.aisteer import run_use_cases
    from proctor.dialects.aisteer.aisteer_names import aisteer360_names
    from proctor.dialects.aisteer.runfile import load_use_case_file
    from proctor.models.registry import load_model

    source = tmp_path / "use_case.py"
    source.write_text(USE_CASE_FILE.format(data=str(shared_path(*DATA))), encoding="utf-8")
    name = "use_case:CommonsenseMCQA"

    # 1. proctor run, in a fresh process
    cli_dir = tmp_path / "cli"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "proctor.cli",
            "run",
            str(source),
            "--model",
            "smollm2",
            "--batch-size",
            "4",
            "-o",
            str(cli_dir),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert done.returncode == 0, done.stderr
    results = json.loads((cli_dir / "results.json").read_text())
    records = [json.loads(line) for line in (cli_dir / "samples.jsonl").read_text().splitlines() if line.strip()]
    paths = {"proctor run": ([g for r in records for g in r["generations"]], results["tasks"][name]["evaluations"])}

    model = load_model("smollm2", batch_size=4)
    # 2. the Python API: run_use_cases, and the use case's own generate + evaluate
    case, gen_kwargs, call = load_use_case_file(source)
    api = run_use_cases(case, model, gen_kwargs=gen_kwargs, batch_size=call["batch_size"], output_dir=tmp_path / "api")
    api_records = [
        json.loads(line) for line in (tmp_path / "api" / "samples.jsonl").read_text().splitlines() if line.strip()
    ]
    paths["run_use_cases"] = (
        [g for r in api_records for g in r["generations"]],
        api.results["tasks"][case.name]["evaluations"],
    )
    case, gen_kwargs, call = load_use_case_file(source)
    generations = case.generate(model, gen_kwargs=gen_kwargs, batch_size=call["batch_size"])
    paths["generate + evaluate"] = (generations, case.evaluate(generations))
    # 3. AISteer360's Benchmark, by its AISteer360 name
    with aisteer360_names():
        from aisteer360.evaluation.benchmark import Benchmark
    case, gen_kwargs, call = load_use_case_file(source)
    profiles = Benchmark(
        use_case=case,
        base_model_name_or_path=model,
        steering_pipelines={"baseline": []},
        gen_kwargs=gen_kwargs,
        batch_size=call["batch_size"],
        save_dir=tmp_path / "bench",
    ).run()
    paths["Benchmark"] = (profiles["baseline"][0]["generations"], profiles["baseline"][0]["evaluations"])

    replies = {path: [g["response"] for g in gens] for path, (gens, _) in paths.items()}
    first = replies["proctor run"]
    assert len(first) == 6 and all(r == first for r in replies.values()), replies
    evaluations = {path: plain(ev) for path, (_, ev) in paths.items()}
    for path, ev in evaluations.items():
        assert ev == evaluations["proctor run"], path

    gens = paths["proctor run"][0]
    qids = [g["question_id"] for g in gens]
    refs = [g["reference_answer"] for g in gens]
    ev = evaluations["proctor run"]
    if any(r is not None for r in first):
        assert (ev["MCQAPositionalBias"]["mean"], ev["MCQAPositionalBias"]["std"]) == pytest.approx(
            independent_bias(first, qids)
        )
        trial_mean, _, question_mean, _ = independent_accuracy(first, refs, qids)
        assert (ev["MCQAAccuracy"]["trial_mean"], ev["MCQAAccuracy"]["question_mean"]) == pytest.approx(
            (trial_mean, question_mean)
        )
    else:
        assert ev["MCQAPositionalBias"]["mean"] is None
