"""batch_retry_generate on every kind of target, and each steering control on the tiny model."""

from __future__ import annotations

import pytest
import torch

from proctor.dialects.aisteer import (
    ActivationAddition,
    FewShot,
    LoRA,
    PromptRewrite,
    SteeringPipeline,
    SystemPrompt,
    TokenBias,
    WeightDelta,
    batch_retry_generate,
)
from proctor.models.base import Model

PROMPTS = ["The cat sat on the", "Question: 2+2=", "Hello my name is", "Paris is the capital of", "One two three"]
ITEMS = [{"id": i, "prompt": p} for i, p in enumerate(PROMPTS)]
GEN = {"max_new_tokens": 6}
STEER_POS = ["I love this, wonderful and happy", "joy delight great"]
STEER_NEG = ["I hate this, awful and sad", "grief misery terrible"]


class Spy(Model):
    """A proctor Model that records the prompts it is asked for."""

    def __init__(self, inner):
        self.inner, self.name, self.calls = inner, "spy", []

    @property
    def fingerprint(self):
        return {"spy": self.inner.fingerprint}

    def generate(self, requests, progress=None):
        self.calls.append([r.prompt for r in requests])
        return self.inner.generate(requests, progress)

    def loglikelihood(self, requests, progress=None):
        return self.inner.loglikelihood(requests, progress)

    def rolling_loglikelihood(self, requests, progress=None):
        return self.inner.rolling_loglikelihood(requests, progress)

    def apply_chat_template(self, messages):
        return self.inner.apply_chat_template(messages)

    @property
    def has_chat_template(self):
        return self.inner.has_chat_template


def run(target, tokenizer=None, items=ITEMS, **kwargs):
    return batch_retry_generate(items, target, tokenizer, gen_kwargs=GEN, use_chat=False, **kwargs)


@pytest.mark.parametrize("use_chat", [False, True])
def test_model_raw_and_empty_pipeline_agree(tiny_model, use_chat):
    via_engine = batch_retry_generate(ITEMS, tiny_model, gen_kwargs=GEN, use_chat=use_chat)
    raw = batch_retry_generate(
        ITEMS, tiny_model.model, tiny_model.tokenizer, gen_kwargs=GEN, use_chat=use_chat, batch_size=2
    )
    with SteeringPipeline(tiny_model) as pipeline:
        steered = batch_retry_generate(ITEMS, pipeline, gen_kwargs=GEN, use_chat=use_chat, batch_size=3)
    assert via_engine == raw == steered
    assert len(set(via_engine)) > 1 or use_chat


def test_outputs_and_retries_only_for_unparsed(tiny_model):
    spy = Spy(tiny_model)
    seen: dict[str, int] = {}

    def parse(text):
        seen[text] = seen.get(text, 0) + 1
        return None if text.startswith("=") and seen[text] < 3 else text.strip()

    parsed, raw, outputs = run(spy, parse_fn=parse, max_retries=2, return_outputs=True)
    assert [len(call) for call in spy.calls] == [5, 1, 1]
    assert spy.calls[1] == spy.calls[2] == [PROMPTS[1]]
    assert parsed[1] == raw[1].strip() and all(p is not None for p in parsed)
    assert {o["finish_reason"] for o in outputs} <= {"stop", "length"}
    assert all(o["completion_tokens"] <= 6 for o in outputs)
    spy.calls.clear()
    parsed = run(spy, parse_fn=lambda text: None, max_retries=1)
    assert parsed == [None] * 5 and [len(c) for c in spy.calls] == [5, 5]
    with pytest.raises(ValueError, match="no 'prompt'"):
        run(spy, items=[{"id": 1}])


def test_activation_addition_changes_outputs_and_zero_strength_does_not(tiny_model):
    base = run(tiny_model)
    with SteeringPipeline(tiny_model, [ActivationAddition([0], 8.0, STEER_POS, STEER_NEG)]) as pipeline:
        steered = run(pipeline)
    with SteeringPipeline(tiny_model, [ActivationAddition([0], 0.0, STEER_POS, STEER_NEG)]) as pipeline:
        zero = run(pipeline)
    assert zero == base
    assert sum(a != b for a, b in zip(steered, base)) >= 3
    assert run(tiny_model) == base  # no hook left behind


