"""The fused CPU vocabulary head (``models/hf/head_kernel.py``, ``models/hf/kernels/vocab_head.c``).

Its numbers are checked against PyTorch's own head (``log_softmax(mm)``: bit for bit where ATen
runs its AVX2 kernels and MKL its AVX2 GEMM, or their AVX-512 ones at widths up to 768, as on this
project's machines), against a float64
log-softmax computed here, its greedy hits against ``argmax`` (ties included), and its bits against
themselves: the same node gives the same values in any block, at any thread count, built for any
instruction set. The last tests run the ``proctor`` command with it (the default) and with
``--model-arg vocab_head=torch``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES

torch = pytest.importorskip("torch")

from proctor.models.hf import head_kernel  # noqa: E402
from proctor.models.hf.vocab_head import VocabularyHead  # noqa: E402

pytestmark = pytest.mark.skipif(head_kernel.load() is None, reason="no C compiler: the head runs as PyTorch ops")


def _linear(vocab: int, width: int, scale: float, seed: int = 0):
    torch.manual_seed(seed)
    linear = torch.nn.Linear(width, vocab, bias=False)
    with torch.no_grad():
        linear.weight.mul_(scale)
    return linear


def _exact(linear, hidden, rows, targets):
    """log_softmax in float64 at (row, target), and the rows' first maxima."""
    logits = hidden.double() @ linear.weight.detach().double().t()
    return torch.log_softmax(logits, dim=-1)[rows, targets], logits.argmax(dim=-1)


@pytest.mark.parametrize(
    ("vocab", "width", "scale"), [(5000, 64, 40.0), (49152, 64, 1.0), (1001, 576, 3.0), (37, 8, 1.0)]
)
def test_fused_head_equals_a_float64_log_softmax_to_float32_precision(vocab, width, scale):
    """Vocabularies that are and are not a multiple of the kernel's 24-entry tiles, widths from 8 to
    576; log-probs to within float32 rounding of the logits' size, hits exactly argmax's."""
    linear = _linear(vocab, width, scale)
    head = VocabularyHead(linear, "cpu", fused=True)
    assert head.implementation == head_kernel.version(head.order) and head.block_size == 1024
    assert VocabularyHead(linear, "cpu").implementation is None  # the class's default: PyTorch's ops
    n = 48
    hidden = torch.randn(n, width)
    rows = torch.arange(n).repeat_interleave(3)
    targets = torch.randint(0, vocab, (3 * n,))
    with torch.no_grad():
        exact, first = _exact(linear, hidden, rows, targets)
        targets[::3] = first  # every row's greedy token once
        exact, first = _exact(linear, hidden, rows, targets)
        values, hits = head.scores(hidden, rows, targets)
        logits = (hidden @ linear.weight.t()).abs().amax(dim=-1)[rows].double()
    assert values.dtype == torch.float32 and hits.dtype == torch.bool
    # float32 logits are rounded by about 6e-8 of their size; the log-sum-exp adds a few ulps of its own
    assert ((values.double() - exact).abs() <= 1e-6 * torch.clamp(logits, min=1.0)).all()
    assert hits.tolist() == (first[rows] == targets).tolist() and hits[::3].all()


def _pytorch_head_rounds_as_the_kernel(width: int) -> bool:
    """ATen's log-softmax and MKL's GEMM in the order the kernel follows here (``head_kernel.order``):
    ATen's lanes by its capability, and MKL's order of a logit as the kernel's probe found it (its
    AVX2 blocks at every width; its AVX-512 halves where MKL sums a logit's k in at most two halves:
    its order past 768 on Intel was not read)."""
    return torch.backends.mkl.is_available() and head_kernel.follows_pytorch(width)


@pytest.mark.skipif(not torch.backends.mkl.is_available(), reason="PyTorch without MKL: another GEMM's order")
@pytest.mark.parametrize("width", [64, 256, 576, 960])
def test_the_probe_finds_mkls_order_of_a_logit(width):
    """MKL's order of a logit's k at the widths of the tests' and SmolLM2's heads is one of the
    kernel's (on Intel and AMD processors, AVX2 or AVX-512 — read off each): the kernel's logits are
    PyTorch's, every bit, in the order its probe rates closest."""
    shares = head_kernel._probe(width)
    chosen = max(head_kernel.candidates(), key=lambda c: shares[c])  # the first of the best: ties keep ATen's
    linear = _linear(3000, width, 1.0, seed=1)
    hidden = torch.randn(64, width)
    rows = torch.arange(64).repeat_interleave(8)
    targets = torch.randint(0, 3000, (8 * 64,))
    weight = linear.weight.detach()
    logits = head_kernel.pair_logits(head_kernel.load(), weight, hidden, rows, targets, chosen)
    with torch.no_grad():
        assert torch.equal(logits, (hidden @ linear.weight.t())[rows, targets])  # a real head's shape, every bit


