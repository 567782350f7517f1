"""Use cases through proctor's engine: the run store (chunk commits, resume after a failure, zero
model calls on a rerun), the shared cache, progress, and retries as new requests."""

from __future__ import annotations

import json
import shutil

import pytest

from proctor.dialects.aisteer import batch_retry_generate
from proctor.runs.executor import ModelExecutor
from proctor.runs.store import STORE_FILE, Lookup, ResponseStore
from tests.support.aisteer_runs import ROWS, Counting, run


def _sent(model, kind="generate"):
    return sum(n for k, n in model.calls if k == kind)


@pytest.fixture(scope="module")
def complete(tiny_model, tmp_path_factory):
    """One uninterrupted run of the use case on the tiny Llama, made once: (its counting model, its progress
    events, its result, its run folder); the first run of the rerun test and what the resumed runs must equal."""
    model = Counting(tiny_model)
    events: list[tuple] = []
    folder = tmp_path_factory.mktemp("complete") / "run"
    return model, events, run(model, folder, progress=lambda *e: events.append(e)), folder


def test_store_commits_chunks_and_a_rerun_calls_the_model_zero_times(tiny_model, complete):
    model, events, first, folder = complete
    # Chunks of 2 requests (a prompt's 6 letter scores, "A"/" A" ..., share a context and stay in one call).
    # The random tiny model never prints a letter: 10 prompts x 3 rounds (two retries) of generation.
    assert max(n for k, n in model.calls if k == "generate") <= 2 and _sent(model) == 30
    assert max(n for k, n in model.calls if k == "loglikelihood") <= 6 and _sent(model, "loglikelihood") == 60
    with ResponseStore(folder / STORE_FILE) as store:
        assert store.count() == sum(n for _, n in model.calls)
    name, done, total = events[-1]
    assert name == "CommonsenseMCQA" and done == total == len(ROWS)  # a task class reports samples (rows) done
    assert [e[1] for e in events] == sorted(e[1] for e in events)  # progress only moves forward

    again = Counting(tiny_model)
    second = run(again, folder)
    assert again.calls == []
    assert (
        second.results["tasks"]["CommonsenseMCQA"]["evaluations"]
        == first.results["tasks"]["CommonsenseMCQA"]["evaluations"]
    )
    assert second.results["tasks"]["CommonsenseMCQA"]["requests"]["computed"] == 0
    manifest = json.loads((folder / "run.json").read_text())
    assert manifest["attempts"][-1]["responses"]["computed"] == 0


def test_a_failed_run_resumes_without_redoing_finished_chunks(tiny_model, complete, tmp_path):
    full, _, reference, _ = complete
    total = sum(n for _, n in full.calls)
    broken = Counting(tiny_model, fail_after=3)
    with pytest.raises(RuntimeError, match="killed"):
        run(broken, tmp_path / "run")
    done_before = sum(n for _, n in broken.calls)
    assert done_before > 0
    resumed = Counting(tiny_model)
    result = run(resumed, tmp_path / "run")
    assert sum(n for _, n in resumed.calls) == total - done_before
    assert (
        result.results["tasks"]["CommonsenseMCQA"]["evaluations"]
        == reference.results["tasks"]["CommonsenseMCQA"]["evaluations"]
    )


def test_the_shared_cache_answers_a_new_run_folder(tiny_model, tmp_path):
    first = Counting(tiny_model)
    run(first, tmp_path / "a", cache=tmp_path / "cache")
    second = Counting(tiny_model)
    run(second, tmp_path / "b", cache=tmp_path / "cache")
    assert first.calls and second.calls == []
    manifest = json.loads((tmp_path / "b" / "run.json").read_text())
    assert manifest["attempts"][-1]["responses"]["from_cache"] == sum(n for _, n in first.calls)


def test_retries_are_new_requests_and_are_stored_too(tiny_model, tmp_path):
    items = [{"id": i, "prompt": p} for i, p in enumerate(["The cat sat on the", "One two three", "Hello my name is"])]

    def generate(model):
        lookup = Lookup(ResponseStore(tmp_path / STORE_FILE))
        try:
            executor = ModelExecutor(model, lookup, chunk_size=2)  # the run store, handed over explicitly
            return batch_retry_generate(
                items,
                executor,
                gen_kwargs={"max_new_tokens": 3},
                parse_fn=lambda t: None,
                max_retries=2,
                use_chat=False,
                return_raw=True,
            )
        finally:
            lookup.close()

    model = Counting(tiny_model)
    parsed, raw = generate(model)
    assert parsed == [None] * 3 and _sent(model) == 9  # every round asks the model again, not the store
    with ResponseStore(tmp_path / STORE_FILE) as store:
        assert store.count() == 9  # attempt k is its own request (seed = seed + k)
    again = Counting(tiny_model)
    assert generate(again) == (parsed, raw) and again.calls == []


