"""AISteer360's control classes: every one imports under its aisteer360 names; FewShot runs with
AISteer360's arguments and message layout; the others refuse to be built, saying why."""

from __future__ import annotations

import importlib

import pytest

from proctor.core.errors import ProctorError
from proctor.dialects.aisteer.aisteer_names import aisteer360_names

# AISteer360 1d7c843: (package under aisteer360.algorithms, control, args) — every STEERING_METHOD there
UPSTREAM_CONTROLS = [
    ("input_control.cpo", "CPO", "CPOArgs"),
    ("input_control.few_shot", "FewShot", "FewShotArgs"),
    ("input_control.gepa", "GEPA", "GEPAArgs"),
    ("input_control.prewrite", "PRewrite", "PRewriteArgs"),
    ("output_control.best_of_n", "BestOfN", "BestOfNArgs"),
    ("output_control.budget_forcing", "BudgetForcing", "BudgetForcingArgs"),
    ("output_control.contrastive_decoding", "ContrastiveDecoding", "ContrastiveDecodingArgs"),
    ("output_control.contrastive_guidance", "ContrastiveGuidance", "ContrastiveGuidanceArgs"),
    ("output_control.deal", "DeAL", "DeALArgs"),
    ("output_control.dexperts", "DExperts", "DExpertsArgs"),
    ("output_control.phased_decoding", "PhasedDecoding", "PhasedDecodingArgs"),
    ("output_control.rad", "RAD", "RADArgs"),
    ("output_control.routed_decoding", "RoutedDecoding", "RoutedDecodingArgs"),
    ("output_control.sasa", "SASA", "SASAArgs"),
    ("output_control.search_decoding", "SearchDecoding", "SearchDecodingArgs"),
    ("output_control.stopping_rules", "StoppingRules", "StoppingRulesArgs"),
    ("output_control.thinking_intervention", "ThinkingIntervention", "ThinkingInterventionArgs"),
    ("output_control.value_guidance", "ValueGuidance", "ValueGuidanceArgs"),
    ("state_control.act_add", "ActAdd", "ActAddArgs"),
    ("state_control.activation_adapter", "ActivationAdapter", "ActivationAdapterArgs"),
    ("state_control.angular_steering", "AngularSteering", "AngularSteeringArgs"),
    ("state_control.caa", "CAA", "CAAArgs"),
    ("state_control.cast", "CAST", "CASTArgs"),
    ("state_control.directional_ablation", "DirectionalAblation", "DirectionalAblationArgs"),
    ("state_control.iti", "ITI", "ITIArgs"),
    ("state_control.pasta", "PASTA", "PASTAArgs"),
    ("structural_control.wrappers.mergekit", "MergeKit", "MergeKitArgs"),
    ("structural_control.wrappers.trl.apotrainer", "APO", "APOArgs"),
    ("structural_control.wrappers.trl.dpotrainer", "DPO", "DPOArgs"),
    ("structural_control.wrappers.trl.grpotrainer", "GRPO", "GRPOArgs"),
    ("structural_control.wrappers.trl.ppotrainer", "PPO", "PPOArgs"),
    ("structural_control.wrappers.trl.sfttrainer", "SFT", "SFTArgs"),
]


@pytest.mark.parametrize("package, control, args", UPSTREAM_CONTROLS, ids=[c[1] for c in UPSTREAM_CONTROLS])
def test_every_upstream_control_imports_and_the_unrunnable_ones_say_why(package, control, args):
    with aisteer360_names():
        module = importlib.import_module(f"aisteer360.algorithms.{package}")
        cls = getattr(importlib.import_module(f"aisteer360.algorithms.{package}.control"), control)
        assert getattr(module, control) is cls
        assert getattr(module, args) is getattr(importlib.import_module(f"aisteer360.algorithms.{package}.args"), args)
    if control == "FewShot":
        return
    with pytest.raises(ProctorError, match=rf"AISteer360's {control} cannot run in proctor: it .+"):
        cls(beta=0.1)
    with pytest.raises(ProctorError, match=rf"AISteer360's {args} cannot run in proctor"):
        getattr(module, args)()


