"""Log-likelihood scoring for the Hugging Face backend: requests to token items, packed rows to
per-token log-probs.

Tokenising: every distinct context, and every distinct context + continuation, is encoded once,
in one batched call of the (fast) tokenizer; the continuation is the tail of the joint encoding
past the context's tokens (lm-evaluation-harness's split). Scoring: each packed row is one
forward pass (``models/packing.py``); the vocabulary projection and a float32 log-softmax run only
at the nodes that predict a scored token, and the scored values come back to the host in one
gather and one copy per row.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from proctor.models.packing import PackedRow, ScoringItem, aligned


def encode_many(tokenizer, texts: Sequence[str]) -> list[list[int]]:
    """Token ids (no special tokens) of each text; each distinct text encoded once, all in one
    batched tokenizer call (the fast tokenizer encodes a batch in Rust, in parallel)."""
    unique = list(dict.fromkeys(texts))
    if not unique:
        return []
    ids = tokenizer(unique, add_special_tokens=False).input_ids
    found = dict(zip(unique, ids))
    return [found[text] for text in texts]


def split_whitespace(context: str, continuation: str, move_whitespace: bool) -> tuple[str, str]:
    """Trailing whitespace of the context moves to the continuation (BPE tokenizers attach
    spaces to the following word)."""
    n_spaces = len(context) - len(context.rstrip()) if move_whitespace else 0
    if n_spaces:
        return context[:-n_spaces], context[-n_spaces:] + continuation
    return context, continuation


def encode_pairs(tokenizer, pairs: Sequence[tuple[str, str]], add_bos: bool, prefix_token_id: int) -> list[tuple[list[int], list[int]]]:
    """(context ids, continuation ids) of each (context, continuation), whitespace already moved.

    The continuation is the tail of the joint encoding past the context's own tokens; an empty
    context is the prefix token (BOS, else end-of-sequence), and with ``add_bos`` every other
    context starts with it too."""
    contexts = encode_many(tokenizer, [c for c, _ in pairs if c])
    wholes = encode_many(tokenizer, [c + x for c, x in pairs if c])
    alone = encode_many(tokenizer, [x for c, x in pairs if not c])
    out = []
    k = j = 0
    for context, _ in pairs:
        if not context:
            out.append(([prefix_token_id], alone[j]))
            j += 1
            continue
        context_ids, whole = contexts[k], wholes[k]
        k += 1
        continuation_ids = whole[len(context_ids) :]
        out.append(([prefix_token_id] + context_ids if add_bos else context_ids, continuation_ids))
    return out


def score_rows(
    torch, decoder, head, rows: Sequence[PackedRow], n_items: int, device: str, pad_token_id: int,
    softcap: float | None = None, on_row: Callable[[int], None] | None = None,
) -> list[tuple[tuple[float, ...], bool]]:
    """Per item: (token log-probs, all-greedy flag). Each row is forwarded alone, padded to an
    aligned width (``packing.aligned``), so an item's numbers depend only on its row."""
    out: list = [None] * n_items
    for row in rows:
        n = len(row)
        width = aligned(n)
        pad = width - n
        mask = torch.from_numpy(row.attention_mask(width))[None, None]
        hidden = decoder(
            input_ids=torch.tensor([row.tokens + [pad_token_id] * pad], device=device),
            attention_mask=mask.to(device),
            position_ids=torch.tensor([row.depths + [0] * pad], device=device),
        ).last_hidden_state[0]
        # Every scored (node, target) of the row, flat; the vocabulary projection runs once per
        # distinct scored node only (padded likewise).
        lengths = [len(targets) for _, _, targets in row.scored]
        flat_nodes = np.fromiter((node for _, path, _ in row.scored for node in path), dtype=np.int64, count=sum(lengths))
        flat_targets = np.fromiter((t for _, _, targets in row.scored for t in targets), dtype=np.int64, count=len(flat_nodes))
        nodes, where = np.unique(flat_nodes, return_inverse=True)
        picked = np.concatenate([nodes, np.full(aligned(len(nodes)) - len(nodes), nodes[-1])])
        logits = head(hidden[torch.from_numpy(picked).to(device)]).float()
        if softcap:
            logits = torch.tanh(logits / softcap) * softcap
        logprobs = torch.log_softmax(logits, dim=-1)
        rows_of = torch.from_numpy(where.reshape(-1)).to(device)
        targets = torch.from_numpy(flat_targets).to(device)
        token_lp = logprobs[rows_of, targets]
        hits = logits.argmax(-1)[rows_of] == targets
        # one copy to the host per row: log-probs as float64 (exact), greedy hits as 0/1
        values = torch.stack([token_lp.double(), hits.double()]).cpu().numpy()
        lp_list = values[0].tolist()
        misses = np.flatnonzero(values[1] == 0)
        start = 0
        miss_at = 0
        for (index, _, _), length in zip(row.scored, lengths):
            end = start + length
            while miss_at < len(misses) and misses[miss_at] < start:
                miss_at += 1
            greedy = not (miss_at < len(misses) and misses[miss_at] < end)
            out[index] = (tuple(lp_list[start:end]), greedy)
            start = end
        if on_row:
            on_row(len(row.scored))
    return out


def loglikelihood_items(
    tokenizer, requests: Sequence, max_length: int, add_bos: bool, prefix_token_id: int
) -> list[ScoringItem]:
    """The scoring item of each log-likelihood request: context + continuation cut on the left
    to the request's (or model's) limit, the continuation's tokens scored."""
    pairs = [split_whitespace(r.context, r.continuation, r.move_whitespace) for r in requests]
    items = []
    for request, (context_ids, continuation_ids) in zip(requests, encode_pairs(tokenizer, pairs, add_bos, prefix_token_id)):
        limit = min(max_length, request.max_length or max_length)
        tokens = (context_ids + continuation_ids)[-(limit + 1) :]
        items.append(ScoringItem(tuple(tokens), min(len(continuation_ids), len(tokens) - 1)))
    return items
