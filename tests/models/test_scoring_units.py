"""Scoring units (issue 47): a request's log-likelihood is bit-identical whatever else is in the run —
other rows (``--limit``), other tasks, the order, the batch size, the threads — while shared prefixes
are still computed once; and it is the log-likelihood transformers computes directly, to float32
precision."""

from __future__ import annotations

import random

import pytest

from proctor.core.model_requests import LoglikelihoodRequest, RollingLoglikelihoodRequest
from proctor.models.hf.model import HFModel
from proctor.models.hf.packing import ScoringItem
from proctor.models.hf.unit_plan import BLOCK, CONTINUATION, cuts, plan_units
from tests.support.hf_reference import direct_loglikelihood, reference  # noqa: F401 (fixture)

WORDS = "red blue green old new fast slow tall short odd even first last cat dog sky sea".split()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _mixed_requests(seed: int = 0) -> list[LoglikelihoodRequest]:
    """Questions with and without a shared preamble of several blocks, 1-4 choices of 1-12 words."""
    rng = random.Random(seed)
    preamble = "Examples: " + _text(rng, 200) + "\n"
    out = []
    for q in range(24):
        context = (preamble if q % 3 else "") + f"Question {q}: {_text(rng, rng.randint(3, 70))}\nAnswer:"
        for _ in range(rng.randint(1, 4)):
            out.append(LoglikelihoodRequest(context, " " + _text(rng, rng.randint(1, 12))))
    return out


# --------------------------------------------------------------------- the plan
@pytest.mark.fast
def test_cut_points_depend_on_the_request_alone():
    context = tuple(range(1, 151))  # 150 context tokens, then a 700-token continuation
    item = ScoringItem(context + tuple(range(1000, 1701)), 701)
    points = cuts(item)
    assert points == [64, 128, 150, 512, 850]  # blocks, the context's end, the continuation at 512s
    assert all(b - a <= max(BLOCK, CONTINUATION) for a, b in zip([0, *points], points))


@pytest.mark.fast
def test_units_are_shared_ancestors_first_and_calls_have_one_size():
    rng = random.Random(1)
    preamble = tuple(rng.randrange(5, 900) for _ in range(140))
    items = []
    for q in range(30):
        context = (preamble if q % 2 else ()) + tuple(rng.randrange(5, 900) for _ in range(rng.randint(2, 90)))
        for c in range(3):
            items.append(ScoringItem(context + tuple(rng.randrange(5, 900) for _ in range(c + 1)), c + 1))
    plan = plan_units(items, call_tokens=512)
    # the preamble's two full blocks exist once, whoever reads them
    first_blocks = [u for u in plan.units if u.start == 0 and u.tokens == preamble[:BLOCK]]
    assert len(first_blocks) == 1
    for u, unit in enumerate(plan.units):
        call, _ = plan.placed[u]
        assert all(plan.placed[a][0] <= call for a in unit.ancestors)  # computed before or beside it
        assert all(a < u for a in unit.ancestors)
    assert all(call.used <= 512 for call in plan.calls)
    # every scored target's column holds the token that predicts it
    for call in plan.calls:
        tokens = {}
        for u, offset in zip(call.units, call.offsets):
            for k, token in enumerate(plan.units[u].tokens):
                tokens[offset + k] = (token, plan.units[u].start + k)
        for i, j, column in call.scored:
            item = items[i]
            position = len(item.tokens) - 1 - item.n_targets + j
            assert tokens[column] == (item.tokens[position], position)
    # each context computed once, each choice's continuation on its own
    assert sum(len(u.tokens) for u in plan.units) < 0.6 * sum(len(i.tokens) - 1 for i in items)


# --------------------------------------------------------------------- the numbers
@pytest.fixture(scope="module")
def model(tiny_model_dir):
    return HFModel(tiny_model_dir, batch_size=4)


def test_units_are_the_default_cpu_layout_and_agree_with_transformers(model, reference):  # noqa: F811
    assert model.layout.name == "units"
    direct, tokenizer = reference
    requests = _mixed_requests()[:30]
    ours = model.loglikelihood(requests)
    for request, result in zip(requests, ours):
        expected, greedy = direct_loglikelihood(direct, tokenizer, request.context, request.continuation)
        assert result.logprob == pytest.approx(expected, abs=1e-4)
        assert result.is_greedy == greedy


@pytest.mark.fast
def test_a_requests_numbers_do_not_depend_on_what_else_is_scored(model):
    import torch

    requests = _mixed_requests()
    alone = model.loglikelihood(requests)
    reference_bits = [r.token_logprobs for r in alone]
    assert len({r.context for r in requests}) > 10 and max(len(r.context) for r in requests) > 900

    rng = random.Random(7)
    other_task = [LoglikelihoodRequest(f"Other {i}: {_text(rng, 40)}", f" {_text(rng, 3)}") for i in range(30)]
    before = torch.get_num_threads()
    try:
        for threads, subset, extra, order_seed in (
            (1, range(0, len(requests), 2), [], 3),  # every other row (another --limit), one thread
            (2, range(5, 17), other_task, 4),  # a slice, mixed with another task's requests
            (2, [len(requests) - 1], [], 5),  # one request alone
        ):
            torch.set_num_threads(threads)
            chosen = [requests[i] for i in subset] + extra
            order = list(range(len(chosen)))
            random.Random(order_seed).shuffle(order)
            results = model.loglikelihood([chosen[k] for k in order])
            by_position = {k: results[n] for n, k in enumerate(order)}
            for n, i in enumerate(subset):
                assert by_position[n].token_logprobs == reference_bits[i], (threads, i)  # bit for bit
    finally:
        torch.set_num_threads(before)
    # a different --batch-size changes nothing either
    assert [r.token_logprobs for r in HFModel(model.path, batch_size=64).loglikelihood(requests)] == reference_bits


