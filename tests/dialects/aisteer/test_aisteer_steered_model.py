"""A SteeringPipeline as a proctor Model (YAML tasks on a steered model), and structural controls
that leave the shared base model alone."""

from __future__ import annotations

import json
import math

import pytest
import torch

from proctor.core.model_requests import GenerateRequest, LoglikelihoodRequest
from proctor.dialects.aisteer import ActivationAddition, LoRA, SteeringPipeline, SystemPrompt, TokenBias, WeightDelta
from tests.conftest import EXAMPLES

QUICKSTART = EXAMPLES / "quickstart"
POS = ["I love this, wonderful and happy", "joy delight great"]
NEG = ["I hate this, awful and sad", "grief misery terrible"]
LL = [
    LoglikelihoodRequest("The cat sat on the", " mat"),
    LoglikelihoodRequest("The cat sat on the", " dog"),
    LoglikelihoodRequest("Question: 2+2=", " 4"),
    LoglikelihoodRequest("Paris is the capital of", " France and Germany"),
]
GEN = [GenerateRequest(p, max_tokens=6) for p in ("The cat sat on the", "Hello my name is", "One two three")]


def _logprobs(model):
    return [r.logprob for r in model.loglikelihood(LL)]


def test_zero_strength_matches_the_base_backend_and_nonzero_changes_loglikelihoods(tiny_model):
    base_ll, base_gen = _logprobs(tiny_model), tiny_model.generate(GEN)
    with SteeringPipeline(tiny_model, [ActivationAddition([0], 0.0, POS, NEG)]) as pipeline:
        zero = pipeline.as_model()
        assert _logprobs(zero) == pytest.approx(base_ll, abs=1e-5)
        assert zero.generate(GEN) == base_gen
    with SteeringPipeline(tiny_model, [ActivationAddition([0], 8.0, POS, NEG)]) as pipeline:
        steered = pipeline.as_model()
        steered_ll = _logprobs(steered)
        assert max(abs(a - b) for a, b in zip(steered_ll, base_ll)) > 0.1
        # The same steered numbers in whatever batch: the hook is per position, packing does not matter.
        assert [steered.loglikelihood([r])[0].logprob for r in LL] == pytest.approx(steered_ll, abs=1e-4)
        assert steered.fingerprint != tiny_model.fingerprint and steered.fingerprint["steering"]["controls"]
    assert _logprobs(tiny_model) == base_ll  # no hook left behind


def test_output_and_input_controls_act_through_the_model_interface(tiny_model):
    with SteeringPipeline(tiny_model, [TokenBias(banned=["mat"])]) as pipeline:
        scores = _logprobs(pipeline.as_model())
    assert scores[0] == -math.inf and scores[1] == pytest.approx(_logprobs(tiny_model)[1], abs=1e-5)
    messages = [{"role": "user", "content": "Hi"}]
    with SteeringPipeline(tiny_model, [SystemPrompt("Be a pirate.")]) as pipeline:
        rendered = pipeline.as_model().apply_chat_template(messages)
    assert "Be a pirate." in rendered and "Be a pirate." not in tiny_model.apply_chat_template(messages)


def _records(run_dir):
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


def test_yaml_tasks_run_on_a_pipeline_from_python_and_the_cli(tiny_model, tiny_model_dir, tmp_path):
    import proctor

    base = proctor.evaluate([QUICKSTART], tiny_model, output_dir=tmp_path / "base", limit=4, export=False)
    with SteeringPipeline(tiny_model, [ActivationAddition([0], 8.0, POS, NEG)]) as pipeline:
        steered = proctor.evaluate([QUICKSTART], pipeline, output_dir=tmp_path / "steered", limit=4, export=False)
    assert set(steered.tasks) == set(base.tasks) and steered.results["model"]["steering"]
    assert _records(tmp_path / "steered") != _records(tmp_path / "base")

    from typer.testing import CliRunner

    from proctor.cli import app

    (tmp_path / "pipes.py").write_text(
        "from proctor.dialects.aisteer import ActivationAddition\n"
        f"ZERO = [ActivationAddition([0], 0.0, {POS!r}, {NEG!r})]\n"
    )
    result = CliRunner().invoke(
        app,
        [
            "run",
            str(QUICKSTART),
            "--model",
            f"steer:{tmp_path / 'pipes.py'}:ZERO",
            "--model-arg",
            f"base={tiny_model_dir}",
            "-o",
            str(tmp_path / "cli"),
            "--limit",
            "4",
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    cli = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert cli["model"]["steering"]["controls"][0]["control"] == "ActivationAddition"
    # Strength zero: the same numbers as the base model.
    assert {t: v["metrics"] for t, v in cli["tasks"].items()} == json.loads(
        json.dumps({t: v["metrics"] for t, v in base.tasks.items()})
    )
    bad = CliRunner().invoke(
        app,
        [
            "run",
            str(QUICKSTART),
            "--model",
            f"steer:{tmp_path / 'pipes.py'}:NOPE",
            "--model-arg",
            f"base={tiny_model_dir}",
            "-q",
        ],
    )
    # main() prints ProctorErrors as one line; the app itself raises them.
    assert bad.exit_code != 0 and "pipes.py, field 'NOPE': the file defines no 'NOPE'" in str(bad.exception)


def _state(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _same_state(model, saved):
    state = model.state_dict()
    return sorted(state) == sorted(saved) and all(torch.equal(v, saved[k]) for k, v in state.items())


@pytest.mark.parametrize("kind", ["delta", "lora"])
def test_structural_controls_leave_the_base_model_unchanged_while_active_and_after(tiny_model, kind):
    if kind == "lora":
        pytest.importorskip("peft")
        control = LoRA(["banana banana banana banana banana banana"], r=4, steps=30, lr=5e-2)
    else:
        name = "model.norm.weight"
        weight = dict(tiny_model.model.named_parameters())[name]
        control = WeightDelta({name: torch.randn(weight.shape, generator=torch.Generator().manual_seed(0)) * 3.0})
    saved, base_ll, base_gen = _state(tiny_model.model), _logprobs(tiny_model), tiny_model.generate(GEN)
    flags = {k: p.requires_grad for k, p in tiny_model.model.named_parameters()}
    with SteeringPipeline(tiny_model, [control]) as pipeline:
        steered = pipeline.as_model()
        steered_ll = _logprobs(steered)
        assert max(abs(a - b) for a, b in zip(steered_ll, base_ll)) > 1e-3
        assert pipeline.model is not tiny_model.model
        # While the pipeline is steered, the shared base model answers exactly as before.
        assert _logprobs(tiny_model) == base_ll and tiny_model.generate(GEN) == base_gen
        assert _same_state(tiny_model.model, saved)
        assert _logprobs(steered) == steered_ll
    assert _logprobs(tiny_model) == base_ll and tiny_model.generate(GEN) == base_gen
    assert _same_state(tiny_model.model, saved)
    assert {k: p.requires_grad for k, p in tiny_model.model.named_parameters()} == flags