@pytest.mark.skipif(not torch.backends.mkl.is_available(), reason="PyTorch without MKL: another GEMM's order")
def test_the_fused_head_runs_only_where_its_probe_finds_pytorchs_bits(monkeypatch):
    """The kernel is used where one of its orders gives PyTorch's whole head (log-probs and greedy hits) in every
    value of the probe, with ATen's lanes probed too; where none does it is not, with a warning naming the best
    share, and the head's numbers are PyTorch's ops' (a torch or MKL update that moved a last bit would otherwise
    change most values while the fingerprint still said fused)."""
    linear = _linear(3000, 64, 1.0, seed=2)
    head = VocabularyHead(linear, "cpu", fused=True)
    assert head.implementation is not None and head.refused is None
    assert head_kernel._probe(64, linear.weight)[head.order] == 1.0
    assert head.order == head_kernel.order(64, linear.weight)
    other = _linear(3000, 64, 1.0, seed=3)
    monkeypatch.setattr(head_kernel, "_probe", lambda torch, width, weight=None: {8: 0.31, 16: 0.9995})
    refused = VocabularyHead(other, "cpu", fused=True)
    assert refused.implementation is None
    assert refused.refused == "no order of the fused kernel reproduces PyTorch's head here (best 99.95% of bits)"
    hidden = torch.randn(64, 64)
    rows, targets = torch.arange(64), torch.randint(0, 3000, (64,))
    with torch.no_grad():
        values, _ = refused.scores(hidden, rows, targets)
        assert torch.equal(values, torch.log_softmax(hidden @ other.weight.t(), dim=-1)[rows, targets])


@pytest.mark.parametrize(
    ("vocab", "width", "scale"),
    [(49152, 64, 1.0), (5000, 64, 40.0), (49152, 256, 0.5), (1001, 576, 3.0), (49157, 960, 0.3), (37, 8, 1.0)],
)
def test_fused_head_computes_pytorchs_log_softmax(vocab, width, scale):
    """PyTorch's head on the CPU (the default ``VocabularyHead``: ``mm`` into a buffer, then
    ``log_softmax``, as lm-evaluation-harness computes it) and the kernel: the same bits where the
    kernel's order is PyTorch's (AVX2, or AVX-512 at widths to 768: 16 lanes, k in halves); a value may
    differ in its last bit where the kernel's ``log`` rounds otherwise than SLEEF's. Elsewhere within
    float32 rounding."""
    linear = _linear(vocab, width, scale, seed=width)
    n = 256
    hidden = torch.randn(n, width)
    rows = torch.arange(n).repeat_interleave(2)
    targets = torch.randint(0, vocab, (2 * n,))
    pytorch = VocabularyHead(linear, "cpu")
    with torch.no_grad():
        parts = [pytorch.scores(hidden[s : s + 64], rows[:128], targets[2 * s : 2 * s + 128]) for s in range(0, n, 64)]
        expected = torch.cat([p[0] for p in parts])
        expected_hits = torch.cat([p[1] for p in parts])
        values, hits = VocabularyHead(linear, "cpu", fused=True).scores(hidden, rows, targets)
    assert torch.equal(hits, expected_hits)
    size = expected.double().abs().clamp(min=1.0)
    if _pytorch_head_rounds_as_the_kernel(width):
        assert (values == expected).double().mean() >= 0.99
        assert ((values.double() - expected.double()).abs() <= 2.4e-7 * size).all()  # an ulp or two of the value
    else:
        assert ((values.double() - expected.double()).abs() <= 1e-5 * size).all()


def test_fused_head_resolves_ties_by_the_first_index_and_keeps_nan():
    """Equal weight rows give equal logits: the maximum's first index is the greedy token, as
    ``argmax`` says; a NaN hidden state gives NaN log-probs, as a log-softmax does."""
    linear = _linear(3000, 64, 4.0)
    with torch.no_grad():
        linear.weight[2500] = linear.weight[7] = linear.weight[1234]  # three rows alike
    head = VocabularyHead(linear, "cpu", fused=True)
    hidden = linear.weight[1234].detach().repeat(16, 1) * 3.0  # its own row: the maximum, tied three times
    rows = torch.arange(16).repeat_interleave(3)
    targets = torch.tensor([7, 1234, 2500] * 16)
    with torch.no_grad():
        values, hits = head.scores(hidden, rows, targets)
        assert int((hidden @ linear.weight.t()).argmax(dim=-1)[0]) == 7
    assert hits.tolist() == [True, False, False] * 16
    assert values[0] == values[1] == values[2]  # the same logit, bit for bit
    hidden[3, 5] = float("nan")
    with torch.no_grad():
        values, _ = head.scores(hidden, rows, targets)
    assert torch.isnan(values[9:12]).all() and not torch.isnan(values[:9]).any()


