"""AISteer360's own file formats run unmodified: use-case files importing ``aisteer360.evaluation``,
metric files that set ``self.name``, class-only files with data and metrics from the command line or
a config file, rows without ids, ``confidence_scores``, and a benchmark script using AISteer360's
``Benchmark`` constructor. Expected numbers use AISteer360's formulas, written out here."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from proctor.api import evaluate
from proctor.cli import app
from proctor.core.errors import TaskDefinitionError
from proctor.dialects.aisteer import MCQACalibration, Metric
from proctor.dialects.aisteer.aisteer_names import aisteer360_names
from proctor.dialects.aisteer.runconfig import command_line_config
from proctor.dialects.aisteer.runfile import file_tasks, load_use_case_file
from tests.conftest import TEST_DATA

UPSTREAM = TEST_DATA / "aisteer360"
MCQA_FILE = UPSTREAM / "commonsense_mcqa" / "use_case.py"
MCQA_DATA = UPSTREAM / "commonsense_mcqa" / "evaluation_qa.jsonl"
IF_FILE = UPSTREAM / "instruction_following" / "use_case.py"
IF_DATA = UPSTREAM / "instruction_following" / "evaluation_data.jsonl"


# ---------------------------------------------------------------- AISteer360's formulas, written out
def upstream_accuracy(responses, references, question_ids):
    """mcqa_accuracy.py: attempts with a response; strict-majority vote per question."""
    attempt = [c.strip().upper() == a.strip().upper() for c, a in zip(responses, references) if c is not None]
    trial_mean = sum(attempt) / len(attempt) if attempt else 0.0
    votes = defaultdict(list)
    for qid, ok in zip(question_ids, attempt):  # (upstream zips these even when None responses were dropped)
        votes[qid].append(ok)
    majority = [int(sum(v) > len(v) / 2) for v in votes.values()]
    return trial_mean, sum(majority) / len(votes) if votes else 0.0


def upstream_positional_bias(responses, question_ids):
    """mcqa_positional_bias.py: K = letters observed."""
    valid = [r for r in responses if r is not None]
    counts = Counter(valid)
    positions = sorted(counts)
    expected = 1 / len(positions)
    return float(np.mean([abs(counts[p] / len(valid) - expected) for p in positions]))


def upstream_ece(responses, answers, confidences, n_bins=10):
    """mcqa_calibration.py: numpy linspace bins, the last one closed."""
    kept = [(r, a, c) for r, a, c in zip(responses, answers, confidences) if c is not None]
    responses, answers, conf = zip(*kept)
    conf = np.array(conf)
    acc = np.array([r == a for r, a in zip(responses, answers)], dtype=float)
    edges = np.linspace(0, 1, n_bins + 1)
    ece = 0.0
    for i in range(n_bins):
        upper = conf <= edges[i + 1] if i == n_bins - 1 else conf < edges[i + 1]
        in_bin = (conf >= edges[i]) & upper
        if np.mean(in_bin) > 0:
            ece += np.mean(in_bin) * abs(np.mean(conf[in_bin]) - np.mean(acc[in_bin]))
    return float(ece), float(np.mean(conf)), float(np.mean(conf) - np.mean(acc))


def read_samples(run_dir: Path) -> list[dict]:
    """Every generation, in order (samples.jsonl has a record per row holding the row's generations)."""
    records = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines() if line.strip()]
    return [{"task": r["task"], **g} for r in records for g in r["generations"]]


