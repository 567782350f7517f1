"""The Hugging Face backend against direct, unbatched transformers computations."""

from __future__ import annotations

import math

import pytest
import torch

from proctor.core.model_requests import GenerateRequest, LoglikelihoodRequest, RollingLoglikelihoodRequest
from proctor.models.hf.model import HFModel
from tests.support.hf_reference import direct_loglikelihood, reference  # noqa: F401  (reference: a fixture)

PAIRS = [
    ("Question: What is the capital of France?\nAnswer:", " Paris"),
    ("Question: What is the capital of France?\nAnswer:", " the city of Lyon, which is not the capital"),
    ("The quick brown fox", " jumps over the lazy dog"),
    ("Trailing space moves to the continuation ", "word"),
    ("", "An empty context is scored after the prefix token"),
    ("Short", "!"),
    ("A much longer context " * 12, " and a short end"),
    ("Numbers: 1, 2, 3,", " 4, 5, 6"),
    ("Unicode: café, naïve, 東京", " and more ünïcödé"),
]


@pytest.mark.parametrize("batch_size", [1, 3, 8, "auto"])
def test_loglikelihood_matches_direct_computation(tiny_model_dir, reference, batch_size):
    model = HFModel(tiny_model_dir, batch_size=batch_size)
    results = model.loglikelihood([LoglikelihoodRequest(c, x) for c, x in PAIRS])
    for (context, continuation), result in zip(PAIRS, results):
        expected, greedy = direct_loglikelihood(*reference, context, continuation)
        assert result.logprob == pytest.approx(expected, abs=1e-4), (context, continuation)
        assert result.is_greedy == greedy
        assert math.isclose(sum(result.token_logprobs), result.logprob, abs_tol=1e-6)


def test_results_come_back_in_request_order(tiny_model):
    requests = [LoglikelihoodRequest(c, x) for c, x in PAIRS]
    forward = tiny_model.loglikelihood(requests)
    backward = tiny_model.loglikelihood(requests[::-1])[::-1]
    for a, b in zip(forward, backward):
        assert a.logprob == pytest.approx(b.logprob, abs=1e-5)


def test_continuation_split_follows_joint_tokenisation(tiny_model):
    context_ids, continuation_ids = tiny_model.encode_pair("Answer: ", "Paris")
    # The trailing space belongs to the continuation token " Paris".
    assert tiny_model.tokenizer.decode(continuation_ids) == " Paris"
    assert tiny_model.tokenizer.decode(context_ids) == "Answer:"


def test_empty_continuation_scores_zero(tiny_model):
    (result,) = tiny_model.loglikelihood([LoglikelihoodRequest("context", "")])
    assert result.logprob == 0.0 and result.n_tokens == 0


def test_greedy_generation_matches_transformers_generate(tiny_model_dir, reference):
    model, tokenizer = reference
    prompts = ["Once upon a time", "The answer is", "A", "Question: 2+2?\nAnswer:"]
    ours = HFModel(tiny_model_dir, batch_size=3).generate([GenerateRequest(p, max_tokens=8) for p in prompts])
    for prompt, result in zip(prompts, ours):
        ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt").input_ids
        with torch.no_grad():
            out = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=8,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id,
            )
        new = out[0, ids.shape[1] :].tolist()
        eos = tokenizer.eos_token_id
        if eos in new:
            new = new[: new.index(eos)]
        assert result.text == tokenizer.decode(new, skip_special_tokens=True)
        assert result.prompt_tokens == ids.shape[1]


def test_generation_is_the_same_at_every_batch_size(tiny_model_dir):
    prompts = [f"Item {i}: the value is" for i in range(7)]
    requests = [GenerateRequest(p, max_tokens=6) for p in prompts]
    texts = {bs: [r.text for r in HFModel(tiny_model_dir, batch_size=bs).generate(requests)] for bs in (1, 4, 7)}
    assert texts[1] == texts[4] == texts[7]


def test_stop_strings_cut_the_text(tiny_model):
    (free,) = tiny_model.generate([GenerateRequest("Once upon a time", max_tokens=12)])
    assert len(free.text) > 2
    stop = free.text[1:3]
    (stopped,) = tiny_model.generate([GenerateRequest("Once upon a time", max_tokens=12, stop=(stop,))])
    assert stopped.finish_reason == "stop"
    assert stop not in stopped.text
    assert free.text.startswith(stopped.text)


