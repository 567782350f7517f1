"""Benchmark: base vs activation-steering sweep vs prompt steering; stable ids, resume after a kill
(each trial a run of evaluate), exports and plots; and ``proctor run my_use_case.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from proctor.dialects.aisteer.user_files import import_user_file
from tests.conftest import REPO

SRC = REPO / "src"

DEFINITION = textwrap.dedent(
    """
    import os, signal, sys
    from proctor import Benchmark
    from proctor.models.hf.model import HFModel
    from proctor.dialects.aisteer import ActivationAddition, CommonsenseMCQA, ControlSpec, MCQAAccuracy, MCQAPositionalBias, SystemPrompt

    ROWS = [
        {"id": f"q{i}", "question": f"Which word is number {i}?", "answer": f"w{i}", "choices": [f"w{i}", "apple", "river", "stone"]}
        for i in range(4)
    ]

    def make(model, save_dir=None, progress=None):
        use_case = CommonsenseMCQA(ROWS, [MCQAAccuracy(), MCQAPositionalBias()], num_shuffling_runs=2, seed=9)
        steer = ControlSpec(
            ActivationAddition,
            params={"layers": [0], "positive": ["I love it, wonderful"], "negative": ["I hate it, awful"]},
            vars={"strength": [2.0, 4.0, 8.0]},
            name="actadd",
        )
        return Benchmark(
            use_case, model,
            steering_pipelines={"baseline": [], "activation": [steer], "prompt": [SystemPrompt("Answer with the letter B.")]},
            gen_kwargs={"max_new_tokens": 4}, num_trials=2, batch_size=4, save_dir=save_dir, progress=progress,
        )

    if __name__ == "__main__":
        model_dir, save_dir, kill_after = sys.argv[1], sys.argv[2], int(sys.argv[3])
        done = []
        def progress(event):
            done.append(event)
            if len(done) == kill_after:
                os.kill(os.getpid(), signal.SIGKILL)
        make(HFModel(model_dir, batch_size=4), save_dir, progress).run()
    """  # noqa: E501 (a file's text, line for line)
)


@pytest.fixture(scope="module")
def definition(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "bench_def.py"
    path.write_text(DEFINITION)
    return path


@pytest.fixture(scope="module")
def uninterrupted(definition, tiny_model):
    """The definition's module, its benchmark on the tiny Llama and the profiles of its one uninterrupted run:
    what the sweep test reads and what a resumed run must equal (run once for both)."""
    module = import_user_file(definition)
    bench = module.make(tiny_model)
    return module, bench, bench.run()


def _responses(entry):
    return [g["raw_response"] for g in entry["generations"]]


def test_benchmark_runs_sweeps_and_exports(uninterrupted, tiny_model, tmp_path):
    module, bench, profiles = uninterrupted
    ids = [(c.pipeline, c.config_id, json.dumps(c.params, sort_keys=True)) for c in bench.configurations]
    assert ids == [
        (c.pipeline, c.config_id, json.dumps(c.params, sort_keys=True)) for c in module.make(tiny_model).configurations
    ]
    assert [c.pipeline for c in bench.configurations] == [
        "baseline",
        "activation",
        "activation",
        "activation",
        "prompt",
    ]
    assert ids[0][1] == "baseline" and len({i[1] for i in ids}) == 5
    assert {k: len(v) for k, v in profiles.items()} == {"baseline": 2, "activation": 6, "prompt": 2}
    baseline = _responses(profiles["baseline"][0])
    for entry in profiles["activation"]:
        assert entry["params"]["actadd"]["strength"] in (2.0, 4.0, 8.0)
    strongest = [e for e in profiles["activation"] if e["params"]["actadd"]["strength"] == 8.0][0]
    assert _responses(strongest) != baseline
    prompt_entry = profiles["prompt"][0]
    assert all("Answer with the letter B." in g["adapted_prompt"] for g in prompt_entry["generations"])
    table = bench.table()
    assert {"pipeline", "config_id", "params", "trial", "metric", "value"} <= set(table[0])
    assert {r["metric"] for r in table} >= {"MCQAAccuracy.trial_mean", "MCQAPositionalBias.num_valid"}
    assert len({(r["pipeline"], r["config_id"], r["trial"]) for r in table}) == 10
    import importlib.util

    if importlib.util.find_spec("pandas") is not None:
        from proctor.dialects.aisteer.analysis import to_dataframe

        assert to_dataframe(table).shape == (len(table), 6)
    written = bench.export(save_dir=tmp_path, tradeoff=("MCQAAccuracy.trial_mean", "MCQAAccuracy.num_valid"))
    assert (tmp_path / "profiles.json").exists() and written["results"].read_text().startswith("pipeline,config_id")
    assert written["tradeoff"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from proctor.dialects.aisteer.analysis import pareto_front, plot_sensitivity

    assert plot_sensitivity(
        table, "activation", "actadd.strength", "MCQAAccuracy.num_valid", tmp_path / "s.png"
    ).exists()
    front = pareto_front([{"x": 1, "y": 1}, {"x": 2, "y": 0.5}, {"x": 0.5, "y": 0.5}, {"x": 2, "y": 1}])
    assert front == [{"x": 2, "y": 1}]


def test_benchmark_resumes_after_kill_without_redoing(definition, uninterrupted, tiny_model_dir, tmp_path):
    save = tmp_path / "save"
    env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    killed = subprocess.run(
        [sys.executable, str(definition), str(tiny_model_dir), str(save), "5"], env=env, capture_output=True, text=True
    )
    assert killed.returncode == -9, killed.stderr[-2000:]
    finished = set()  # each trial is a run folder save/runs/<pipeline>/<config_id>-t<trial>; finished ones are complete
    for results in (save / "runs").glob("*/*/results.json"):
        if json.loads(results.read_text())["status"] == "complete":
            config, trial = results.parent.name.rsplit("-t", 1)
            finished.add((results.parent.parent.name, config, int(trial)))
    assert len(finished) == 5

    from proctor.models.hf.model import HFModel

    module = import_user_file(definition)
    model = HFModel(tiny_model_dir, batch_size=4)
    events = []
    resumed = module.make(model, save, events.append).run()
    redone = {(e["pipeline"], e["config_id"], e["trial_id"]) for e in events}
    assert len(events) == 5 and not (redone & finished)
    assert sum(len(v) for v in resumed.values()) == 10

    fresh = uninterrupted[2]  # an uninterrupted run (of the same definition on the same weights): the same numbers
    assert {p: [e["evaluations"] for e in v] for p, v in resumed.items()} == {
        p: [json.loads(json.dumps(e["evaluations"])) for e in v] for p, v in fresh.items()
    }
    again = []
    module.make(model, save, again.append).run()
    assert again == []  # everything finished: nothing is recomputed

    other = module.make(model, save)
    other.gen_kwargs["max_new_tokens"] = 5
    with pytest.raises(Exception, match="different benchmark"):
        other.run()


USE_CASE_FILE = '''
from proctor import UseCase
from proctor.dialects.aisteer import MCQAAccuracy, MCQAPositionalBias
from proctor.dialects.aisteer.mcqa import CommonsenseMCQA


class MyMCQA(CommonsenseMCQA):
    """A use case defined in a file, run by proctor run."""


evaluation_data = "rows.jsonl"
evaluation_metrics = [MCQAAccuracy(), MCQAPositionalBias()]
use_case_kwargs = {"num_shuffling_runs": 2}
gen_kwargs = {"max_new_tokens": 3}
'''


def test_cli_runs_a_use_case_file(tiny_model_dir, tmp_path):
    from typer.testing import CliRunner

    from proctor.cli import app

    rows = [{"id": i, "question": f"Q{i}?", "answer": "a", "choices": ["a", "b", "c"]} for i in range(4)]
    (tmp_path / "rows.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "my_use_case.py").write_text(USE_CASE_FILE)
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["run", str(tmp_path / "my_use_case.py"), "--model", str(tiny_model_dir), "-o", str(out), "-q", "--limit", "3"],
    )
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    task = results["tasks"]["my_use_case:MyMCQA"]
    assert task["n_samples"] == 6 and task["n_rows"] == 3 and results["status"] == "complete"
    assert "MCQAAccuracy.trial_mean" in task["metrics"]
    records = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert (
        len(records) == 3 and sum(len(r["generations"]) for r in records) == 6
    )  # a record per row, with its generations
    assert all(g["question_id"] == int(r["id"]) for r in records for g in r["generations"])
    (tmp_path / "two.py").write_text(USE_CASE_FILE + "\nclass Other(CommonsenseMCQA):\n    pass\n")
    from proctor.core.errors import TaskDefinitionError
    from proctor.dialects.aisteer.runfile import load_use_case_file

    with pytest.raises(TaskDefinitionError, match="exactly one UseCase subclass"):
        load_use_case_file(tmp_path / "two.py")