def test_per_example_strength_stays_aligned_under_expansion(tiny_model):
    rows = [{"id": i, "prompt": p, "strength": 8.0 if i % 2 else 0.0} for i, p in enumerate(PROMPTS)]
    # Several prompts per row, interleaved and out of row order: overrides must follow the ids.
    items = [{"id": r["id"], "prompt": r["prompt"]} for k in range(3) for r in (rows[::-1] if k % 2 else rows)]
    control = ActivationAddition([0], 1.0, STEER_POS, STEER_NEG)
    base = dict(zip(PROMPTS, run(tiny_model)))
    with SteeringPipeline(tiny_model, [ActivationAddition([0], 8.0, STEER_POS, STEER_NEG)]) as pipeline:
        full = dict(zip(PROMPTS, run(pipeline)))
    with SteeringPipeline(tiny_model, [control]) as pipeline:
        mixed = batch_retry_generate(
            items,
            pipeline,
            gen_kwargs=GEN,
            use_chat=False,
            batch_size=4,
            runtime_overrides={"ActivationAddition": {"strength": "strength"}},
            evaluation_data=rows,
        )
        with pytest.raises(ValueError, match="pipeline's controls are"):
            batch_retry_generate(
                items, pipeline, runtime_overrides={"Nope": {"strength": "strength"}}, evaluation_data=rows
            )
    for item, text in zip(items, mixed):
        expected = full if rows[item["id"]]["strength"] else base
        assert text == expected[item["prompt"]]


def test_token_bias_bans_and_zero_strength(tiny_model):
    base = run(tiny_model)
    first_words = {text.split()[0] for text in base if text.split()}
    with SteeringPipeline(tiny_model, [TokenBias(banned=sorted(first_words) + ["="])]) as pipeline:
        banned = run(pipeline)
    assert all(a != b for a, b in zip(banned, base))
    with SteeringPipeline(tiny_model, [TokenBias(bias={"cat": 1e4}, strength=0.0)]) as pipeline:
        assert run(pipeline) == base
    with SteeringPipeline(tiny_model, [TokenBias(bias={"cat": 1e4}, strength=1.0)]) as pipeline:
        assert all(text.replace(" ", "") == "cat" * 6 for text in run(pipeline))


def test_weight_delta_changes_and_restores(tiny_model):
    base = run(tiny_model)
    name = "model.norm.weight"  # the final norm: a delta there reaches the logits directly
    weight = dict(tiny_model.model.named_parameters())[name]
    before = weight.detach().clone()
    delta = torch.randn(weight.shape, generator=torch.Generator().manual_seed(0)) * 3.0
    with SteeringPipeline(tiny_model, [WeightDelta({name: delta}, strength=0.0)]) as pipeline:
        assert run(pipeline) == base
    with SteeringPipeline(tiny_model, [WeightDelta({name: delta}, strength=1.0)]) as pipeline:
        changed = run(pipeline)
    assert changed != base
    assert torch.equal(weight, before)


def test_lora_changes_and_restores(tiny_model):
    pytest.importorskip("peft")
    base = run(tiny_model)
    state = {k: v.clone() for k, v in tiny_model.model.state_dict().items()}
    texts = ["banana banana banana banana banana banana"]
    with SteeringPipeline(tiny_model, [LoRA(texts, r=4, steps=30, lr=5e-2, strength=0.0)]) as pipeline:
        assert run(pipeline) == base
    with SteeringPipeline(tiny_model, [LoRA(texts, r=4, steps=30, lr=5e-2)]) as pipeline:
        tuned = run(pipeline)
    assert sum(a != b for a, b in zip(tuned, base)) >= 3
    assert sorted(tiny_model.model.state_dict()) == sorted(state)
    assert all(torch.equal(v, state[k]) for k, v in tiny_model.model.state_dict().items())
    assert run(tiny_model) == base


def _next_token_logits(model, tokenizer, text):
    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        return model(input_ids=ids).logits[0, -1]