def test_cli_use_case_run_resumes_from_its_store(tiny_model_dir, tmp_path):
    from typer.testing import CliRunner

    from proctor.cli import app

    (tmp_path / "rows.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS))
    (tmp_path / "uc.py").write_text(
        "from proctor.dialects.aisteer import CommonsenseMCQA, MCQAAccuracy\n"
        "class Mine(CommonsenseMCQA):\n    pass\n"
        "evaluation_data = 'rows.jsonl'\nevaluation_metrics = [MCQAAccuracy()]\ngen_kwargs = {'max_new_tokens': 3}\n"
    )
    args = [
        "run",
        str(tmp_path / "uc.py"),
        "--model",
        str(tiny_model_dir),
        "-o",
        str(tmp_path / "run"),
        "-q",
        "--chunk-size",
        "2",
    ]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    task = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"]["uc:Mine"]
    assert task["requests"]["computed"] == task["requests"]["unique"] > 0
    # Again in a new process (the use case's fingerprint must not depend on the process), with another batch
    # size: not exactly the finished run, which would be reported without loading the model, so the requests are
    # answered from the store.
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = Path(__file__).resolve().parents[3] / "src"
    env = dict(os.environ, PYTHONPATH=f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    second = subprocess.run(
        [sys.executable, "-m", "proctor.cli", *args, "--batch-size", "2"], env=env, capture_output=True, text=True
    )
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    again = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"]["uc:Mine"]
    assert again["requests"]["computed"] == 0 and again["evaluations"] == task["evaluations"]


KILLED_RUN = """
import os, signal, sys
sys.path.insert(0, sys.argv[4])
from tests.support.aisteer_runs import Counting, run
from proctor.models.hf.model import HFModel

class KillAfter(Counting):
    def _call(self, kind, requests, progress):
        if len(self.calls) == int(sys.argv[3]):
            os.kill(os.getpid(), signal.SIGKILL)  # an outside kill: no cleanup, no exception handling
        return super()._call(kind, requests, progress)

run(KillAfter(HFModel(sys.argv[1], batch_size=4, name="tiny-llama")), sys.argv[2])
"""


def test_a_killed_run_resumes_without_redoing_committed_chunks(tiny_model, tiny_model_dir, complete, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]  # on the child's sys.path, for tests.support
    src = repo / "src"
    script = tmp_path / "killed.py"
    script.write_text(KILLED_RUN)
    env = dict(os.environ, PYTHONPATH=f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    killed = subprocess.run(
        [sys.executable, str(script), str(tiny_model_dir), str(tmp_path / "run"), "4", str(repo)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -9, killed.stderr[-2000:]
    with ResponseStore(tmp_path / "run" / STORE_FILE) as store:
        committed = store.count()
    assert committed > 0
    full, _, reference, _ = complete
    resumed = Counting(tiny_model)
    result = run(resumed, tmp_path / "run")
    assert sum(n for _, n in resumed.calls) == sum(n for _, n in full.calls) - committed
    assert (
        result.results["tasks"]["CommonsenseMCQA"]["evaluations"]
        == reference.results["tasks"]["CommonsenseMCQA"]["evaluations"]
    )


def test_benchmark_generation_and_judge_requests_go_through_its_store(tmp_path):
    """With ``save_dir``, the use case is handed an executor on ``store.sqlite`` and its LLM judge uses
    that store too: run again without the trials' run folders, neither model is called."""
    from proctor.dialects.aisteer import Benchmark, UseCase
    from proctor.dialects.aisteer.judge import LLMJudgeMetric
    from tests.support.fakes import FakeModel

    class Ask(UseCase):
        _EVALUATION_REQ_KEYS = ("id", "q")

        def validate_evaluation_data(self, row):
            pass

        def generate(self, model_or_pipeline, tokenizer=None, gen_kwargs=None, runtime_overrides=None, **kwargs):
            texts = batch_retry_generate(
                [{"prompt": r["q"]} for r in self.evaluation_data],
                model_or_pipeline,
                tokenizer,
                gen_kwargs=gen_kwargs,
                use_chat=False,
            )
            return [{"response": t} for t in texts]

        def evaluate(self, generations):
            return {m.name: m(responses=[g["response"] for g in generations]) for m in self.evaluation_metrics}

    def run(base, judge):
        metric = LLMJudgeMetric(
            judge, "Rate: {response}", structured_output=False, parser=lambda text: float(len(text))
        )
        case = Ask([{"id": i, "q": f"question {i}"} for i in range(4)], [metric])
        return Benchmark(case, base, gen_kwargs={"max_new_tokens": 3}, save_dir=tmp_path / "bench").run()

    base, judge = FakeModel("base"), FakeModel("judge", salt="j")
    first = run(base, judge)
    distinct = len({g["response"] for g in first["baseline"][0]["generations"]})  # identical replies are judged once
    assert sum(n for _, n in base.calls) == 4 and sum(n for _, n in judge.calls) == distinct
    with ResponseStore(tmp_path / "bench" / STORE_FILE) as store:
        assert store.count() == 4 + distinct  # the generations under the base model, the verdicts under the judge
    shutil.rmtree(tmp_path / "bench" / "runs")
    base_again, judge_again = FakeModel("base"), FakeModel("judge", salt="j")
    assert run(base_again, judge_again) == first and base_again.calls == [] and judge_again.calls == []


def test_benchmark_profiles_keep_the_use_case_generation_order(tmp_path):
    """Profiles are rebuilt from each trial's run folder: the generations come back in the order the
    use case returned them (here round by round, not grouped by row as samples.jsonl holds them),
    equal to the use case run directly with trial seed ``seed + t``, and a rerun on the same save_dir reads
    every finished trial back without calling the model."""
    from proctor.dialects.aisteer import Benchmark, UseCase
    from tests.support.fakes import FakeModel

    class Rounds(UseCase):
        _EVALUATION_REQ_KEYS = ("id", "q")

        def validate_evaluation_data(self, row):
            pass

        def generate(self, model_or_pipeline, tokenizer=None, gen_kwargs=None, runtime_overrides=None, **kwargs):
            items = [{"prompt": f"{r['q']} (round {k})"} for k in range(2) for r in self.evaluation_data]
            texts = batch_retry_generate(items, model_or_pipeline, tokenizer, gen_kwargs=gen_kwargs, use_chat=False)
            ids = [r["id"] for _ in range(2) for r in self.evaluation_data]
            return [
                {"id": i, "round": n // len(self.evaluation_data), "response": t}
                for n, (i, t) in enumerate(zip(ids, texts))
            ]

        def evaluate(self, generations):
            return {"Length": {"mean": sum(len(g["response"]) for g in generations) / len(generations)}}

    rows = [{"id": f"r{i}", "q": f"question {i}"} for i in range(3)]

    def run(model, save_dir=None):
        return Benchmark(
            Rounds(rows, []),
            model,
            gen_kwargs={"max_new_tokens": 3, "do_sample": True, "seed": 10},
            num_trials=2,
            save_dir=save_dir,
        ).run()

    profiles = run(FakeModel("base"), tmp_path / "bench")
    for trial, entry in enumerate(profiles["baseline"]):
        case = Rounds(rows, [])
        direct = case.generate(
            FakeModel("base"), None, gen_kwargs={"max_new_tokens": 3, "do_sample": True, "seed": 10 + trial}
        )
        assert [g["id"] for g in entry["generations"]] == ["r0", "r1", "r2"] * 2
        assert (
            entry["trial_id"] == trial
            and entry["generations"] == direct
            and entry["evaluations"] == case.evaluate(direct)
        )
    import yaml

    for trial in (0, 1):  # each trial is a run folder; its task asks for the trial's seed
        config = yaml.safe_load(
            (tmp_path / "bench" / "runs" / "baseline" / f"baseline-t{trial}" / "tasks" / "Rounds.yaml").read_text()
        )
        assert config["spec"]["handler"]["options"]["gen_kwargs"]["seed"] == 10 + trial
    again = FakeModel("base")
    assert run(again, tmp_path / "bench") == profiles and again.calls == []
    assert run(FakeModel("base")) == profiles  # without save_dir: the same runs in a temporary folder
