"""Prefix-sharing packing: shared prefixes forwarded once, rows independent of order and batch size."""

from __future__ import annotations

import random

import pytest

from proctor.core.model_requests import LoglikelihoodRequest, RollingLoglikelihoodRequest
from proctor.models.hf.model import HFModel
from proctor.models.hf.packing import ScoringItem, pack


@pytest.mark.fast
def test_choices_of_one_question_share_their_context():
    context = (1, 2, 3, 4)
    items = [ScoringItem(context + choice, len(choice)) for choice in [(7,), (8, 9), (8, 10, 11)]]
    (row,) = pack(items, budget=100)
    # inputs: context once, then 8 (shared by the two 8-choices), then 10: 4 + 1 + 1 = 6 nodes
    assert row.tokens == [1, 2, 3, 4, 8, 10]
    assert row.depths == [0, 1, 2, 3, 4, 5]
    by_item = {index: (path, targets) for index, path, targets in row.scored}
    assert by_item[0] == ([3], [7])
    assert by_item[1] == ([3, 4], [8, 9])
    assert by_item[2] == ([3, 4, 5], [8, 10, 11])


@pytest.mark.fast
def test_attention_mask_is_each_sequence_alone():
    items = [ScoringItem((1, 2, 5, 6), 2), ScoringItem((1, 2, 7, 8), 2), ScoringItem((3, 4), 1)]
    (row,) = pack(items, budget=100)
    mask = row.attention_mask()
    # node 3 (token 7) sees 1, 2 and itself, never the 5 branch
    assert row.tokens == [1, 2, 5, 7, 3]
    assert mask[3].tolist() == [True, True, False, True, False]
    assert mask[4].tolist() == [False, False, False, False, True]
    assert row.depths == [0, 1, 2, 2, 0]


@pytest.mark.fast
def test_rows_respect_the_budget_and_ignore_order():
    rng = random.Random(0)
    items = [
        ScoringItem(tuple(rng.randrange(50) for _ in range(rng.randrange(3, 30))), rng.randrange(1, 3))
        for _ in range(200)
    ]
    rows = pack(items, budget=64)
    assert all(len(r) <= 64 for r in rows)
    assert sorted(i for r in rows for i, _, _ in r.scored) == list(range(200))
    shuffled = list(range(200))
    rng.shuffle(shuffled)
    rows_shuffled = pack([items[i] for i in shuffled], budget=64)
    assert [r.tokens for r in rows] == [r.tokens for r in rows_shuffled]


@pytest.mark.fast
def test_an_item_longer_than_the_budget_gets_its_own_row():
    items = [ScoringItem(tuple(range(100)), 3), ScoringItem((1, 2, 3), 1)]
    rows = pack(items, budget=10)
    assert sorted(len(r) for r in rows) == [2, 99]


QUESTIONS = [
    (
        f"Question {i}: which of these is the {w} one?\nAnswer:",
        [" the first", " the second option", " a third, longer option here", " four"],
    )
    for i, w in enumerate(
        ["red", "blue", "largest", "oldest", "fastest", "quiet", "bright", "last", "first", "odd", "even"]
    )
]


def all_requests():
    return [LoglikelihoodRequest(q, c) for q, choices in QUESTIONS for c in choices]


@pytest.mark.parametrize("batch_size", [1, 8, 64, "auto"])
def test_scores_are_identical_across_batch_sizes_and_order(tiny_model_dir, batch_size):
    requests = all_requests()
    reference = [r.logprob for r in HFModel(tiny_model_dir, batch_size=1).loglikelihood(requests)]
    model = HFModel(tiny_model_dir, batch_size=batch_size)
    assert [r.logprob for r in model.loglikelihood(requests)] == reference  # bit for bit
    order = list(range(len(requests)))
    random.Random(batch_size if isinstance(batch_size, int) else 7).shuffle(order)
    shuffled = model.loglikelihood([requests[i] for i in order])
    assert [r.logprob for r in shuffled] == [reference[i] for i in order]  # bit for bit, in any order


def test_tokens_forwarded_are_the_unique_tokens_needed(tiny_model_dir):
    model = HFModel(
        tiny_model_dir, forward_layout="packed"
    )  # a trie's nodes (scoring units: tests/models/test_scoring_units)
    model.loglikelihood(all_requests())
    unique_inputs = set()
    for q, choices in QUESTIONS:
        for c in choices:
            context, continuation = model.encode_pair(q, c)
            tokens = context + continuation
            unique_inputs.update(tuple(tokens[: k + 1]) for k in range(len(tokens) - 1))
    assert model.tokens_forwarded == len(unique_inputs)
    naive = sum(len(sum(model.encode_pair(q, c), [])) for q, choices in QUESTIONS for c in choices)
    assert model.tokens_forwarded < 0.5 * naive


def test_engine_results_do_not_depend_on_batch_size(tiny_model_dir, tmp_path):
    from proctor import evaluate
    from tests.conftest import EXAMPLES

    runs = {}
    for batch_size in (1, 8, 64, "auto"):
        model = HFModel(tiny_model_dir, batch_size=batch_size)
        result = evaluate(
            [EXAMPLES / "quickstart"], model, output_dir=tmp_path / f"bs{batch_size}", select=["*_mc"], export=False
        )
        runs[batch_size] = (
            (tmp_path / f"bs{batch_size}" / "samples.jsonl").read_text(),
            result.tasks["quickstart_science_mc"]["metrics"],
        )
    assert len({samples for samples, _ in runs.values()}) == 1  # every log-prob, bit for bit
    assert all(metrics == runs[1][1] for _, metrics in runs.values())


