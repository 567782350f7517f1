"""The vLLM backend.

vLLM needs a CUDA GPU, so two levels:
- everywhere: the backend runs on a stand-in engine that answers ``LLM.generate`` in vLLM's
  documented shapes (``prompt_logprobs``: ``[None, {token id: Logprob}, ...]``; ``outputs[0]``
  with ``text``, ``token_ids``, ``finish_reason``), computed by the tiny HF model; its numbers
  must equal the HF backend's. This checks proctor's side: tokenisation, offsets, greedy flags.
- where vLLM and a GPU are present: the real engine against the HF backend (skipped here; it
  has not been run in this project's CI).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from proctor.core.model_requests import GenerateRequest, LoglikelihoodRequest, RollingLoglikelihoodRequest

REQUESTS = [
    LoglikelihoodRequest("The cat sat on the", " mat"),
    LoglikelihoodRequest("The cat sat on the ", "mat"),
    LoglikelihoodRequest("Question: what colour is the sky?\nAnswer:", " blue, mostly"),
    LoglikelihoodRequest("", "Hello world"),
    LoglikelihoodRequest("a b c d e f g h i j k l m n o p", " q r s", max_length=6),
    LoglikelihoodRequest("context", ""),
]


@dataclass
class Logprob:  # vllm.logprobs.Logprob's fields
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


class StandInLLM:
    """``vllm.LLM``'s offline methods, answered by a transformers model (full forward per prompt)."""

    def __init__(self, folder) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        self.llm_engine = SimpleNamespace(model_config=SimpleNamespace(max_model_len=512, dtype="torch.float32"))
        self.calls: list[int] = []

    def get_tokenizer(self):
        return self.tokenizer

    def sampling_params(self, **kwargs):
        defaults = dict(
            max_tokens=16, temperature=1.0, top_p=1.0, seed=None, stop=None, min_tokens=0, prompt_logprobs=None
        )
        return SimpleNamespace(**{**defaults, **kwargs})

    def generate(self, prompts, params, use_tqdm=True):
        torch = self.torch
        params = params if isinstance(params, list) else [params] * len(prompts)
        self.calls.append(len(prompts))
        outputs = []
        for prompt, p in zip(prompts, params):
            ids = list(prompt["prompt_token_ids"])
            with torch.inference_mode():
                logprobs = torch.log_softmax(self.model(torch.tensor([ids])).logits[0].float(), -1)
            prompt_lp = None
            if p.prompt_logprobs is not None:
                prompt_lp = [None]
                for position in range(1, len(ids)):
                    row = logprobs[position - 1]
                    target = ids[position]
                    rank = int((row > row[target]).sum()) + 1
                    entry = {target: Logprob(float(row[target]), rank)}
                    best = int(row.argmax())
                    entry.setdefault(best, Logprob(float(row[best]), 1))
                    prompt_lp.append(entry)
            new, reason = [], "length"
            with torch.inference_mode():
                for _ in range(p.max_tokens):
                    token = int(self.model(torch.tensor([ids + new])).logits[0, -1].argmax())
                    if token == self.tokenizer.eos_token_id:
                        reason = "stop"
                        break
                    new.append(token)
            text = self.tokenizer.decode(new, skip_special_tokens=True)
            for stop in p.stop or []:
                if stop in text:
                    text, reason = text[: text.find(stop)], "stop"
            outputs.append(
                SimpleNamespace(
                    prompt_logprobs=prompt_lp, outputs=[SimpleNamespace(text=text, token_ids=new, finish_reason=reason)]
                )
            )
        return outputs


@pytest.fixture(scope="module")
def stand_in(tiny_model_dir):
    from proctor.models.vllm.backend import VLLMModel

    return VLLMModel(tiny_model_dir, engine=StandInLLM(tiny_model_dir), name="tiny-llama")


def test_loglikelihood_from_prompt_logprobs_equals_the_hf_backend(stand_in, tiny_model):
    got = stand_in.loglikelihood(REQUESTS)
    want = tiny_model.loglikelihood(REQUESTS)
    for g, w in zip(got, want):
        assert g.n_tokens == w.n_tokens
        assert g.logprob == pytest.approx(w.logprob, abs=1e-4)
        assert g.token_logprobs == pytest.approx(w.token_logprobs, abs=1e-4)
        assert g.is_greedy == w.is_greedy
        assert g.truncated == w.truncated  # a cut to fit the window is reported (the run's warning counts it)
    assert got[4].truncated > 0
    assert got[-1].logprob == 0.0 and got[-1].n_tokens == 0  # an empty continuation is not sent


def test_rolling_windows_equal_the_hf_backend(stand_in, tiny_model):
    requests = [
        RollingLoglikelihoodRequest("one two three four five six seven eight nine ten " * 3, window=16, stride=8)
    ]
    got, want = stand_in.rolling_loglikelihood(requests), tiny_model.rolling_loglikelihood(requests)
    assert got[0].n_tokens == want[0].n_tokens
    assert got[0].logprob == pytest.approx(want[0].logprob, abs=1e-3)