def test_fused_head_bits_do_not_depend_on_the_block_or_the_threads():
    """A node's values are the same alone, among 1,024 others, at another position of the block,
    with 1, 2 or 3 threads."""
    linear = _linear(20000, 64, 10.0)
    head = VocabularyHead(linear, "cpu", fused=True)
    hidden = torch.randn(1024, 64)
    targets = torch.randint(0, 20000, (1024,))
    before = torch.get_num_threads()
    results = []
    try:
        with torch.no_grad():
            for threads in (1, 2, 3):
                torch.set_num_threads(threads)
                everything = head.scores(hidden, torch.arange(1024), targets)
                order = torch.randperm(1024, generator=torch.Generator().manual_seed(threads))
                shuffled = head.scores(hidden[order], torch.arange(1024), targets[order])
                alone = head.scores(hidden[:16].contiguous(), torch.arange(16), targets[:16])
                assert torch.equal(shuffled[0], everything[0][order]) and torch.equal(shuffled[1], everything[1][order])
                assert torch.equal(alone[0], everything[0][:16])
                results.append(everything)
    finally:
        torch.set_num_threads(before)
    assert all(torch.equal(r[0], results[0][0]) and torch.equal(r[1], results[0][1]) for r in results)


def test_fused_head_follows_a_weight_edited_in_place():
    """The packed copy of the weight is made again when the weight changes (a steering control
    may edit it); a hooked head is called as a module."""
    linear = _linear(500, 64, 5.0)
    head = VocabularyHead(linear, "cpu", fused=True)
    hidden, rows, targets = torch.randn(16, 64), torch.arange(16), torch.zeros(16, dtype=torch.long)
    with torch.no_grad():
        plain, _ = head.scores(hidden, rows, targets)
        linear.weight[0] += 1.0
        edited, _ = head.scores(hidden, rows, targets)
        exact, _ = _exact(linear, hidden, rows, targets)
    assert not torch.equal(plain, edited)
    assert ((edited.double() - exact).abs() <= 1e-5).all()


def test_a_token_outside_the_vocabulary_is_refused_not_read():
    """A target id the head has no row for is an IndexError (as indexing the logits was), never a
    read past the weight."""
    head = VocabularyHead(_linear(500, 64, 1.0), "cpu", fused=True)
    hidden, rows = torch.randn(16, 64), torch.arange(16)
    for bad in (500, -1):
        targets = torch.zeros(16, dtype=torch.long)
        targets[3] = bad
        with torch.no_grad(), pytest.raises(IndexError, match="outside the head's vocabulary of 500"):
            head.scores(hidden, rows, targets)


def test_other_heads_keep_pytorch_ops_bit_for_bit():
    """A biased Linear, a softcapped head and a non-Linear head are PyTorch's log-softmax exactly."""
    torch.manual_seed(0)
    biased = torch.nn.Linear(64, 700)
    wrapped = torch.nn.Sequential(torch.nn.Linear(64, 700, bias=False))
    for module, softcap in ((biased, None), (wrapped, None), (torch.nn.Linear(64, 700, bias=False), 30.0)):
        head = VocabularyHead(module, "cpu", softcap, fused=True)
        assert head.implementation is None
        hidden, rows = torch.randn(16, 64), torch.arange(16)
        targets = torch.randint(0, 700, (16,))
        with torch.no_grad():
            logits = module(hidden).float()
            if softcap:
                logits = torch.tanh(logits / softcap) * softcap
            values, _ = head.scores(hidden, rows, targets)
        assert torch.equal(values, torch.log_softmax(logits, dim=-1)[rows, targets])


def test_the_kernel_build_is_keyed_and_reused(tmp_path):
    """Built once into PROCTOR_HOME/kernels/<key>/ and loaded from there by later processes."""
    code = "from proctor.models.hf import head_kernel; print(head_kernel.load() is not None)"
    env = {**os.environ, "PROCTOR_HOME": str(tmp_path / "home")}
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        assert done.stdout.strip() == "True", done.stderr
    built = list((tmp_path / "home" / "kernels").glob("*/vocab_head.so"))
    assert len(built) == 1
    stamp = built[0].stat().st_mtime_ns
    subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert built[0].stat().st_mtime_ns == stamp  # not built again


# --------------------------------------------------------------------- as users run it
def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "proctor.cli", *args], capture_output=True, text=True, timeout=900, env=env
    )