def test_rolling_loglikelihood_single_window_equals_full_forward(tiny_model, reference):
    model, tokenizer = reference
    text = "The rolling log-likelihood of a short text fits in one window."
    (result,) = tiny_model.rolling_loglikelihood([RollingLoglikelihoodRequest(text, window=256)])
    ids = [tokenizer.bos_token_id] + tokenizer(text, add_special_tokens=False).input_ids
    with torch.no_grad():
        logprobs = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), -1)
    expected = sum(logprobs[i, ids[i + 1]].item() for i in range(len(ids) - 1))
    assert result.n_tokens == len(ids) - 1
    assert result.logprob == pytest.approx(expected, abs=1e-4)


def test_rolling_windows_score_every_token_once_with_context(tiny_model, reference):
    model, tokenizer = reference
    text = " ".join(f"word{i}" for i in range(60))
    window, stride = 16, 6
    (result,) = tiny_model.rolling_loglikelihood([RollingLoglikelihoodRequest(text, window=window, stride=stride)])
    ids = [tokenizer.bos_token_id] + tokenizer(text, add_special_tokens=False).input_ids
    n = len(ids) - 1
    expected, start, end = [], 0, min(window, n)
    while start < n:  # independent re-statement of the window rule
        chunk = ids[max(0, end - window) : end + 1]
        with torch.no_grad():
            lp = torch.log_softmax(model(torch.tensor([chunk[:-1]])).logits[0].float(), -1)
        k = end - start
        expected += [lp[len(chunk) - 1 - k + j, chunk[len(chunk) - k + j]].item() for j in range(k)]
        start, end = end, min(end + stride, n)
    assert result.n_tokens == n == len(expected)
    assert list(result.token_logprobs) == pytest.approx(expected, abs=1e-4)


def test_count_tokens_is_the_tokenizers_count_without_special_tokens(tiny_model):
    """What a reasoning model's thinking is counted in (results.json ``thinking.mean_thinking_tokens``)."""
    texts = ["Two and two.\n\nThat makes four.", "", "Blue, surely"]
    expected = [len(tiny_model.tokenizer(text, add_special_tokens=False)["input_ids"]) for text in texts]
    assert tiny_model.count_tokens(texts) == expected
    assert expected[0] > expected[2] > 0 and expected[1] == 0
    assert tiny_model.count_tokens([]) == []


def test_fingerprint_names_model_dtype_and_content(tiny_model):
    fingerprint = tiny_model.fingerprint
    assert fingerprint["backend"] == "hf"
    assert fingerprint["dtype"] == "float32"
    assert fingerprint["content"] and len(fingerprint["content"]) == 16
    # what else moves a number's last bits: device type, packing budget, scoring code version
    from proctor.models.hf.scoring import SCORING_VERSION

    assert (fingerprint["device"], fingerprint["pack_tokens"], fingerprint["scoring"]) == ("cpu", 512, SCORING_VERSION)


def test_packing_budget_is_part_of_the_fingerprint(tiny_model_dir):
    """Another packing budget packs other rows, whose numbers can differ in the last bits: their
    stored answers must not be mixed (another fingerprint, another store key)."""
    from proctor.runs.store import fingerprint_hash

    default, other = HFModel(tiny_model_dir), HFModel(tiny_model_dir, pack_tokens=256)
    assert fingerprint_hash(default.fingerprint) != fingerprint_hash(other.fingerprint)
    assert fingerprint_hash(default.fingerprint) == fingerprint_hash(HFModel(tiny_model_dir, batch_size=64).fingerprint)


def test_glm_style_helpers(tiny_model):
    from proctor.kinds.custom import TaskModel

    helpers = TaskModel(tiny_model)  # what a task class sees as self.model
    scores = helpers.cond_log_prob(["The sky is", "Grass is"], [[" blue", " green"], [" green"]])
    assert [len(s) for s in scores] == [2, 1]
    direct = tiny_model.loglikelihood([LoglikelihoodRequest("Grass is", " green")])[0].logprob
    assert scores[1][0] == pytest.approx(direct, abs=1e-4)
    assert isinstance(helpers.generate_text(["Hello"], max_tokens=3, stop="\n")[0], str)
    assert (
        helpers.name == tiny_model.name and helpers.model is tiny_model.model
    )  # the backend's attributes show through