def test_generation_sends_one_batch_and_maps_results(stand_in, tiny_model):
    requests = [
        GenerateRequest("Once upon a time", max_tokens=6),
        GenerateRequest("The answer is", max_tokens=4, stop=("\n",)),
        GenerateRequest("a b c d e f g h i j k l m n o p", max_tokens=3, max_length=8),  # cut on the left to fit
    ]
    before = len(stand_in.engine.calls)
    got = stand_in.generate(requests)
    assert stand_in.engine.calls[before:] == [3]  # every prompt in one LLM.generate call: vLLM batches them
    want = tiny_model.generate(requests)
    assert [g.text for g in got] == [w.text for w in want]
    assert [g.prompt_tokens for g in got] == [w.prompt_tokens for w in want]
    assert [g.truncated for g in got] == [w.truncated for w in want] and got[2].truncated > 0


def _nan_last(outputs):
    entry = outputs[0].prompt_logprobs[-1]
    entry[next(iter(entry))] = Logprob(float("nan"), 1)


def _positive_last(outputs):
    entry = outputs[0].prompt_logprobs[-1]
    entry[next(iter(entry))] = Logprob(0.5, 1)


def _own_token_missing(outputs):
    entry = outputs[0].prompt_logprobs[-1]
    del entry[next(iter(entry))]
    entry[-1] = Logprob(-0.1, 1)


# an engine output broken one way -> what the error names (models/reply_checks.py, shared with the HTTP backend)
ENGINE_FAULTS = {
    "nan": (_nan_last, "is NaN"),
    "positive": (_positive_last, "above 0"),
    "own token missing": (_own_token_missing, "the prompt's own token has no log-prob"),
    "an entry short": (lambda outputs: outputs[0].prompt_logprobs.pop(), "entries for"),
    "no prompt_logprobs": (lambda outputs: setattr(outputs[0], "prompt_logprobs", None), "not a list"),
    "an output short": (lambda outputs: outputs.pop(), "outputs for 2 inputs"),
}


@pytest.mark.parametrize("fault", list(ENGINE_FAULTS))
def test_a_wrong_engine_output_is_one_error_naming_the_field(tiny_model_dir, fault):
    from proctor.models.reply_checks import ReplyError
    from proctor.models.vllm.backend import VLLMModel

    breaks, says = ENGINE_FAULTS[fault]

    class Broken(StandInLLM):
        def generate(self, prompts, params, use_tqdm=True):
            outputs = super().generate(prompts, params, use_tqdm)
            breaks(outputs)
            return outputs

    model = VLLMModel(tiny_model_dir, engine=Broken(tiny_model_dir), name="tiny-llama")
    with pytest.raises(ReplyError, match="the vLLM engine of 'tiny-llama' sent a wrong reply") as info:
        model.loglikelihood(REQUESTS[:2])
    assert says in str(info.value)
    assert info.value.field.startswith("prompt_logprobs" if fault != "an output short" else "outputs")


def test_a_generation_output_without_completions_is_an_error(tiny_model_dir):
    from proctor.models.reply_checks import ReplyError
    from proctor.models.vllm.backend import VLLMModel

    class Empty(StandInLLM):
        def generate(self, prompts, params, use_tqdm=True):
            outputs = super().generate(prompts, params, use_tqdm)
            outputs[0].outputs = []
            return outputs

    model = VLLMModel(tiny_model_dir, engine=Empty(tiny_model_dir), name="tiny-llama")
    with pytest.raises(ReplyError, match="'outputs' is \\[\\], not a list of completions"):
        model.generate([GenerateRequest("Once upon a time", max_tokens=2)])


def test_fingerprint_and_registry(stand_in):
    assert stand_in.fingerprint["backend"] == "vllm"
    assert stand_in.fingerprint["tensor_parallel_size"] == 1


def test_without_vllm_the_error_says_how_to_install(monkeypatch, tmp_path):
    import sys

    from proctor.core.errors import MissingDependencyError
    from proctor.models.registry import load_model

    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(MissingDependencyError, match=r"proctor\[vllm\]"):
        load_model(f"vllm:{tmp_path}")


def _gpu_and_vllm() -> bool:
    if importlib.util.find_spec("vllm") is None:
        return False
    import torch

    return torch.cuda.is_available()