def test_dpo_names_trl_and_pasta_names_its_hooks():
    with aisteer360_names():
        from aisteer360.algorithms.state_control.pasta.control import PASTA
        from aisteer360.algorithms.structural_control.wrappers.trl.dpotrainer.control import DPO
    with pytest.raises(ProctorError, match="trl"):
        DPO(train_dataset=[], beta=0.1)
    with pytest.raises(ProctorError, match="attention"):
        PASTA(head_config=[0], alpha=0.01)


def upstream_block(directive, examples):
    """few_shot_block.py: the directive, then per example its header and `Title Key: value` lines, joined by
    blank lines."""
    headers = {
        "positive": "### Positive example (behavior to follow)",
        "negative": "### Negative example (behavior to avoid)",
    }
    parts = [directive] if directive else []
    for polarity, example in examples:
        parts.append(
            "\n".join([headers[polarity]] + [f"{k.replace('_', ' ').title()}: {v}" for k, v in example.items()])
        )
    return "\n\n".join(parts)


POSITIVE = [
    {"question": "Can you see the equator?", "good_answer": "No."},
    {"question": "Is the sky green?", "good_answer": "No, blue."},
]
NEGATIVE = [{"question": "Do bulls hate red?", "good_answer": "Yes, they hate it."}]


def test_few_shot_builds_upstream_system_message():
    with aisteer360_names():
        from aisteer360.algorithms.input_control.few_shot import FewShot, FewShotArgs
    control = FewShot(
        directive="Be truthful.",
        positive_example_pool=POSITIVE,
        negative_example_pool=NEGATIVE,
        k_positive=1,
        k_negative=1,
    )
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Is water wet?"}]
    out = control.transform(messages)
    assert out[0] == messages[0] and out[2] == messages[1] and out[1]["role"] == "system"
    chosen = [e for e in POSITIVE if f"Question: {e['question']}" in out[1]["content"]]
    assert len(chosen) == 1  # k_positive = 1
    assert out[1]["content"] == upstream_block("Be truthful.", [("positive", chosen[0]), ("negative", NEGATIVE[0])])
    assert control.transform(messages) == out  # the same prompt always gets the same examples
    # runtime examples replace the pools; with no system message the block goes first
    out = control.transform(
        [{"role": "user", "content": "Q"}], positive_examples=[{"answer": "A1"}], negative_examples=[]
    )
    assert out == [
        {"role": "system", "content": upstream_block("Be truthful.", [("positive", {"answer": "A1"})])},
        {"role": "user", "content": "Q"},
    ]
    # all of a pool when k >= its size; nothing to add leaves the prompt alone
    all_of_them = FewShot(FewShotArgs(positive_example_pool=POSITIVE, k_positive=5)).transform(
        [{"role": "user", "content": "Q"}]
    )
    assert sorted(all_of_them[0]["content"].split("\n\n")) == sorted(
        upstream_block("", [("positive", e) for e in POSITIVE]).split("\n\n")
    )
    assert FewShot().transform([{"role": "user", "content": "Q"}]) == [{"role": "user", "content": "Q"}]
    with pytest.raises(ValueError, match="k_positive must be specified"):
        FewShot(positive_example_pool=POSITIVE)


def test_few_shot_runs_in_a_pipeline_with_runtime_overrides(tiny_model):
    from proctor.dialects.aisteer import SteeringPipeline, batch_retry_generate

    with aisteer360_names():
        from aisteer360.algorithms.input_control.few_shot.control import FewShot
    rows = [
        {"id": "a", "prompt": "First?", "shots": [{"answer": "one"}]},
        {"id": "b", "prompt": "Second?", "shots": [{"answer": "two"}]},
    ]
    with SteeringPipeline(tiny_model, [FewShot(directive="Answer.")]) as pipeline:
        _, _, outputs = batch_retry_generate(
            [{"id": r["id"], "prompt": r["prompt"]} for r in rows],
            pipeline,
            gen_kwargs={"max_new_tokens": 2},
            runtime_overrides={"FewShot": {"positive_examples": "shots"}},
            evaluation_data=rows,
            return_outputs=True,
        )
    for row, output in zip(rows, outputs):
        block = upstream_block("Answer.", [("positive", row["shots"][0])])
        expected = tiny_model.tokenizer.apply_chat_template(
            [{"role": "system", "content": block}, {"role": "user", "content": row["prompt"]}],
            tokenize=False,
            add_generation_prompt=True,
        )
        assert output["rendered_prompt"] == expected