def test_finished_sequences_leave_the_batch(tiny_model):
    from proctor.models.hf.decode import greedy_decode

    prompts = ["Once upon a time", "The answer is"]
    free = tiny_model.generate([GenerateRequest(p, max_tokens=8) for p in prompts])
    stop = free[0].text[:2]
    assert stop and stop not in free[1].text
    widths = []
    hook = tiny_model.model.get_decoder().register_forward_pre_hook(
        lambda m, a, kw: widths.append(kw["input_ids"].shape[0]), with_kwargs=True
    )
    try:
        ids = [tiny_model.encode(p) for p in prompts]
        decoded = greedy_decode(tiny_model.model, tiny_model.tokenizer, ids, 8, (stop,), tiny_model._eos_ids(), "cpu")
    finally:
        hook.remove()
    assert decoded[0].reason == "stop" and decoded[1].reason in ("length", "eos")
    assert widths[0] == 2 and widths[-1] == 1  # the stopped sequence costs nothing afterwards
    assert len(widths) <= 1 + 8


def test_sampling_is_seeded_and_beam_search_runs(tiny_model):
    sampled = [
        tiny_model.generate([GenerateRequest("Once upon", max_tokens=6, temperature=1.0, seed=3)])[0].text
        for _ in range(2)
    ]
    assert sampled[0] == sampled[1]
    (beam,) = tiny_model.generate(
        [GenerateRequest("Once upon", max_tokens=6, num_beams=3, no_repeat_ngram_size=2, min_tokens=2)]
    )
    assert beam.completion_tokens >= 2


