"""A use case target with its own ``generate`` (a steering pipeline from another package, a PEFT model, a
user's decoding wrapper) is called through it, greedy and sampled, as AISteer360's ``batch_retry_generate``
calls ``model_or_pipeline.generate(...)``; proctor's own decoder runs only plain transformers models and
proctor's pipelines. The expected replies come from AISteer360's ``chat_generate_model`` written out
(``aisteer_replies``): chat-rendered prompts, left padding, chunks of ``batch_size`` tokenized without
special tokens, ``generate(input_ids=, attention_mask=, **gen_kwargs)``, the new tokens decoded."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from proctor.dialects.aisteer import batch_retry_generate
from proctor.dialects.aisteer.continuations import continuation_logprobs
from proctor.dialects.aisteer.generation import has_own_generate
from tests.conftest import REPO

PROMPTS = ["Once upon a time", "The capital of France is", "List three colours:"]


class GenerateOnly:
    """A decoding wrapper that is not a torch module (not callable): its ``generate`` suppresses some
    tokens, records every call, and is the only way to run it."""

    def __init__(self, model, suppress):
        self.model, self.suppress, self.calls = model, list(suppress), []

    @property
    def config(self):
        return self.model.config

    @property
    def device(self):
        return self.model.device

    def generate(self, input_ids, attention_mask, **gen_kwargs):
        self.calls.append({"input_ids": input_ids.tolist(), "attention_mask": attention_mask.tolist(), **gen_kwargs})
        return self.model.generate(
            input_ids=input_ids, attention_mask=attention_mask, suppress_tokens=self.suppress, **gen_kwargs
        )


def callable_wrapper(model, suppress):
    """The same wrapper as a torch module: its forward pass is the plain model's, its generate is not."""
    import torch

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = GenerateOnly(model, suppress)
            self.model = model

        @property
        def config(self):
            return model.config

        @property
        def device(self):
            return model.device

        @property
        def calls(self):
            return self.inner.calls

        def forward(self, *args, **kwargs):
            return self.model(*args, **kwargs)

        def generate(self, input_ids, attention_mask, **gen_kwargs):
            return self.inner.generate(input_ids, attention_mask, **gen_kwargs)

    return Wrapper()


def aisteer_replies(target, tokenizer, prompts, gen_kwargs, batch_size):
    """AISteer360's chat_generate_model for a model that is not its SteeringPipeline, written out."""
    import torch

    rendered = [
        tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
        for p in prompts
    ]
    tokenizer.padding_side = "left"  # batch_retry_generate: decoder-only config -> left padding
    replies = []
    for start in range(0, len(rendered), batch_size):
        inputs = tokenizer(
            rendered[start : start + batch_size],
            return_tensors="pt",
            padding=True,
            truncation=True,
            add_special_tokens=False,
        )
        with torch.no_grad():
            out = target.generate(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"], **gen_kwargs)
        replies.extend(tokenizer.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True))
    return replies


@pytest.fixture(scope="module")
def loaded(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def first_tokens(model, tokenizer) -> list[int]:
    """The plain model's greedy first token after each chat-rendered prompt (the wrapper suppresses them,
    so a reply that bypassed the wrapper would start otherwise)."""
    import torch

    firsts = set()
    for prompt in PROMPTS:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )
        ids = torch.tensor([tokenizer(text, add_special_tokens=False).input_ids])
        with torch.no_grad():
            firsts.add(int(model(input_ids=ids).logits[0, -1].argmax()))
    return sorted(firsts)


@pytest.mark.parametrize("make", [GenerateOnly, callable_wrapper], ids=["not-callable", "torch-module"])
def test_wrapper_generate_is_called_greedy(loaded, make):
    model, tokenizer = loaded
    suppress = first_tokens(model, tokenizer)
    wrapper = make(model, suppress)
    assert has_own_generate(wrapper) and not has_own_generate(model)
    gen_kwargs = {"max_new_tokens": 6}
    parsed, raw, outputs = batch_retry_generate(
        [{"prompt": p} for p in PROMPTS], wrapper, tokenizer, gen_kwargs=gen_kwargs, return_outputs=True, batch_size=2
    )
    assert len(wrapper.calls) == 2  # one call per chunk of batch_size
    assert all(call["max_new_tokens"] == 6 and "seed" not in call and "do_sample" not in call for call in wrapper.calls)
    reference = make(model, suppress)
    expected = aisteer_replies(reference, tokenizer, PROMPTS, gen_kwargs, 2)
    assert raw == parsed == expected
    assert wrapper.calls == reference.calls  # the same token ids, masks and keywords
    plain = batch_retry_generate(
        [{"prompt": p} for p in PROMPTS], model, tokenizer, gen_kwargs=gen_kwargs, batch_size=2
    )
    assert all(a != b for a, b in zip(raw, plain))  # not bypassed: the plain model's replies start otherwise
    for output in outputs:
        assert output["finish_reason"] in ("stop", "length") and output["completion_tokens"] <= 6
        assert output["rendered_prompt"].endswith("assistant\n")