@pytest.mark.parametrize(
    "control, neutral",
    [
        (SystemPrompt("You are a pirate. Answer like one."), SystemPrompt("")),
        (
            FewShot([{"question": "Say dog", "answer": "dog dog"}, {"question": "Say cat", "answer": "cat"}], k=2),
            FewShot([{"question": "q", "answer": "a"}], k=0),
        ),
        (PromptRewrite(template="{prompt} and then"), PromptRewrite(template="{prompt}")),
    ],
    ids=["system", "fewshot", "rewrite"],
)
def test_input_controls(tiny_model, control, neutral):
    base = batch_retry_generate(ITEMS, tiny_model, gen_kwargs=GEN, return_outputs=True)
    with SteeringPipeline(tiny_model, [neutral]) as pipeline:
        assert batch_retry_generate(ITEMS, pipeline, gen_kwargs=GEN, return_outputs=True) == base
    with SteeringPipeline(tiny_model, [control]) as pipeline:
        _, raw, outputs = batch_retry_generate(ITEMS, pipeline, gen_kwargs=GEN, return_outputs=True)
    for before, after in zip(base[2], outputs):
        assert before["rendered_prompt"] != after["rendered_prompt"]
        # The random tiny model copies the last prompt token, so changes before it only show in the
        # distribution of the next token; a rewrite that changes the ending changes the text too.
        a = _next_token_logits(tiny_model.model, tiny_model.tokenizer, before["rendered_prompt"])
        b = _next_token_logits(tiny_model.model, tiny_model.tokenizer, after["rendered_prompt"])
        assert not torch.allclose(a, b, atol=1e-3)
    if isinstance(control, PromptRewrite):
        assert run(SteeringPipeline(tiny_model, [control])) != run(tiny_model)


def test_fewshot_selection_is_seeded_per_prompt(tiny_model):
    pool = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(20)]
    pipeline = SteeringPipeline(tiny_model, [FewShot(pool, k=3, seed=5)])
    first = [pipeline.adapt(p) for p in PROMPTS]
    again = [pipeline.adapt(p) for p in reversed(PROMPTS)][::-1]
    assert first == again and len({str(m[:-1]) for m in first}) > 1


def _transformers_reference(model, tokenizer, prompt, seed=None, **kwargs):
    """transformers' own generate on one unpadded prompt: the independent reference."""
    ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt").input_ids
    if seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), pad_token_id=tokenizer.pad_token_id, **kwargs)
    new = out[0, ids.shape[1] :].tolist()
    if tokenizer.eos_token_id in new:
        new = new[: new.index(tokenizer.eos_token_id)]
    return tokenizer.decode(new, skip_special_tokens=True)


def test_hf_generation_options_on_raw_targets_and_pipelines_match_transformers(tiny_model):
    """repetition_penalty (greedy) and top_k (sampling) go through proctor's HF backend on a raw
    transformers model and on a pipeline, as transformers' generate does them."""
    model, tokenizer = tiny_model.model, tiny_model.tokenizer
    greedy = {"max_new_tokens": 8, "repetition_penalty": 1.8}
    expected = [
        _transformers_reference(
            model,
            tokenizer,
            p,
            max_new_tokens=8,
            do_sample=False,
            repetition_penalty=1.8,
            temperature=None,
            top_p=None,
            top_k=None,
        )
        for p in PROMPTS
    ]
    assert batch_retry_generate(ITEMS, model, tokenizer, gen_kwargs=greedy, use_chat=False) == expected
    with SteeringPipeline(tiny_model) as pipeline:
        assert batch_retry_generate(ITEMS, pipeline, gen_kwargs=greedy, use_chat=False) == expected
    assert expected != run(tiny_model.model, tiny_model.tokenizer)  # the penalty changed something
    sampled = {"max_new_tokens": 6, "do_sample": True, "top_k": 5, "seed": 11}
    one = [{"id": 0, "prompt": PROMPTS[0]}]
    reference = _transformers_reference(
        model, tokenizer, PROMPTS[0], seed=11, max_new_tokens=6, do_sample=True, top_k=5, temperature=1.0, top_p=1.0
    )
    assert batch_retry_generate(one, model, tokenizer, gen_kwargs=sampled, use_chat=False) == [reference]
    with SteeringPipeline(tiny_model) as pipeline:
        assert batch_retry_generate(one, pipeline, gen_kwargs=sampled, use_chat=False) == [reference]


def test_a_generation_option_proctor_lacks_is_named(tiny_model):
    from proctor.core.errors import ProctorError

    for target, tokenizer in ((tiny_model.model, tiny_model.tokenizer), (tiny_model, None)):
        with pytest.raises(ProctorError, match="num_return_sequences"):
            batch_retry_generate(ITEMS, target, tokenizer, gen_kwargs={"num_return_sequences": 2})
    with SteeringPipeline(tiny_model) as pipeline, pytest.raises(ProctorError, match="num_return_sequences"):
        batch_retry_generate(ITEMS, pipeline, gen_kwargs={"num_return_sequences": 2})