# ---------------------------------------------------------------- names exist only while user code runs
def test_aisteer360_names_exist_only_inside_the_block():
    code = (
        "import sys, proctor, proctor.dialects.aisteer, proctor.cli; "
        "print(sorted(k for k in sys.modules if k.startswith('aisteer360')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    with aisteer360_names():
        from aisteer360.evaluation.metrics.base import Metric as UpstreamMetric
        from aisteer360.evaluation.utils.generation_utils import output_record_fields

        assert UpstreamMetric is Metric
        assert output_record_fields(None, None) == {"finish_reason": None}
        with pytest.raises(
            ImportError,
            match="'aisteer360.algorithms.state_control._common' is an AISteer360 module proctor has no equivalent",
        ):
            __import__("aisteer360.algorithms.state_control._common.hook_utils")
    assert not any(k.startswith("aisteer360") for k in sys.modules)


def test_metric_files_may_set_their_own_name():
    with aisteer360_names():
        sys.path.insert(0, str(UPSTREAM / "metrics"))
        try:
            from answered_share import AnsweredShare
        finally:
            sys.path.remove(str(UPSTREAM / "metrics"))
    metric = AnsweredShare(label="x")
    assert metric.name == "AnsweredShare[x]" and metric.extras == {}
    assert metric(responses=["A", None, "B", None]) == {"share": 0.5}
    assert MCQACalibration(n_bins=5).name == "MCQACalibration"


# ---------------------------------------------------------------- a class-only upstream file from the CLI
def test_upstream_class_only_file_runs_from_the_command_line(tiny_model_dir, tmp_path):
    run_dir = tmp_path / "run"
    settings = tmp_path / "gen.json"  # only generation settings here; data and metrics on the command line win
    settings.write_text(json.dumps({"gen_kwargs": {"max_new_tokens": 3}, "evaluation_metrics": ["StrictInstruction"]}))
    args = [
        "run",
        str(MCQA_FILE),
        "--model",
        str(tiny_model_dir),
        "-o",
        str(run_dir),
        "--quiet",
        "--use-case-data",
        str(MCQA_DATA),
        "--use-case-metric",
        "MCQAAccuracy",
        "--use-case-metric",
        "MCQAPositionalBias",
        "--use-case-metric",
        f"{UPSTREAM / 'metrics' / 'answered_share.py'}:AnsweredShare",
        "--use-case-arg",
        "num_shuffling_runs=3",
        "--batch-size",
        "2",
        "--use-case-config",
        str(settings),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    samples = read_samples(run_dir)
    assert len(samples) == 9 and {
        "response",
        "reference_answer",
        "question_id",
        "finish_reason",
        "adapted_prompt",
    } <= set(samples[0])
    responses = [s["response"] for s in samples]
    references = [s["reference_answer"] for s in samples]
    qids = [s["question_id"] for s in samples]
    # each prompt offers the row's choices in some order; the reference letter points at the answer
    rows = {r["id"]: r for r in map(json.loads, MCQA_DATA.read_text().splitlines())}
    for sample in samples:
        offered = dict(re.findall(r"^\(([A-Z])\) (.+)$", sample["prompt"], flags=re.M))
        row = rows[sample["question_id"]]
        assert (
            sorted(offered.values()) == sorted(row["choices"]) and offered[sample["reference_answer"]] == row["answer"]
        )
    task = json.loads((run_dir / "results.json").read_text())["tasks"]["use_case:CommonsenseMCQA"]
    evaluations = task["evaluations"]
    if None not in responses:  # upstream's question_mean is misaligned with None responses; proctor's is not
        trial_mean, question_mean = upstream_accuracy(responses, references, qids)
        assert evaluations["MCQAAccuracy"]["question_mean"] == pytest.approx(question_mean)
    else:
        trial_mean, _ = upstream_accuracy(responses, references, qids)
    assert evaluations["MCQAAccuracy"]["trial_mean"] == pytest.approx(trial_mean)
    # K is the letters observed, as upstream counts them
    if any(r is not None for r in responses):
        assert evaluations["MCQAPositionalBias"]["mean"] == pytest.approx(upstream_positional_bias(responses, qids))
    else:
        assert evaluations["MCQAPositionalBias"]["mean"] is None
    assert evaluations["AnsweredShare[answered]"]["share"] == pytest.approx(sum(r is not None for r in responses) / 9)
    # The file shuffles with the global random; the runner seeds it, so the same command builds the
    # same prompts and answers everything from the run store (--update: the finished run is not just reported).
    again = CliRunner().invoke(app, [*args, "--update"])
    assert again.exit_code == 0, again.output
    assert read_samples(run_dir) == samples
    task = json.loads((run_dir / "results.json").read_text())["tasks"]["use_case:CommonsenseMCQA"]
    assert task["requests"]["computed"] == 0 and task["requests"]["unique"] > 0


def test_class_only_file_with_a_config_file(tiny_model, tmp_path):
    config = tmp_path / "mcqa.yaml"
    (tmp_path / "data.jsonl").write_text(MCQA_DATA.read_text())
    config.write_text(
        "evaluation_data: data.jsonl\n"
        "evaluation_metrics:\n  - MCQAAccuracy\n  - {metric: "
        + f"'{UPSTREAM / 'metrics' / 'answered_share.py'}:AnsweredShare'"
        + ", label: cfg}\n"
        "use_case_kwargs: {num_shuffling_runs: 2}\n"
        "gen_kwargs: {max_new_tokens: 3}\n"
        "batch_size: 3\n"
    )
    from proctor.dialects.aisteer.runconfig import read_config

    case, gen_kwargs, call = load_use_case_file(
        MCQA_FILE, config=read_config(config, trusted=True)
    )  # it names a metric file
    assert case.num_shuffling_runs == 2 and len(case.evaluation_data) == 3
    assert [m.name for m in case.evaluation_metrics] == ["MCQAAccuracy", "AnsweredShare[cfg]"]
    assert gen_kwargs == {"max_new_tokens": 3} and call["batch_size"] == 3
    with pytest.raises(TaskDefinitionError, match="--trust-task-code"):
        read_config(config)  # the metric file the config names is code: consent first
    ran = evaluate(file_tasks(MCQA_FILE, read_config(config, trusted=True)), tiny_model, output_dir=tmp_path / "run")
    run_dir, results = ran.run_dir, ran.results
    samples = read_samples(run_dir)
    trial_mean, _ = upstream_accuracy(
        [s["response"] for s in samples], [s["reference_answer"] for s in samples], [s["question_id"] for s in samples]
    )
    assert results["tasks"]["use_case:CommonsenseMCQA"]["evaluations"]["MCQAAccuracy"]["trial_mean"] == pytest.approx(
        trial_mean
    )


def test_class_only_file_without_data_says_what_to_give():
    with pytest.raises(TaskDefinitionError, match="--use-case-data"):
        load_use_case_file(MCQA_FILE)
    with pytest.raises(TaskDefinitionError, match="unknown metric 'Nope'"):
        load_use_case_file(MCQA_FILE, config=command_line_config(MCQA_DATA, ["Nope"], None))


def test_generate_receives_batch_size_and_runtime_overrides(tiny_model, tmp_path):
    seen = {}
    with aisteer360_names():
        from aisteer360.evaluation.use_cases.base import UseCase

        class Probe(UseCase):
            def generate(self, model_or_pipeline, tokenizer, gen_kwargs=None, runtime_overrides=None, **kwargs):
                seen.update(
                    batch_size=int(kwargs["batch_size"]), runtime_overrides=runtime_overrides, gen_kwargs=gen_kwargs
                )
                return [{"response": "x"}]

            def evaluate(self, generations):
                return {}

    from proctor.dialects.aisteer import run_use_cases

    run_use_cases(Probe([{"text": "a"}], []), tiny_model, output_dir=tmp_path / "r1", gen_kwargs={"max_new_tokens": 2})
    assert seen["batch_size"] == 4 and seen["runtime_overrides"] is None  # the model's batch size
    run_use_cases(
        Probe([{"text": "a"}], []),
        tiny_model,
        output_dir=tmp_path / "r2",
        batch_size=16,
        runtime_overrides={"X": {"a": "text"}},
    )
    assert seen["batch_size"] == 16 and seen["runtime_overrides"] == {"X": {"a": "text"}}


# ---------------------------------------------------------------- instruction following rows without ids
def test_upstream_instruction_following_rows_without_id(tiny_model, tmp_path):
    config = command_line_config(IF_DATA, ["StrictInstruction"], None)
    config.gen_kwargs = {"max_new_tokens": 12}
    ran = evaluate(file_tasks(IF_FILE, config), tiny_model, output_dir=tmp_path / "run")
    run_dir, results = ran.run_dir, ran.results
    samples = read_samples(run_dir)
    assert len(samples) == 3 and all("id" not in s for s in samples)
    rows = [json.loads(line) for line in IF_DATA.read_text().splitlines()]
    assert [s["instructions"] for s in samples] == [r["instructions"] for r in rows]
    out = results["tasks"]["use_case:InstructionFollowing"]["evaluations"]["StrictInstruction"]

    # strict_instruction.py: prompt accuracy = prompts with all followed / prompts; instruction accuracy
    # = followed / instructions, each instruction by IFEval's strict rule (written out for these three)
    def followed(response, instruction_id, kwargs):
        if not response.strip():
            return False
        if instruction_id == "punctuation:no_comma":
            return "," not in response
        if instruction_id == "change_case:english_lowercase":  # lower case, and langdetect (seeded) says English
            import langdetect

            langdetect.DetectorFactory.seed = 0
            try:
                return response.islower() and langdetect.detect(response) == "en"
            except langdetect.LangDetectException:
                return True
        if instruction_id == "startend:end_checker":
            return response.strip().lower().endswith(kwargs["end_phrase"].strip().lower())
        raise AssertionError(instruction_id)

    per_prompt = [
        [followed(s["response"], i, k) for i, k in zip(s["instruction_id_list"], s["kwargs"])] for s in samples
    ]
    assert out["strict_prompt_accuracy"] == pytest.approx(sum(all(p) for p in per_prompt) / 3)
    assert out["strict_instruction_accuracy"] == pytest.approx(sum(map(sum, per_prompt)) / 4)
    assert out["follow_all_instructions"] == [all(p) for p in per_prompt]


# ---------------------------------------------------------------- calibration with upstream names
def test_calibration_accepts_confidence_scores_and_matches_upstream_bins():
    rng = np.random.default_rng(3)
    responses = list(rng.choice(list("ABCD"), 60))
    answers = list(rng.choice(list("ABCD"), 60))
    confidences = [float(c) for c in rng.uniform(0, 1, 60)]
    confidences[:6] = [0.1, 0.3, 0.7, 1.0, 0.0, 0.6]  # on bin edges, where int(c * 10) and linspace disagree
    confidences[6] = None
    ece, avg_conf, over = upstream_ece(responses, answers, confidences)
    out = MCQACalibration()(responses=responses, reference_answers=answers, confidence_scores=confidences)
    assert out["ece"] == pytest.approx(ece, abs=1e-12)
    assert out["avg_confidence"] == pytest.approx(avg_conf) and out["overconfidence"] == pytest.approx(over)
    # 0.3 and 0.6 sit just under linspace's edges (0.30000000000000004, 0.6000000000000001), so upstream
    # bins them with 0.25 and 0.55: ECE 0.15 (binning by int(c * 10) would give 0.475)
    edge = dict(responses=["A", "B", "A", "B"], reference_answers=["A"] * 4, confidence_scores=[0.3, 0.25, 0.6, 0.55])
    assert upstream_ece(edge["responses"], edge["reference_answers"], edge["confidence_scores"])[0] == pytest.approx(
        0.15
    )
    assert MCQACalibration()(**edge)["ece"] == pytest.approx(0.15)


# ---------------------------------------------------------------- a benchmark script with AISteer360's API
def test_upstream_benchmark_script_runs_through_the_engine(tiny_model_dir, tmp_path):
    from proctor.dialects.aisteer.aisteer_names import run_script

    save_dir = tmp_path / "bench"
    args = [str(tiny_model_dir), str(save_dir)]
    namespace = run_script(
        str(UPSTREAM / "benchmark.py"), args
    )  # as `python -m proctor.dialects.aisteer.aisteer_names`
    assert list(namespace["summary"]["n_trials"]) == [2]
    runs = json.loads(json.dumps(namespace["profiles"]["baseline"]))
    assert len(list((save_dir / "runs" / "baseline").glob("*/results.json"))) == 2  # one run folder per trial
    assert [r["trial_id"] for r in runs] == [0, 1]
    for run in runs:
        g = run["generations"]
        trial_mean, _ = upstream_accuracy(
            [x["response"] for x in g], [x["reference_answer"] for x in g], [x["question_id"] for x in g]
        )
        assert run["evaluations"]["MCQAAccuracy"]["trial_mean"] == pytest.approx(trial_mean)
    assert (save_dir / "store.sqlite").exists()
    assert (
        json.loads((save_dir / "profiles.json").read_text())["baseline"] == runs
    )  # the use case's export, as upstream calls it
    # Lose the trials' run folders: the rerun recomputes the trials, and every request comes from the store.
    import sqlite3

    def stored() -> int:
        with sqlite3.connect(save_dir / "store.sqlite") as db:
            return db.execute("select count(*) from responses").fetchone()[0]

    before = stored()
    shutil.rmtree(save_dir / "runs")
    again = run_script(str(UPSTREAM / "benchmark.py"), args)
    assert stored() == before
    assert json.loads(json.dumps(again["profiles"]["baseline"])) == runs


def test_steered_configurations_of_an_upstream_benchmark_use_the_run_store(tiny_model_dir, tmp_path):
    import sqlite3

    from proctor.dialects.aisteer import SystemPrompt

    with aisteer360_names():
        from aisteer360.evaluation.benchmark import Benchmark
        from aisteer360.evaluation.metrics.custom.commonsense_mcqa.mcqa_accuracy import MCQAAccuracy
        from aisteer360.evaluation.use_cases.commonsense_mcqa.use_case import CommonsenseMCQA

    save_dir = tmp_path / "bench"

    def run() -> dict:
        case = CommonsenseMCQA(
            evaluation_data=str(MCQA_DATA), evaluation_metrics=[MCQAAccuracy()], num_shuffling_runs=1
        )
        bench = Benchmark(
            case,
            str(tiny_model_dir),
            {"baseline": [], "prompted": [SystemPrompt("Answer with one letter.")]},
            None,
            {"torch_dtype": "float32"},
            {"max_new_tokens": 3},
            "cpu",
            1,
            4,
            save_dir,  # AISteer360's positional order
        )
        return bench.run()

    def stored() -> int:
        with sqlite3.connect(save_dir / "store.sqlite") as db:
            return db.execute("select count(*) from responses").fetchone()[0]

    first = run()
    prompted = first["prompted"][0]["generations"]
    assert all("Answer with one letter." in g["adapted_prompt"] for g in prompted)
    count = stored()
    with sqlite3.connect(save_dir / "store.sqlite") as db:
        fingerprints = [json.loads(f) for (f,) in db.execute("select fingerprint from models")]
    assert len(fingerprints) == 2 and any(
        "steering" in f for f in fingerprints
    )  # the steered model's answers are stored
    shutil.rmtree(save_dir / "runs")  # the trials' run folders: rerun, they are answered from save_dir/store.sqlite
    assert run() == first and stored() == count  # both configurations answered from the store


# ---------------------------------------------------------------- LLM judge metrics in AISteer360's format
def test_judge_score_reader_follows_upstream_rules():
    from proctor.dialects.aisteer.judge import read_score

    assert read_score('Sure.\n```json\n{"score": 4.5}\n```', (1, 5)) == 4.5
    assert read_score('{"score": 9}', (1, 5)) == 5 and read_score('{"score": -2}', (1, 5)) == 1  # clamped
    with pytest.raises(ValueError, match="no 'score'"):
        read_score('```json\n{"grade": 3}\n```', (1, 5))
    with pytest.raises(ValueError, match="no JSON"):
        read_score("four", (1, 5))


def test_upstream_judge_metric_file_scores_with_a_real_judge(tiny_model):
    from proctor.dialects.aisteer.generation import batch_retry_generate

    with aisteer360_names():
        sys.path.insert(0, str(UPSTREAM / "metrics"))
        try:
            from brevity import Brevity
        finally:
            sys.path.remove(str(UPSTREAM / "metrics"))
    responses, prompts = (
        ["Paris.", "It is, as everyone knows, the city of Paris in France."],
        ["Capital of France?"] * 2,
    )
    parser = lambda text: len(text) % 5 + 1  # noqa: E731  (a custom parser: structured_output=False)
    metric = Brevity(tiny_model, structured_output=False, parser=parser, gen_kwargs={"max_new_tokens": 6})
    out = metric(responses=responses, prompts=prompts)
    # the judge's replies to the same rendered prompts, scored by AISteer360's aggregation:
    # per-response mean over draws, then the mean over responses
    rendered = metric.render(responses, prompts)
    assert "The answer to grade:\nParis." in rendered[0] and "The question asked:\nCapital of France?" in rendered[0]
    assert "{" not in rendered[0] and "from 1 (wordy, padded) up to 5" in rendered[0]  # the scale filled in
    replies = batch_retry_generate(
        [{"prompt": p} for p in rendered], tiny_model, gen_kwargs={"max_new_tokens": 6, "seed": 0}
    )
    expected = [float(parser(r)) for r in replies]
    assert out["scores"] == expected and out["raw_scores"] == [[e] for e in expected]
    assert out["mean_score"] == pytest.approx(sum(expected) / 2)
    with pytest.raises(ValueError, match="greedy reply"):  # the random model writes no JSON score
        Brevity(tiny_model, gen_kwargs={"max_new_tokens": 4})(responses=responses, prompts=prompts)
    with pytest.raises(ValueError, match="temperature"):
        Brevity(tiny_model, gen_kwargs={"num_return_sequences": 2})
