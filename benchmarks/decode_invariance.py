"""Cost of batch-invariant greedy decoding (``HFModel(batch_invariant=True)``) on this machine.

    python benchmarks/decode_invariance.py [--prompts 64] [--tokens 32] [--repeat 2] [--threads N]
    python benchmarks/decode_invariance.py --kernels [--device cuda]   # the cause, kernel by kernel

Builds a random Llama (hidden 256, 4 layers, 4 heads, 2 key/value heads, default initialisation)
with the SmolLM2 tokenizer in a temporary folder, and times greedy generation of ``--prompts``
prompts x ``--tokens`` new tokens at batch sizes 1 / 8 / 64 / auto, mode off and on, in bfloat16
and float32 (best of ``--repeat`` runs, off and on interleaved). It also counts, per mode, how
many outputs equal that mode's batch-size-1 outputs. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root, for tests.support
from tests.support.random_llama import save_random_llama  # noqa: E402

BATCH_SIZES = (1, 8, 64, "auto")


def build_model(folder: Path) -> None:
    from transformers import AutoTokenizer

    from proctor.models.default import default_model_path

    save_random_llama(
        folder,
        AutoTokenizer.from_pretrained(default_model_path()),
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
    )


def kernel_checks(device: str) -> None:
    """Which kernels give one row other bits when the other rows or the padding change: True where
    the row's result is bit-identical."""
    import torch
    import torch.nn.functional as F

    def same(a, b) -> str:
        return "same" if torch.equal(a, b) else "DIFFERS"

    torch.manual_seed(0)
    heads, dim, length = 4, 64, 100
    for dtype in (torch.bfloat16, torch.float32):
        print(f"-- {dtype} on {device}")
        weight = torch.randn(512, 256, dtype=dtype, device=device) * 0.05
        x = torch.randn(64, 256, dtype=dtype, device=device)
        base = F.linear(x[:8], weight)[0]
        print(
            "  linear, a row's result with M rows vs 8 rows:",
            {m: same(F.linear(x[:m], weight)[0], base) for m in (1, 2, 4, 16, 64)},
        )
        moved = x[:8].roll(3, 0)
        moved[4:] = torch.randn(4, 256, dtype=dtype, device=device)
        print(
            "  linear, the same row at another of 8 positions, other rows changed:",
            same(F.linear(moved, weight)[3], base),
        )
        q = torch.randn(1, heads, 1, dim, dtype=dtype, device=device)
        k, v = (torch.randn(1, heads, length, dim, dtype=dtype, device=device) for _ in range(2))
        exact = F.scaled_dot_product_attention(q, k, v)

        def padded(width: int, left: bool):
            pad = torch.zeros(1, heads, width - length, dim, dtype=dtype, device=device)
            mask = torch.zeros(1, 1, 1, width, dtype=torch.bool, device=device)
            if left:
                mask[..., width - length :] = True
                return F.scaled_dot_product_attention(q, torch.cat([pad, k], 2), torch.cat([pad, v], 2), attn_mask=mask)
            mask[..., :length] = True
            return F.scaled_dot_product_attention(q, torch.cat([k, pad], 2), torch.cat([v, pad], 2), attn_mask=mask)

        print(
            "  decode attention, tokens right-aligned (default), width vs exact:",
            {w: same(padded(w, True), exact) for w in (101, 127, 600)},
        )
        ref = padded(128, False)
        print(
            "  decode attention, tokens left-aligned, width vs 128:",
            {w: same(padded(w, False), ref) for w in (100, 101, 192, 256, 1024)},
        )
        qp = torch.randn(1, heads, length, dim, dtype=dtype, device=device)
        alone = F.scaled_dot_product_attention(qp, k, v, is_causal=True)
        pad = torch.zeros(1, heads, 27, dim, dtype=dtype, device=device)
        mask = torch.ones(length + 27, length + 27, dtype=torch.bool, device=device).tril()
        mask[:, :27] = False
        mask[:27, :27] = torch.eye(27, dtype=torch.bool, device=device)  # padding rows see themselves
        batched = F.scaled_dot_product_attention(
            torch.cat([pad, qp], 2), torch.cat([pad, k], 2), torch.cat([pad, v], 2), attn_mask=mask[None, None]
        )[:, :, 27:]
        print(
            "  prefill attention, prompt left-padded by 27 (a longer prompt in its group) vs alone:",
            same(batched, alone),
        )
        tail = torch.ones(length, length, dtype=torch.bool, device=device).tril()[40:]
        split = F.scaled_dot_product_attention(qp[:, :, 40:], k, v, attn_mask=tail[None, None])
        print(
            "  prefill attention, first 40 tokens from a shared-prefix cache vs the whole prompt:",
            same(split, alone[:, :, 40:]),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's own)")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--kernels", action="store_true", help="only the kernel-by-kernel checks")
    parser.add_argument("--device", default="cpu", help="for --kernels")
    args = parser.parse_args()

    import torch

    if args.kernels:
        kernel_checks(args.device)
        return

    from proctor.core.model_requests import GenerateRequest
    from proctor.models.hf.model import HFModel

    if args.threads:
        torch.set_num_threads(args.threads)
    prompts = [
        f"Question {i}: what is the capital of country number {i * 7}? Answer:" + " word" * (i % 9)
        for i in range(args.prompts)
    ]
    requests = [GenerateRequest(p, max_tokens=args.tokens) for p in prompts]
    print(
        f"{args.prompts} prompts x {args.tokens} new tokens, torch threads "
        f"{torch.get_num_threads()}, best of {args.repeat}"
    )
    print(f"{'dtype':<9} {'batch':>5} {'off s':>7} {'on s':>7} {'cost':>7} {'off = bs1':>10} {'on = bs1':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "llama-256x4"
        build_model(folder)
        for dtype in args.dtypes.split(","):
            models = {
                mode: {bs: HFModel(folder, dtype=dtype, batch_size=bs, batch_invariant=mode) for bs in BATCH_SIZES}
                for mode in (False, True)
            }
            models[False][8].generate(requests[:8])  # warm up the kernels once
            best: dict = {}
            texts: dict = {}
            for _ in range(args.repeat):
                for bs in BATCH_SIZES:
                    for mode in (False, True):
                        start = time.perf_counter()
                        out = models[mode][bs].generate(requests)
                        seconds = time.perf_counter() - start
                        best[mode, bs] = min(best.get((mode, bs), seconds), seconds)
                        texts[mode, bs] = [r.text for r in out]
            for bs in BATCH_SIZES:
                off, on = best[False, bs], best[True, bs]
                same = [sum(a == b for a, b in zip(texts[mode, bs], texts[mode, 1])) for mode in (False, True)]
                print(
                    f"{dtype:<9} {str(bs):>5} {off:7.2f} {on:7.2f} {100 * (on / off - 1):+6.0f}% "
                    f"{same[0]:>5}/{len(requests):<4} {same[1]:>4}/{len(requests)}"
                )


if __name__ == "__main__":
    main()