def test_scores_do_not_depend_on_the_number_of_threads(tiny_model_dir):
    """A Ray worker scores with one intra-op thread, the driver with as many as it has cores: the
    numbers must not move. Short rows (5 to 11 nodes, as many scored) are the shapes whose matrix
    products MKL sums differently per thread count on AMD CPUs; rows are padded past them."""
    torch = pytest.importorskip("torch")
    model = HFModel(tiny_model_dir)
    words = " one two three four five six seven eight nine ten eleven twelve".split()
    requests = [LoglikelihoodRequest("Count:", " " + " ".join(words[:k])) for k in range(3, 13)]
    texts = [RollingLoglikelihoodRequest(" ".join(words[:k])) for k in (5, 7, 10)]
    before = torch.get_num_threads()
    runs = []
    try:
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            alone = [model.loglikelihood([r])[0].token_logprobs for r in requests]  # one short row per call
            together = [r.token_logprobs for r in model.loglikelihood(requests)]
            rolling = [r.token_logprobs for r in model.rolling_loglikelihood(texts)]
            runs.append((alone, together, rolling))
    finally:
        torch.set_num_threads(before)
    assert runs[1] == runs[0] and runs[2] == runs[0]  # bit for bit


def test_greedy_hits_are_argmax_with_ties():
    """The CPU path compares values (argmax is slow there) and resolves ties of the maximum by
    argmax's first index, as lm-evaluation-harness's ``argmax(dim=-1) == target`` does."""
    torch = pytest.importorskip("torch")
    from proctor.models.hf.vocab_head import greedy_hits

    generator = torch.Generator().manual_seed(0)
    logits = torch.randint(0, 6, (32, 4096), generator=generator).float()  # many ties of the maximum
    logits[0, 3] = logits[0, 7] = 99.0  # index 3 is argmax, 7 is not
    rows = torch.arange(32).repeat_interleave(3)
    targets = torch.randint(0, 4096, (96,), generator=generator)
    targets[::3] = logits.argmax(dim=-1)  # every row's first maximum once
    targets[:3] = torch.tensor([3, 7, 0])
    hits = greedy_hits(logits, rows, targets)
    assert hits.tolist() == (logits.argmax(dim=-1)[rows] == targets).tolist()
    assert hits[:3].tolist() == [True, False, False] and hits.sum() >= 32


@pytest.mark.parametrize("softcap", [None, 30.0])
def test_vocabulary_head_is_linear_log_softmax_and_argmax_bit_for_bit(softcap):
    """Buffered projection (a Linear head on the CPU) and the plain module call give exactly
    ``log_softmax(head(hidden).float())[row, target]`` and argmax hits, whatever the block's size
    and after the buffers were used for a bigger block."""
    torch = pytest.importorskip("torch")
    from proctor.models.hf.vocab_head import VocabularyHead

    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 5000, bias=False)
    biased = torch.nn.Linear(64, 5000)
    wrapped = torch.nn.Sequential(linear)  # not an nn.Linear: called as it is
    with torch.no_grad():
        for module in (linear, biased):
            module.weight.mul_(40)
        for module, buffered in ((linear, True), (biased, True), (wrapped, False)):
            head = VocabularyHead(module, "cpu", softcap)
            assert head._buffered is buffered
            for n in (64, 16, 48):
                hidden = torch.randn(n, 64)
                rows = torch.arange(n).repeat_interleave(2)
                targets = torch.randint(0, 5000, (2 * n,))
                logits = module(hidden).float()
                if softcap:
                    logits = torch.tanh(logits / softcap) * softcap
                targets[::2] = logits.argmax(dim=-1)
                values, hits = head.scores(hidden, rows, targets)
                assert torch.equal(values, torch.log_softmax(logits, dim=-1)[rows, targets])
                assert hits.tolist() == (logits.argmax(dim=-1)[rows] == targets).tolist()


def test_vocabulary_head_calls_a_hooked_head():
    """A forward hook on the output embedding (how steering controls edit logits) is honoured: the
    buffered projection is used only for a plain Linear without hooks."""
    torch = pytest.importorskip("torch")
    from proctor.models.hf.vocab_head import VocabularyHead

    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 500, bias=False)
    head = VocabularyHead(linear, "cpu")
    hidden, rows, targets = torch.randn(16, 64), torch.arange(16), torch.zeros(16, dtype=torch.long)
    with torch.no_grad():
        plain, _ = head.scores(hidden, rows, targets)
        handle = linear.register_forward_hook(
            lambda module, args, output: output + torch.nn.functional.one_hot(torch.tensor(0), 500) * 50.0
        )
        boosted, hits = head.scores(hidden, rows, targets)
        handle.remove()
        again, _ = head.scores(hidden, rows, targets)
    expected = torch.log_softmax(linear(hidden) + torch.nn.functional.one_hot(torch.tensor(0), 500) * 50.0, dim=-1)[
        rows, targets
    ]
    assert torch.equal(boosted, expected) and bool(hits.all())
    assert torch.equal(again, plain) and not torch.equal(plain, boosted)