def test_shared_prefixes_are_computed_once(model):
    requests = _mixed_requests()
    model.tokens_forwarded = 0
    model.loglikelihood(requests)
    naive = sum(len(model.encode(r.context + r.continuation)) for r in requests)
    assert model.tokens_forwarded < 0.45 * naive


def test_rolling_windows_past_a_continuation_cut_agree_with_one_forward(
    tiny_model_dir, smollm2_tokenizer_dir, tmp_path
):
    """A 1,500-token text in windows of 1,024 (continuation units of up to 512 tokens, a window
    with a long context): the sum of log-probs transformers gives over the same windows."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tests.support.random_llama import TINY, save_random_llama

    folder = save_random_llama(
        tmp_path / "long",
        AutoTokenizer.from_pretrained(smollm2_tokenizer_dir),
        **{**TINY, "max_position_embeddings": 2048},
    )
    ours = HFModel(folder, max_length=1024)
    rng = random.Random(3)
    text = _text(rng, 1500)
    [result] = ours.rolling_loglikelihood([RollingLoglikelihoodRequest(text, 1024, 512)])
    direct = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    ids = [ours.prefix_token_id] + ours.encode(text)
    expected, start = 0.0, 0
    n = len(ids) - 1
    end = min(1024, n)
    with torch.no_grad():
        while start < n:
            window = ids[max(0, end - 1024) : end + 1]
            logprobs = torch.log_softmax(direct(torch.tensor([window[:-1]])).logits[0].float(), -1)
            scored = end - start
            for k in range(len(window) - 1 - scored, len(window) - 1):
                expected += logprobs[k, window[k + 1]].item()
            start, end = end, min(end + 512, n)
    assert result.n_tokens == n
    assert result.logprob == pytest.approx(expected, abs=2e-3, rel=1e-6)


def test_an_unsupported_attention_falls_back_or_is_refused(smollm2_tokenizer_dir, tmp_path):
    """A model whose attention the units cannot stand in for (a sliding window): packed rows by
    default; asked for units by name, an error that says why."""
    from transformers import AutoTokenizer, MistralConfig, MistralForCausalLM

    from proctor.core.errors import ModelLoadError

    tokenizer = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    config = MistralConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        sliding_window=32,
        pad_token_id=tokenizer.pad_token_id,
    )
    MistralForCausalLM(config).save_pretrained(tmp_path / "windowed")
    tokenizer.save_pretrained(tmp_path / "windowed")
    assert HFModel(tmp_path / "windowed").layout.name == "packed"
    with pytest.raises(ModelLoadError, match="forward_layout=units cannot score .*sliding attention window"):
        HFModel(tmp_path / "windowed", forward_layout="units")


# --------------------------------------------------------------------- as users run it
def test_the_command_scores_a_question_the_same_in_runs_of_any_size_or_mix(tiny_model_dir, tmp_path):
    """`proctor run` in fresh processes: 30 questions with --limit 20, all 30 beside a second task
    with a long preamble, and all 30 in another order: every question's per-choice log-likelihoods
    are the same bits in each run (the packed rows gave other last bits with --limit 20, as issue 47
    found with lm-eval's xcopa_zh); accuracy is that of the numbers."""
    import json

    from tests.support.cli_runs import QUIZ, proctor, results, samples, write

    rng = random.Random(11)
    questions = [
        {
            "id": f"q{i}",
            "question": _text(rng, rng.randint(8, 60)),
            "choices": [_text(rng, rng.randint(1, 6)) for _ in range(3)],
            "label": rng.randrange(3),
        }
        for i in range(30)
    ]
    write(tmp_path / "quiz" / "task.yaml", QUIZ)
    write(tmp_path / "quiz" / "data.jsonl", "".join(json.dumps(q) + "\n" for q in questions))
    write(tmp_path / "shuffled" / "task.yaml", QUIZ)
    write(tmp_path / "shuffled" / "data.jsonl", "".join(json.dumps(q) + "\n" for q in questions[::-1]))
    long_task = QUIZ.replace("name: quiz", "name: long").replace(
        'prompt: "Q:', 'prompt: "' + " ".join(WORDS * 12) + "\\nQ:"
    )
    write(tmp_path / "long" / "task.yaml", long_task)
    write(tmp_path / "long" / "data.jsonl", "".join(json.dumps(q) + "\n" for q in questions[:10]))
    model = ["--model", str(tiny_model_dir)]
    for run, tasks, extra in (
        ("small", ["quiz"], ["--limit", "20"]),
        ("mixed", ["quiz", "long"], []),
        ("order", ["shuffled"], []),
    ):
        folders = [str(tmp_path / t) for t in tasks]
        proctor("run", *folders, *model, *extra, "-o", str(tmp_path / run), "-q", cwd=tmp_path)

    def by_id(run: str, task: str) -> dict:
        return {s["id"]: s["logprobs"] for s in samples(tmp_path / run) if s["task"] == task}

    small, mixed, order = by_id("small", "quiz"), by_id("mixed", "quiz"), by_id("order", "quiz")
    assert len(small) == 20 and len(mixed) == len(order) == 30 and len(by_id("mixed", "long")) == 10
    for key, values in mixed.items():
        assert order[key] == values, key  # bit for bit (JSON keeps every float's bits)
        if key in small:
            assert small[key] == values, key
    right = sum(max(range(3), key=lambda k: mixed[q["id"]][k]) == q["label"] for q in questions)
    assert results(tmp_path / "mixed")["tasks"]["quiz"]["metrics"]["acc"]["value"] == pytest.approx(right / 30)