def test_wrapper_generate_is_called_sampled(loaded):
    import torch

    model, tokenizer = loaded
    wrapper = GenerateOnly(model, [])
    gen_kwargs = {"max_new_tokens": 8, "do_sample": True, "temperature": 1.3, "top_k": 0}
    raw = batch_retry_generate(
        [{"prompt": p} for p in PROMPTS], wrapper, tokenizer, gen_kwargs=gen_kwargs, batch_size=2
    )
    assert [(c["do_sample"], c["temperature"], c["top_k"], "seed" in c) for c in wrapper.calls] == [
        (True, 1.3, 0, False)
    ] * 2
    torch.manual_seed(0)  # batch_retry_generate's first round seeds torch with gen_kwargs' seed (default 0)
    assert raw == aisteer_replies(GenerateOnly(model, []), tokenizer, PROMPTS, gen_kwargs, 2)
    again = batch_retry_generate(
        [{"prompt": p} for p in PROMPTS], wrapper, tokenizer, gen_kwargs={**gen_kwargs, "seed": 5}, batch_size=2
    )
    torch.manual_seed(5)
    assert again == aisteer_replies(GenerateOnly(model, []), tokenizer, PROMPTS, gen_kwargs, 2)


def test_instance_generate_is_not_bypassed(loaded):
    """A transformers model whose generate was replaced on the object is called through it."""
    model, tokenizer = loaded
    import copy

    patched = copy.copy(model)
    wrapper = GenerateOnly(model, [])
    patched.generate = wrapper.generate
    assert has_own_generate(patched)
    raw = batch_retry_generate([{"prompt": PROMPTS[0]}], patched, tokenizer, gen_kwargs={"max_new_tokens": 3})
    assert len(wrapper.calls) == 1 and raw == aisteer_replies(model, tokenizer, PROMPTS[:1], {"max_new_tokens": 3}, 8)


def test_targets_without_generate_or_forward_are_refused(loaded):
    model, tokenizer = loaded
    with pytest.raises(TypeError, match="object with a generate"):
        batch_retry_generate([{"prompt": "hi"}], object(), tokenizer)
    with pytest.raises(ValueError, match="needs its tokenizer"):
        batch_retry_generate([{"prompt": "hi"}], GenerateOnly(model, []), None)
    with pytest.raises(TypeError, match="forward pass"):
        continuation_logprobs(GenerateOnly(model, []), tokenizer, [("Q:", " A")])


def test_builtin_mcqa_use_case_through_a_wrapper_in_a_fresh_process(loaded, tiny_model_dir, tmp_path):
    """AISteer360's way of running a use case on a wrapper, in its own process: CommonsenseMCQA.generate
    (wrapper, tokenizer, gen_kwargs, batch_size=...) replies are the wrapper's, letter by letter."""
    from proctor.dialects.aisteer import CommonsenseMCQA, MCQAAccuracy

    rows = [
        {
            "id": f"q{i}",
            "question": f"Which word is number {i}?",
            "answer": f"w{i}",
            "choices": [f"w{i}", "apple", "river"],
        }
        for i in range(3)
    ]
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    script = tmp_path / "run_wrapper.py"
    script.write_text(
        "import json, sys, torch\n"
        "from transformers import AutoModelForCausalLM, AutoTokenizer\n"
        "from proctor.dialects.aisteer import CommonsenseMCQA, MCQAAccuracy\n"
        "folder, rows = sys.argv[1], json.load(open(sys.argv[2]))\n"
        "tokenizer = AutoTokenizer.from_pretrained(folder)\n"
        "model = AutoModelForCausalLM.from_pretrained(folder).eval()\n"
        "class Wrapper:\n"
        "    def __init__(self): self.config, self.device, self.calls = model.config, model.device, 0\n"
        "    def generate(self, input_ids, attention_mask, **kw):\n"
        "        self.calls += 1\n"
        "        return model.generate(input_ids=input_ids, attention_mask=attention_mask, "
        "pad_token_id=tokenizer.eos_token_id, **kw)\n"
        "wrapper = Wrapper()\n"
        "case = CommonsenseMCQA(evaluation_data=rows, evaluation_metrics=[MCQAAccuracy()], num_shuffling_runs=2)\n"
        "records = case.generate(wrapper, tokenizer, gen_kwargs={'max_new_tokens': 4}, batch_size=4, max_retries=0)\n"
        "print(json.dumps({'records': records, 'calls': wrapper.calls, 'evaluations': case.evaluate(records)}))\n"
    )
    done = subprocess.run(
        [sys.executable, str(script), str(tiny_model_dir), str(tmp_path / "rows.json")],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    model, tokenizer = loaded
    case = CommonsenseMCQA(evaluation_data=rows, evaluation_metrics=[MCQAAccuracy()], num_shuffling_runs=2)
    prompts = [item["prompt"] for item in case.prompt_data()]
    expected = aisteer_replies(
        model, tokenizer, prompts, {"max_new_tokens": 4, "pad_token_id": tokenizer.eos_token_id}, 4
    )
    assert out["calls"] == 2  # 6 prompts in chunks of 4
    assert [r["raw_response"] for r in out["records"]] == expected
    assert all(
        "letter_probs" in r and r["letter_probs"] is None for r in out["records"]
    )  # nothing scored outside its generate
