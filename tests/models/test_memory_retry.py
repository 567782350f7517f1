"""Out of memory halves and retries (``models/memory.py``), on the real tiny model's call paths.

The out-of-memory errors here are INJECTED by the tests (a forward pre-hook raising torch's
OutOfMemoryError when a call is larger than a limit): CI has no GPU to run out of.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from proctor.core.model_requests import GenerateRequest, LoglikelihoodRequest  # noqa: E402
from proctor.models.hf.model import HFModel  # noqa: E402
from proctor.models.memory import halving, is_out_of_memory  # noqa: E402


def _inject_oom(module, too_big):
    """Make ``module`` raise an (injected) out-of-memory error on calls where ``too_big(input_ids)``."""
    seen = {"failures": 0, "shapes": []}

    def hook(_module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        seen["shapes"].append(tuple(ids.shape))
        if too_big(ids):
            seen["failures"] += 1
            raise torch.OutOfMemoryError("CUDA out of memory. (injected by the test)")

    handle = module.register_forward_pre_hook(hook, with_kwargs=True)
    return seen, handle


def pack_rows(model, requests):
    from proctor.models.hf.packing import pack
    from proctor.models.hf.scoring import loglikelihood_items

    return pack(
        loglikelihood_items(model.tokenizer, requests, model.max_length, model.add_bos, model.prefix_token_id),
        model.pack_tokens,
    )


@pytest.mark.fast
def test_halving_stops_at_one_and_passes_other_errors_through():
    sizes = []

    def run(n):
        sizes.append(n)
        raise torch.OutOfMemoryError("out of memory (injected)")

    with pytest.raises(torch.OutOfMemoryError):
        halving(run, 8)
    assert sizes == [8, 4, 2, 1]
    with pytest.raises(ValueError):
        halving(lambda n: (_ for _ in ()).throw(ValueError("not memory")), 8)
    assert is_out_of_memory(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert not is_out_of_memory(RuntimeError("shape mismatch"))


def test_scoring_call_out_of_memory_is_retried_with_fewer_rows(tiny_model_dir):
    requests = [
        LoglikelihoodRequest(f"Question {i}: what comes after {i}?\nAnswer:", f" {i + 1}, then {i + 2}")
        for i in range(40)
    ]
    # the packed rows' calls (scoring units run one fixed call size, which has nothing to halve)
    reference = HFModel(tiny_model_dir, pack_tokens=32, forward_layout="packed")
    expected = [r.logprob for r in reference.loglikelihood(requests)]
    model = HFModel(tiny_model_dir, pack_tokens=32, forward_layout="packed")  # several rows per forward call
    seen, handle = _inject_oom(model.model.get_decoder(), lambda ids: ids.shape[0] > 2)
    try:
        got = [r.logprob for r in model.loglikelihood(requests)]
    finally:
        handle.remove()
    assert seen["failures"] >= 1  # the injected error happened, and the run went on
    # every row went through in a call of at most two rows (the larger calls were the failed ones)
    assert sum(rows for rows, _ in seen["shapes"] if rows <= 2) >= len(pack_rows(model, requests))
    assert got == pytest.approx(expected, abs=1e-4)


def test_generation_out_of_memory_halves_the_batch(tiny_model_dir):
    requests = [GenerateRequest(f"Count with me: {i},", max_tokens=6) for i in range(10)]
    at_two = [r.text for r in HFModel(tiny_model_dir, batch_size=2).generate(requests)]
    model = HFModel(tiny_model_dir, batch_size=8)
    # decoding steps (one new token per row) of more than two rows fail
    seen, handle = _inject_oom(model.model, lambda ids: ids.shape[1] == 1 and ids.shape[0] > 2)
    try:
        got = [r.text for r in model.generate(requests)]
    finally:
        handle.remove()
    assert seen["failures"] == 2  # 8 and 4 in flight failed; 2 went through
    assert got == at_two  # exactly what batch size 2 decodes