@pytest.mark.slow
@pytest.mark.skipif(not _gpu_and_vllm(), reason="needs vLLM (pip install 'proctor[vllm]') and a CUDA GPU")
def test_real_vllm_matches_the_hf_backend(tiny_model_dir, tmp_path):
    from proctor import evaluate
    from proctor.models.hf.model import HFModel
    from proctor.models.vllm.backend import VLLMModel

    hf = HFModel(tiny_model_dir, device="cuda", name="tiny-llama")
    model = VLLMModel(
        tiny_model_dir, dtype="float32", name="tiny-llama", gpu_memory_utilization=0.3, enforce_eager=True
    )
    try:
        for g, w in zip(model.loglikelihood(REQUESTS), hf.loglikelihood(REQUESTS)):
            assert g.logprob == pytest.approx(w.logprob, abs=1e-3)
            assert g.is_greedy == w.is_greedy
        requests = [GenerateRequest("Once upon a time", max_tokens=8)]
        assert model.generate(requests)[0].text == hf.generate(requests)[0].text
        from tests.support.fakes import write_tasks

        tasks = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=2)
        result = evaluate([tasks], model, output_dir=tmp_path / "run")
        assert result.results["status"] == "complete"
    finally:
        model.close()


class PrefixCachingLLM(StandInLLM):
    """The stand-in with vLLM's prefix cache as prompt log-prob requests see it: a prompt that reads the cache
    (``skip_reading_prefix_cache=False``) reports ``num_cached_tokens`` (whole blocks of an earlier prompt's
    start, never its last token) and has no log-probs at the positions those tokens decide (vLLM leaves
    them uncomputed: here empty, so reading one is an error)."""

    BLOCK = 4

    def __init__(self, folder) -> None:
        super().__init__(folder)
        cache = SimpleNamespace(enable_prefix_caching=True, block_size=self.BLOCK)
        self.llm_engine.vllm_config = SimpleNamespace(cache_config=cache)
        self.blocks: set[tuple[int, ...]] = set()
        self.reads: list[bool] = []  # per call: whether its prompts read the cache

    def generate(self, prompts, params, use_tqdm=True):
        one = params if not isinstance(params, list) else params[0]
        reading = getattr(one, "skip_reading_prefix_cache", True) is False
        self.reads.append(reading)
        outputs = []
        for prompt in prompts:
            ids = list(prompt["prompt_token_ids"])
            (output,) = super().generate([prompt], params if not isinstance(params, list) else params[:1])
            cached = 0
            if reading:
                while cached + self.BLOCK <= len(ids) - 1 and tuple(ids[: cached + self.BLOCK]) in self.blocks:
                    cached += self.BLOCK
                if output.prompt_logprobs is not None:
                    for position in range(1, cached + 1):
                        output.prompt_logprobs[position] = {}
            self.blocks.update(tuple(ids[:k]) for k in range(self.BLOCK, len(ids) + 1, self.BLOCK))
            output.num_cached_tokens = cached
            outputs.append(output)
        return outputs


def test_prefix_cache_shares_contexts_and_rescores_what_it_covered(tiny_model_dir, tiny_model):
    """Choices of one question read its context from the cache; a prompt whose cached part reaches a scored
    token (a repeated choice of several tokens) is sent again without the cache: the hf backend's numbers."""
    from proctor.models.vllm.backend import VLLMModel

    engine = PrefixCachingLLM(tiny_model_dir)
    model = VLLMModel(tiny_model_dir, engine=engine, name="tiny-llama")
    assert model.prefix_caching and model.engine_settings == {"prefix_caching": True, "block_size": 4}
    context = "Question: which colour is the sky on a clear summer day, seen from the ground?\nAnswer:"
    # the last choice repeats the first: its cached blocks reach into its (five-token) continuation
    choices = (" light blue with white clouds", " green", " grey", " light blue with white clouds")
    requests = [LoglikelihoodRequest(context, c) for c in choices]
    requests.append(LoglikelihoodRequest("Question: how many legs has a spider?\nAnswer:", " eight"))
    got, want = model.loglikelihood(requests), tiny_model.loglikelihood(requests)
    for g, w in zip(got, want):
        assert g.logprob == pytest.approx(w.logprob, abs=1e-4)
        assert g.is_greedy == w.is_greedy
    assert got[0].logprob == got[3].logprob  # the repeated choice, scored again without the cache
    assert engine.reads == [True, False]  # one call reading the cache, one re-sending what it covered
    assert model.prompts_rescored >= 1


def test_the_cpu_build_is_recognised_before_its_platforms_module_is_imported(tmp_path, monkeypatch):
    """``import vllm`` does not import ``vllm.platforms``: the CPU defaults must not depend on who imported it."""
    import importlib
    import sys

    from proctor.models.vllm.cpu import on_cpu

    package = tmp_path / "fake_vllm_cpu"
    (package / "platforms").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "platforms" / "__init__.py").write_text(
        "class _Cpu:\n    def is_cpu(self):\n        return True\n\ncurrent_platform = _Cpu()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    fake = importlib.import_module("fake_vllm_cpu")
    assert getattr(fake, "platforms", None) is None  # as vllm after a plain import
    assert on_cpu(fake) is True
    assert on_cpu(SimpleNamespace()) is False  # a stand-in without platforms: not the CPU build
    monkeypatch.delitem(sys.modules, "fake_vllm_cpu")
    monkeypatch.delitem(sys.modules, "fake_vllm_cpu.platforms")