def test_free_slots_are_refilled_and_outputs_match_one_at_a_time(tiny_model):
    """Continuous batching: a waiting prompt joins the running batch when a sequence finishes; each
    output equals decoding that prompt alone, and the cache never grows past the longest row."""
    from proctor.models.hf.decode import greedy_decode

    words = [
        "Once upon a time",
        "The answer is",
        "Question: 2+2?\nAnswer:",
        "A",
        "Hello world",
        "Paris is the capital of",
    ]
    prompts = [words[i % 6] + " and" * (i // 6) for i in range(10)]
    ids = [tiny_model.encode(p) for p in prompts]
    free = tiny_model.generate([GenerateRequest(p, max_tokens=10) for p in prompts])

    # The tiny model repeats itself: stop strings cut from its outputs at growing lengths end
    # sequences at different steps, and the " and" prompts run to the token limit.
    stop = tuple(free[i].text[: (i + 2) * len(free[i].text) // 10] for i in range(4))
    alone = [
        greedy_decode(tiny_model.model, tiny_model.tokenizer, [x], 10, stop, tiny_model._eos_ids(), "cpu")[0]
        for x in ids
    ]
    assert len({len(d.tokens) for d in alone}) >= 3

    def decode(**options):
        calls = []
        hook = tiny_model.model.get_decoder().register_forward_pre_hook(
            lambda m, a, kw: calls.append((tuple(kw["input_ids"].shape), kw["attention_mask"].shape[1])),
            with_kwargs=True,
        )
        try:
            out = greedy_decode(
                tiny_model.model,
                tiny_model.tokenizer,
                ids,
                10,
                stop,
                tiny_model._eos_ids(),
                "cpu",
                batch_size=3,
                **options,
            )
        finally:
            hook.remove()
        assert [(d.tokens, d.reason) for d in out] == [(d.tokens, d.reason) for d in alone]
        steps = [rows for (rows, width), _ in calls if width == 1]
        prefills = [k for k, ((rows, width), _) in enumerate(calls) if width > 1]
        assert max(steps) <= 3  # never more than batch_size sequences decoding
        assert len(steps) < 4 * 10  # fewer steps than four static batches run to their longest
        assert max(width for _, width in calls) <= max(len(x) for x in ids) + 10  # padding is cut
        return calls, prefills

    assert {d.reason for d in alone} == {"stop", "length"}
    # Prefilling only what the free slots need: refills happen while other sequences decode.
    calls, prefills = decode(prefill_tokens=1)
    assert len(prefills) > 1 and prefills[1] < len(calls) - 1
    # Prefilling ahead within a token budget: one forward pass prefills all ten short prompts.
    calls, prefills = decode()
    assert len(prefills) == 1 and calls[0][0][0] == 10


def test_a_shared_prompt_start_is_forwarded_once(tiny_model):
    """Prompts that share a long start (a few-shot header): the start is forwarded once, and each
    output equals decoding that prompt alone."""
    from proctor.models.hf.decode import greedy_decode

    header = "Answer these questions.\n\nQ: What is two plus two?\nA: four\n\nQ: "
    questions = ["Who wrote Hamlet?", "Where is Paris?", "Why is the sky blue?", "When did it rain?", "How?"]
    ids = [tiny_model.encode(header + q + "\nA:") for q in questions]
    shared = len(tiny_model.encode(header.rstrip()))  # at least this many tokens are common
    alone = [
        greedy_decode(tiny_model.model, tiny_model.tokenizer, [x], 6, ("\n",), tiny_model._eos_ids(), "cpu")[0]
        for x in ids
    ]
    fed = []
    hook = tiny_model.model.get_decoder().register_forward_pre_hook(
        lambda m, a, kw: fed.append(kw["input_ids"].shape), with_kwargs=True
    )
    try:
        batched = greedy_decode(
            tiny_model.model, tiny_model.tokenizer, ids, 6, ("\n",), tiny_model._eos_ids(), "cpu", batch_size=2
        )
    finally:
        hook.remove()
    assert [(d.tokens, d.reason) for d in batched] == [(d.tokens, d.reason) for d in alone]
    assert fed[0][0] == 1 and fed[0][1] >= shared  # the shared start, one row
    prompt_tokens = sum(rows * width for rows, width in fed if width > 1)
    assert prompt_tokens <= fed[0][1] + sum(len(x) - fed[0][1] for x in ids) + 2 * len(ids)  # little padding
    assert prompt_tokens < sum(len(x) for x in ids) - 2 * shared


def test_a_sliding_window_cache_decodes_batch_by_batch(tiny_model):
    """A model whose cache is not plain (Mistral's sliding window) is never re-packed: batches run
    one after another, with the same outputs as one prompt at a time."""
    from transformers import MistralConfig, MistralForCausalLM

    from proctor.models.hf.decode import greedy_decode

    torch.manual_seed(0)
    config = MistralConfig(
        vocab_size=len(tiny_model.tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        sliding_window=4,
        max_position_embeddings=128,
    )
    model = MistralForCausalLM(config).eval()
    ids = [
        tiny_model.encode(p) for p in ["Once upon a time there was", "The answer is", "A", "Hello world and more words"]
    ]
    alone = [greedy_decode(model, tiny_model.tokenizer, [x], 6, (), [], "cpu")[0] for x in ids]
    rows = []
    hook = model.get_decoder().register_forward_pre_hook(
        lambda m, a, kw: rows.append(tuple(kw["input_ids"].shape)), with_kwargs=True
    )
    try:
        batched = greedy_decode(model, tiny_model.tokenizer, ids, 6, (), [], "cpu", batch_size=3)
    finally:
        hook.remove()
    assert [d.tokens for d in batched] == [d.tokens for d in alone]
    assert [shape for shape in rows if shape[1] > 1] == [(3, max(len(x) for x in ids[:3])), (1, len(ids[3]))]


@pytest.mark.parametrize("mode", [{}, {"decode": "static"}, {"batch_invariant": True}], ids=str)
def test_a_row_ends_at_its_first_stop_string_whatever_the_token_budget(tiny_model_dir, mode):
    """lm-eval's nq_open settings (a newline, '.' or ',' stops; up to 256 tokens): in every greedy decoder a row
    leaves at the step its text first holds a stop string, so a larger token budget runs no more decoding steps
    and generates no more tokens (the text alone would not show it: it is cut at the stop string either way)."""
    model = HFModel(tiny_model_dir, batch_size=3, **mode)
    prompts = ["Answer these questions:\n\nQ: " + q + "?\nA:" for q in ("who wrote hamlet", "where is paris", "why")]
    prompts += ["Once upon a time", "The answer is", "Paris is the capital of", "Hello world"]
    free = model.generate([GenerateRequest(p, max_tokens=12) for p in prompts])
    stop = ("\n", ".", ",") + tuple(r.text[2:4] for r in free if len(r.text) > 6)  # each row meets one early

    def decode(max_tokens):
        calls = []
        hook = model.model.get_decoder().register_forward_pre_hook(lambda m, a, kw: calls.append(1), with_kwargs=True)
        try:
            results = model.generate([GenerateRequest(p, max_tokens=max_tokens, stop=stop) for p in prompts])
        finally:
            hook.remove()
        return [(r.text, r.finish_reason, r.completion_tokens) for r in results], len(calls)

    short, long = decode(12), decode(200)
    assert all(reason == "stop" and tokens < 12 for _, reason, tokens in short[0])
    assert long == short  # the same texts, tokens generated and forward passes
