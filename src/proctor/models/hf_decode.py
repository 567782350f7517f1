"""Greedy decoding that drops finished sequences from the batch.

transformers' ``generate`` keeps a finished sequence in the batch, feeding it padding until the
longest one ends. Here a sequence that meets end-of-sequence, a stop string or its token limit
leaves the batch and its rows leave the key/value cache, so it stops costing compute.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass
class Decoded:
    tokens: list[int]  # new tokens, end-of-sequence excluded
    reason: str  # "eos", "stop" or "length"


def _hit_stop(tokenizer, tokens: list[int], stop: Sequence[str], longest: int) -> bool:
    # Only the tail can hold a stop string that the previous step had not already completed.
    tail = tokenizer.decode(tokens[-(longest + 2) :], skip_special_tokens=True)
    return any(s in tail for s in stop)


def greedy_decode(model, tokenizer, prompts: Sequence[Sequence[int]], max_new_tokens: int, stop: Sequence[str], eos_ids: Sequence[int], device: str) -> list[Decoded]:
    import torch

    batch = len(prompts)
    width = max(len(p) for p in prompts)
    pad = tokenizer.pad_token_id
    input_ids = torch.full((batch, width), pad, dtype=torch.long)
    mask = torch.zeros((batch, width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        input_ids[row, width - len(prompt) :] = torch.tensor(list(prompt))
        mask[row, width - len(prompt) :] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    # Stop strings span at most this many tokens (a token holds at least one character).
    longest = max((len(s) for s in stop), default=0)
    eos = set(eos_ids)
    results: list[Decoded | None] = [None] * batch
    generated: list[list[int]] = [[] for _ in range(batch)]
    active = list(range(batch))
    with torch.inference_mode():
        out = model(
            input_ids=input_ids.to(device), attention_mask=mask.to(device), position_ids=positions.to(device), use_cache=True, logits_to_keep=1
        )
        cache = out.past_key_values
        next_position = positions[:, -1] + 1
        for _ in range(max_new_tokens):
            choice = out.logits[:, -1].argmax(-1).tolist()
            keep = []
            for slot, row in enumerate(active):
                token = choice[slot]
                if token in eos:
                    results[row] = Decoded(generated[row], "eos")
                    continue
                generated[row].append(token)
                if stop and _hit_stop(tokenizer, generated[row], stop, longest):
                    results[row] = Decoded(generated[row], "stop")
                elif len(generated[row]) >= max_new_tokens:
                    results[row] = Decoded(generated[row], "length")
                else:
                    keep.append(slot)
            if not keep:
                break
            if len(keep) < len(active):
                index = torch.tensor(keep, device=device)
                cache.batch_select_indices(index)
                mask = mask[keep]
                next_position = next_position[keep]
                active = [active[slot] for slot in keep]
            mask = torch.cat([mask, torch.ones((len(active), 1), dtype=torch.long)], dim=1)
            feed = torch.tensor([[generated[row][-1]] for row in active], device=device)
            out = model(
                input_ids=feed,
                attention_mask=mask.to(device),
                position_ids=next_position[:, None].to(device),
                past_key_values=cache,
                use_cache=True,
            )
            next_position = next_position + 1
    for row in range(batch):
        if results[row] is None:
            results[row] = Decoded(generated[row], "length")
    return results  # type: ignore[return-value]