def test_the_command_scores_with_the_fused_head_as_with_pytorch(tiny_model_dir, tmp_path):
    """`proctor run` (the fused head, its default) and `--model-arg vocab_head=torch` (PyTorch's
    ops): the same answers, the same log-likelihoods (bit for bit where the kernel's order is
    PyTorch's), and run.json says which head computed them; a head name it does not know is
    refused before the model loads."""
    runs = {}
    for name, extra in (("fused", []), ("torch", ["--model-arg", "vocab_head=torch"])):
        out = tmp_path / name
        proc = _cli(
            "run",
            str(EXAMPLES / "quickstart"),
            "--model",
            str(tiny_model_dir),
            "-t",
            "*_mc",
            "-o",
            str(out),
            "-q",
            *extra,
        )
        assert proc.returncode == 0, proc.stderr
        runs[name] = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
        fingerprint = json.dumps(json.loads((out / "run.json").read_text()))
        chosen = head_kernel.order(64)  # None where the probe finds no exact order: PyTorch's ops, said so
        expected = head_kernel.version(chosen) if chosen is not None else "torch (no order of the fused kernel"
        assert (f'"vocab_head": "{expected}' in fingerprint) == (name == "fused")
    assert len(runs["fused"]) == len(runs["torch"]) >= 30
    pairs = []
    for a, b in zip(runs["fused"], runs["torch"], strict=True):
        assert a["id"] == b["id"] and a["correct"] == b["correct"]
        pairs += zip(a["logprobs"], b["logprobs"], strict=True)
    assert all(abs(x - y) <= 1e-5 * max(1.0, abs(y)) for x, y in pairs)
    if _pytorch_head_rounds_as_the_kernel(64):  # sums of the same per-token bits, but for a last-bit log
        assert sum(x == y for x, y in pairs) >= 0.9 * len(pairs)
    refused = _cli("run", str(EXAMPLES / "quickstart"), "--model", str(tiny_model_dir), "--model-arg", "vocab_head=c")
    assert refused.returncode == 2 and "vocab_head='c' is not one of torch, fused" in refused.stderr
    assert "Traceback" not in refused.stderr


@pytest.mark.parametrize("order", [8, 16, 8 | head_kernel.HALVES, 16 | head_kernel.HALVES])
@pytest.mark.parametrize("width", [64, 576])
def test_the_kernel_gives_the_same_bits_built_for_any_instruction_set(tmp_path, order, width):
    """Built for this processor's vector units (-march=native) and for the portable baseline (SSE2
    on x86-64), in every order (ATen's AVX2 or AVX-512 lanes, MKL's AVX2 blocks or AVX-512 halves):
    bit-identical log-sum-exps and maxima, as on any other machine; and the other lanes, and at a
    width past one block the other order of a logit, are different numbers."""
    import ctypes

    compiler = head_kernel._compiler()
    builds = [
        head_kernel._bind(ctypes.CDLL(str(head_kernel._build(compiler, tmp_path / name, flags))))
        for name, flags in (("native", ["-march=native", "-fopenmp"]), ("portable", []))
    ]
    torch.manual_seed(0)
    n = 301 if width == 64 else 37  # not a multiple of either build's group of nodes (6, 4)
    weight = torch.randn(49157, width) * (2.0 if width == 64 else 0.2)  # not a multiple of the tile
    hidden = torch.randn(n, width) * 3.0
    results = []
    others = {}  # the other lanes; past one block of k, the other order of a logit
    for lib in builds:  # each its own packed layout (its tile: 48 entries built for AVX-512, else 24)
        packed, padded = head_kernel.pack(weight, head_kernel.tile(lib))

        def stats(chosen: int):
            maxima, logsums, first = torch.empty(n), torch.empty(n), torch.empty(n, dtype=torch.int64)
            outs = (maxima.data_ptr(), logsums.data_ptr(), first.data_ptr())
            code = lib.proctor_head_stats(
                packed.data_ptr(), 49157, padded, width, hidden.data_ptr(), 0, n, *outs, chosen
            )
            assert code == 0
            return maxima, logsums, first

        results.append(stats(order))
        if not others:  # once: other sums of the same terms
            others = {"lanes": stats(order ^ 24)[1]} | (
                {"logit": stats(order ^ head_kernel.HALVES)} if width > 192 else {}
            )
    assert all(torch.equal(a, b) for a, b in zip(*results, strict=True))
    logsums = results[0][1]
    assert not torch.equal(others["lanes"], logsums) and torch.allclose(others["lanes"], logsums, rtol=1e-6, atol=1e-6)
    if "logit" in others:  # the logits themselves differ, and so may their maximum
        maxima = results[0][0]
        assert not (torch.equal(others["logit"][0], maxima) and torch.equal(others["logit"][1], logsums))
        assert torch.allclose(others["logit"][0] + others["logit"][1], maxima + logsums, rtol=1e-6, atol=1e-5)
    exact = torch.logsumexp(hidden.double() @ weight.double().t(), dim=-1)
    lse = results[0][0].double() + results[0][1].double()
    assert ((lse - exact).abs() <= 1e-6 * exact.abs().clamp(min=1.0)).all()
