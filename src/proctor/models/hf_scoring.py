"""Log-likelihood scoring for the Hugging Face backend: requests to token items, packed rows to
per-token log-probs.

Tokenising: every distinct context, and every distinct context + continuation, is encoded once,
in one batched call of the (fast) tokenizer; the continuation is the tail of the joint encoding
past the context's tokens (lm-evaluation-harness's split). Scoring: packed rows
(``models/packing.py``) go through the decoder a few per call; the vocabulary projection and a
float32 log-softmax run only at the nodes that predict a scored token (``models/vocab_head.py``),
and the scored values come back to the host in one copy per call.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from proctor.models.memory import halving
from proctor.models.packing import PackedRow, ScoringItem, aligned
from proctor.models.vocab_head import VocabularyHead

# Part of the model fingerprint: raise it with any change here, in ``packing`` or in ``vocab_head``
# that can move a log-prob's bits, so stored answers of the old code are not mixed with new ones.
SCORING_VERSION = 1


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


def forward_groups(rows: Sequence[PackedRow], forward_tokens: int) -> list[list[PackedRow]]:
    """Consecutive rows batched into one forward call while their padded size stays within
    ``forward_tokens`` (each call's width is its longest row's, aligned). A function of the rows
    alone, so calls — and every number — are the same at every batch size."""
    groups: list[list[PackedRow]] = []
    width = 0
    for row in rows:
        grown = max(width, aligned(len(row)))
        if groups and grown * (len(groups[-1]) + 1) <= forward_tokens:
            groups[-1].append(row)
            width = grown
        else:
            groups.append([row])
            width = aligned(len(row))
    return groups


def score_rows(
    torch, decoder, head: VocabularyHead, rows: Sequence[PackedRow], n_items: int, device: str, pad_token_id: int,
    on_row: Callable[[int], None] | None = None, forward_tokens: int = 0,
) -> list[tuple[tuple[float, ...], bool]]:
    """Per item: (token log-probs, all-greedy flag). Rows go through the decoder a few at a time
    (``forward_groups``), padded to an aligned width (``packing.aligned``); the vocabulary
    projection and a float32 log-softmax run only at the distinct nodes that predict a scored
    token; the values come to the host in one copy per call."""
    out: list = [None] * n_items
    for group in forward_groups(rows, forward_tokens):
        # Out of memory: the call's rows go in halves (each half's numbers then come from its own
        # shapes; logged, as a run that needed it can differ from one that did not in the last bits).
        halving(lambda n: [_score_call(torch, decoder, head, group[k : k + n], out, device, pad_token_id)
                           for k in range(0, len(group), n)], len(group), "forward call (rows)")
        if on_row:
            on_row(sum(len(row.scored) for row in group))
    return out


def _score_call(torch, decoder, head: VocabularyHead, group: Sequence[PackedRow], out: list, device: str,
                pad_token_id: int) -> None:
    """One forward call over ``group``'s rows; fills ``out`` for their items."""
    width = max(aligned(len(row)) for row in group)
    ids = np.full((len(group), width), pad_token_id, dtype=np.int64)
    positions = np.zeros((len(group), width), dtype=np.int64)
    mask = np.empty((len(group), 1, width, width), dtype=bool)
    for b, row in enumerate(group):
        ids[b, : len(row)] = row.tokens
        positions[b, : len(row)] = row.depths
        mask[b, 0] = row.attention_mask(width)
    hidden = decoder(
        input_ids=torch.from_numpy(ids).to(device),
        attention_mask=torch.from_numpy(mask).to(device),
        position_ids=torch.from_numpy(positions).to(device),
    ).last_hidden_state.reshape(len(group) * width, -1)
    # Every scored (node, target) of the call, flat, nodes as positions in the flattened batch.
    scored = [(index, b * width + np.asarray(path), targets) for b, row in enumerate(group) for index, path, targets in row.scored]
    lengths = [len(targets) for _, _, targets in scored]
    flat_nodes = np.concatenate([path for _, path, _ in scored])
    flat_targets = np.fromiter((t for _, _, targets in scored for t in targets), dtype=np.int64, count=len(flat_nodes))
    nodes, where = np.unique(flat_nodes, return_inverse=True)
    block_size = head.block_size
    by_node = np.argsort(where, kind="stable")  # flat positions grouped by their node's block
    bounds = np.searchsorted(where[by_node], np.arange(0, len(nodes) + block_size, block_size))
    values = torch.empty((2, len(flat_nodes)), dtype=torch.float64, device=device)
    for k, start in enumerate(range(0, len(nodes), block_size)):  # fixed blocks; a node's numbers come from its row alone
        block = nodes[start : start + block_size]
        picked = np.concatenate([block, np.full(aligned(len(block)) - len(block), block[-1])])
        here = by_node[bounds[k] : bounds[k + 1]]
        rows_of = torch.from_numpy(where.reshape(-1)[here] - start).to(device)
        targets = torch.from_numpy(flat_targets[here]).to(device)
        slots = torch.from_numpy(here).to(device)
        logprobs, hits = head.scores(hidden[torch.from_numpy(picked).to(device)], rows_of, targets)
        values[0, slots] = logprobs.double()
        values[1, slots] = hits.double()
    values = values.cpu().numpy()  # one copy to the host per call: log-probs (exact in float64), greedy hits
    lp_list = values[0].tolist()
    ends = np.cumsum(lengths)
    misses_before = np.concatenate([[0], np.cumsum(values[1] == 0)])  # misses among the first k targets
    greedy = (misses_before[ends] - misses_before[ends - np.asarray(lengths)]) == 0
    start = 0
    for (index, _, _), end, all_greedy in zip(scored, ends.tolist(), greedy.tolist()):
        out[index] = (tuple(lp_list[start:end]), all_greedy)
        start = end


def loglikelihood_items(
    tokenizer, requests: Sequence, max_length: int, add_bos: bool, prefix_token_id: int
) -> list[ScoringItem]:
    """The scoring item of each log-likelihood request: context + continuation cut on the left
    to the request's (or model's) limit, the continuation's tokens scored."""
    pairs = [split_whitespace(r.context, r.continuation, r.move_whitespace) for r in requests]
    items = []
    for request, (context_ids, continuation_ids) in zip(requests, encode_pairs(tokenizer, pairs, add_bos, prefix_token_id)):
        limit = min(max_length, request.max_length or max_length)
        whole = context_ids + continuation_ids
        tokens = whole[-(limit + 1) :]
        items.append(ScoringItem(tuple(tokens), min(len(continuation_ids), len(tokens) - 1), len(whole) - len(tokens)))
    return items
