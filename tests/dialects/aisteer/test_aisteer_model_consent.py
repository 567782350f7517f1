"""A model a ``--use-case-config`` names for a metric (``model_or_id: steer:FILE.py:NAME``) imports FILE.py when the
run's model roles make it: code named by a file, so it loads only with --trust-task-code (api/model_consent.py,
docs/trust.md). A spec typed on the command line (``--model-role metric=steer:...``) is the user's own consent.
The refusals without the flag are tests/support/hostile_cases.py's ``consent-usecase-config-*-steer*`` cases."""

from __future__ import annotations

import pytest

from proctor.api.model_consent import check_model_consent, code_backend
from proctor.core.errors import TaskDefinitionError
from proctor.core.model_requests import LoglikelihoodRequest
from tests.support.cli_runs import proctor, results, run_in_process, write

# A use case whose answers are fixed and whose one metric scores them with the model the config names (made by the
# run's model roles, as AISteer360's Perplexity and LLMJudgeMetric are).
USE_CASE = """\
from proctor.api.model_roles import active_roles
from proctor.core.model_requests import LoglikelihoodRequest
from proctor.dialects.aisteer.base import UseCase
from proctor.dialects.aisteer.metrics import Metric


class LogLikelihood(Metric):
    def __init__(self, model_or_id):
        super().__init__()
        self.model_or_id = model_or_id

    def compute(self, responses, prompts=None, **kwargs):
        model = active_roles().model("metric", self.model_or_id)
        scored = model.loglikelihood([LoglikelihoodRequest("Answer:", " " + r) for r in responses])
        return {"logprobs": [s.logprob for s in scored]}


class Ask(UseCase):
    def validate_evaluation_data(self, data):
        pass

    def generate(self, model_or_pipeline, tokenizer, gen_kwargs=None, runtime_overrides=None, **kwargs):
        return [{"response": row["answer"]} for row in self.evaluation_data]

    def evaluate(self, generations):
        return {m.name: m(responses=[g["response"] for g in generations]) for m in self.evaluation_metrics}


evaluation_data = [{"id": "1", "answer": "blue"}, {"id": "2", "answer": "eight legs"}]
"""
# A steering pipeline of strength zero: the base model's own numbers. Importing the file leaves a mark.
PIPES = """\
import pathlib
pathlib.Path("IMPORTED").write_text("pipes.py ran")
from proctor.dialects.aisteer import ActivationAddition
ZERO = [ActivationAddition([0], 0.0, 'Yes, gladly.', 'No, never.')]
"""
CONFIG = "evaluation_metrics:\n  - {metric: LogLikelihood, model_or_id: 'steer:pipes.py:ZERO'}\n"
ANSWERS = ["blue", "eight legs"]


def _folder(tmp_path, config=CONFIG):
    write(tmp_path / "uc.py", USE_CASE)
    write(tmp_path / "pipes.py", PIPES)
    write(tmp_path / "uc.yaml", config)
    return tmp_path


def _base_logprobs(tiny_model):
    scored = tiny_model.loglikelihood([LoglikelihoodRequest("Answer:", " " + a) for a in ANSWERS])
    return [s.logprob for s in scored]


def test_a_configs_steer_metric_model_runs_with_consent(tmp_path, tiny_model_dir, tiny_model):
    """A fresh ``proctor run --trust-task-code``: the config's steer: model is made, its file imported, and the
    metric's numbers are the base model's (strength zero)."""
    folder = _folder(tmp_path)
    proctor(
        "run", "uc.py", "--use-case-config", "uc.yaml", "--trust-task-code", "--model", str(tiny_model_dir),
        "--model-role", f"steer_base={tiny_model_dir}", "-o", "out", "-q", cwd=folder,
    )  # fmt: skip
    written = results(folder / "out")
    logprobs = written["tasks"]["uc:Ask"]["evaluations"]["LogLikelihood"]["logprobs"]
    assert logprobs == pytest.approx(_base_logprobs(tiny_model), abs=1e-4)
    assert all(lp < 0 for lp in logprobs)  # real log-probabilities, not a stand-in's zeros
    assert written["roles"]["metric"]["model"] == "steer:pipes.py:ZERO"
    assert written["roles"]["metric"]["source"] == "task"
    assert (folder / "IMPORTED").exists()


def test_the_same_config_without_consent_is_refused_before_anything_loads(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    monkeypatch.chdir(folder)
    args = ["run", "uc.py", "--use-case-config", "uc.yaml", "--model", "hf:/absent", "-o", "out"]
    code, output = run_in_process(args)
    message = " ".join(output.split())
    assert code == 2, output
    assert "uc.yaml" in message and "evaluation_metrics[0].model_or_id" in message
    assert "steer:pipes.py:ZERO" in message and "--trust-task-code" in message
    assert "Traceback" not in output and "cannot load model" not in output  # before the evaluated model loads
    assert not (folder / "IMPORTED").exists() and not (folder / "out").exists()


def test_a_steer_model_typed_on_the_command_line_needs_no_flag(tmp_path, monkeypatch, tiny_model_dir, tiny_model):
    """``--model-role metric=steer:...`` replaces the config's plain model: the user's own spec, no consent asked."""
    folder = _folder(tmp_path, "evaluation_metrics:\n  - {metric: LogLikelihood, model_or_id: 'hf:/absent/model'}\n")
    monkeypatch.chdir(folder)
    code, output = run_in_process(
        ["run", "uc.py", "--use-case-config", "uc.yaml", "--model", str(tiny_model_dir), "-o", "out", "-q",
         "--model-role", "metric=steer:pipes.py:ZERO", "--model-role", f"steer_base={tiny_model_dir}"]
    )  # fmt: skip
    assert code == 0, output
    written = results(folder / "out")
    logprobs = written["tasks"]["uc:Ask"]["evaluations"]["LogLikelihood"]["logprobs"]
    assert logprobs == pytest.approx(_base_logprobs(tiny_model), abs=1e-4)
    assert written["roles"]["metric"]["source"] == "--model-role"


@pytest.mark.parametrize(
    "spec",
    ["steer:p.py:X", " steer:p.py:X ", "STEER:p.py:X", "Steer :p.py:X", "\tsteer:p.py:X\n"],
)
def test_spaces_and_case_do_not_slip_past(spec):
    assert code_backend(spec) is not None and code_backend(spec).prefix == "steer"
    with pytest.raises(TaskDefinitionError) as caught:
        check_model_consent({"judges": [{"model": spec}]}, trusted=False, file="cfg.yaml", field="use_case_kwargs")
    assert "use_case_kwargs.judges[0].model" in str(caught.value) and "cfg.yaml" in str(caught.value)
    check_model_consent({"judges": [{"model": spec}]}, trusted=True, file="cfg.yaml", field="use_case_kwargs")


@pytest.mark.parametrize("spec", ["hf:/models/x", "openai:gpt-4o-mini", "smollm2", "steering.py:X", "Rate 1-5", 3])
def test_specs_that_run_no_code_pass(spec):
    assert code_backend(spec) is None
    check_model_consent({"model_or_id": spec}, trusted=False, file="cfg.yaml", field="evaluation_metrics[0]")
