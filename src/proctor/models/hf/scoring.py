"""Log-likelihood scoring for the Hugging Face backend: requests to token items, packed rows to
per-token log-probs.

Tokenising: every distinct context, and every distinct context + continuation, is encoded once,
in one batched call of the (fast) tokenizer; the continuation is the tail of the joint encoding
past the context's tokens (lm-evaluation-harness's split). Scoring: packed rows
(``models/hf/packing.py``) go through the decoder in the calls ``models/hf/forward_plan.py`` lays out,
with the attention ``models/hf/tree_attention.py`` gives them; the vocabulary projection and a float32
log-softmax run only at the nodes that predict a scored token (``models/hf/vocab_head.py``). A call's
inputs go to the device in one copy and its values come back in one.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Sequence

import numpy as np

from proctor.models.hf import tree_attention
from proctor.models.hf.forward_plan import ForwardCall, ForwardLayout, layout_for, plan_calls
from proctor.models.hf.packing import ItemScores, PackedRow, ScoringItem, aligned, pack
from proctor.models.hf.vocab_head import VocabularyHead
from proctor.models.memory import halving, is_out_of_memory

if TYPE_CHECKING:
    import torch
    from torch.nn.attention.flex_attention import BlockMask
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from proctor.core.model_requests import LoglikelihoodRequest

# Part of the model fingerprint: raise it with any change here, in ``packing`` or in ``vocab_head``
# that can move a log-prob's bits, so stored answers of the old code are not mixed with new ones.
SCORING_VERSION = 1


def encode_many(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str]) -> list[list[int]]:
    """Token ids (no special tokens) of each text; each distinct text encoded once, all in one
    batched tokenizer call (the fast tokenizer encodes a batch in Rust, in parallel)."""
    unique = list(dict.fromkeys(texts))
    if not unique:
        return []
    ids = _backend_ids(tokenizer, unique)
    if ids is None:
        ids = tokenizer(unique, add_special_tokens=False).input_ids
    found: dict[str, list[int]] = dict(zip(unique, ids))
    return [found[text] for text in texts]


def _backend_ids(tokenizer: PreTrainedTokenizerBase, texts: list[str]) -> list[list[int]] | None:
    """The Rust tokenizer's own ids of ``texts``, where transformers' wrapper is the stock one and
    adds nothing to them; None where it is not (a slow tokenizer, a class that encodes its own way).

    The wrapper builds a dict per encoding, with offsets, masks and type ids this split never
    reads (a third of the tokenising time for HellaSwag's 10,000 strings). Its first call sets the
    backend as the wrapper leaves it (no truncation, no padding, special tokens as configured), so
    the rest, encoded without offsets, are the ids the wrapper would give."""
    try:
        from transformers.tokenization_utils_base import PreTrainedTokenizerBase
        from transformers.tokenization_utils_tokenizers import TokenizersBackend
    except ImportError:
        return None
    kind = type(tokenizer)
    if not isinstance(tokenizer, TokenizersBackend) or (
        kind.__call__ is not PreTrainedTokenizerBase.__call__ or kind._encode_plus is not TokenizersBackend._encode_plus
    ):
        return None
    first: list[list[int]] = tokenizer(texts[:1], add_special_tokens=False).input_ids
    backend = tokenizer.backend_tokenizer
    encode = getattr(backend, "encode_batch_fast", backend.encode_batch)
    if backend.truncation is not None or backend.padding is not None:
        return None
    return first + [encoding.ids for encoding in encode(texts[1:], add_special_tokens=False)]


def split_whitespace(context: str, continuation: str, move_whitespace: bool) -> tuple[str, str]:
    """Trailing whitespace of the context moves to the continuation (BPE tokenizers attach
    spaces to the following word)."""
    n_spaces = len(context) - len(context.rstrip()) if move_whitespace else 0
    if n_spaces:
        return context[:-n_spaces], context[-n_spaces:] + continuation
    return context, continuation


def encode_pairs(
    tokenizer: PreTrainedTokenizerBase, pairs: Sequence[tuple[str, str]], add_bos: bool, prefix_token_id: int
) -> list[tuple[list[int], list[int]]]:
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
    decoder: PreTrainedModel,
    head: VocabularyHead,
    rows: Sequence[PackedRow],
    n_items: int,
    device: str,
    pad_token_id: int,
    on_row: Callable[[int], None] | None = None,
    layout: ForwardLayout | None = None,
    attention: str = "mask",
) -> list[ItemScores]:
    """Per item: (token log-probs, all-greedy flag), for items packed into ``rows``.

    The rows go through the decoder in the calls ``forward_plan.plan_calls`` makes of them; the
    vocabulary projection and a float32 log-softmax run only at the distinct nodes that predict a
    scored token. Each call's inputs reach the device in one copy and its values come back in one;
    on CUDA the next call is launched before the previous call's values are read, so the host
    prepares and unpacks while the GPU computes."""
    layout = layout or layout_for(None, str(device).startswith("cuda"))
    out: list[Any] = [None] * n_items  # each item's ItemScores, filled as its call finishes
    runner = _CallRunner(decoder, head, device, pad_token_id, attention)
    pending: _Launched | None = None
    with _attention_scope(decoder, attention):
        for call in plan_calls(rows, layout):
            try:
                launched = runner.launch(call)
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
                if pending is not None:  # free what the previous call holds, then retry this one in halves
                    _finish(pending, out, on_row)
                    pending = None
                _retry_in_halves(runner, call, out, on_row)
                continue
            if pending is not None:
                _finish(pending, out, on_row)
            pending = launched
        if pending is not None:
            _finish(pending, out, on_row)
    return out


def _attention_scope(decoder: PreTrainedModel, attention: str) -> ContextManager[None]:
    """``flex``: the tree-aware attention (``tree_attention``) for the calls, where the decoder's
    layers can take it; ``mask`` (or a decoder that cannot): the model's own attention with the dense
    mask for every call."""
    if attention == "flex" and tree_attention.supported(decoder):
        return tree_attention.scoring_attention(decoder)
    return contextlib.nullcontext()


def _retry_in_halves(
    runner: _CallRunner, call: ForwardCall, out: list[Any], on_row: Callable[[int], None] | None
) -> None:
    """Out of memory: the call's rows in halves (each half's numbers then come from its own shape;
    logged, as a run that needed it can differ from one that did not in the last bits)."""

    def run(n: int) -> None:
        for k in range(0, len(call.rows), n):
            rows = call.rows[k : k + n]
            _finish(runner.launch(ForwardCall(rows, call.width, len(rows))), out, on_row)

    halving(run, max(1, len(call.rows) // 2), "forward call (rows)")


@dataclass
class _Launched:
    """A forward call in flight: its values on their way to the host, and how to unpack them."""

    values: torch.Tensor  # [2, targets] float32 (host tensor; on CUDA pinned, valid once ``ready`` has fired)
    ready: torch.cuda.Event | None  # None: CPU (already there)
    items: list[tuple[int, int, int]]  # (item index, first value, end value) in the unpacked order
    order: np.ndarray  # value k of the device's block order belongs at position order[k]
    scored: int  # items (requests) scored in the call: progress


def _finish(launched: _Launched, out: list[Any], on_row: Callable[[int], None] | None) -> None:
    if launched.ready is not None:
        launched.ready.synchronize()
    device_order = launched.values.numpy()
    values = np.empty_like(device_order)
    values[:, launched.order] = device_order
    lp_list = values[0].tolist()
    misses_before = np.concatenate([[0], np.cumsum(values[1] == 0)])  # misses among the first k targets
    for index, start, end in launched.items:
        out[index] = (tuple(lp_list[start:end]), bool(misses_before[end] == misses_before[start]))
    if on_row:
        on_row(launched.scored)


class _CallRunner:
    """Builds a call's inputs on the host (one array), sends them in one copy, runs the decoder and
    the vocabulary head, and starts the one copy of the values back."""

    def __init__(
        self, decoder: PreTrainedModel, head: VocabularyHead, device: str, pad_token_id: int, attention: str
    ) -> None:
        self.decoder, self.head, self.device = decoder, head, device
        self.pad, self.attention = pad_token_id, attention
        self.cuda = str(device).startswith("cuda")
        self.tree = attention == "flex" and tree_attention.supported(decoder)  # see _attention_scope
        self._causal: dict[int, torch.Tensor] = {}  # the dense masks' triangle, by width (calls repeat few widths)

    def launch(self, call: ForwardCall) -> _Launched:
        import torch

        n_rows, width = call.shape
        ids = np.full((n_rows, width), self.pad, dtype=np.int64)
        positions = np.zeros((n_rows, width), dtype=np.int64)
        ends = np.broadcast_to(np.arange(1, width + 1, dtype=np.int64), (n_rows, width)).copy()  # padding: itself only
        for b, row in enumerate(call.rows):
            n = len(row)
            ids[b, :n] = row.tokens
            positions[b, :n] = row.depths
            ends[b, :n] = row.ends
        # Every scored (node, target), nodes as positions in the flattened call; the head runs on
        # the distinct nodes, in fixed blocks, and its values come out in block order.
        owners, lengths, flat_nodes, flat_targets = _scored_targets(call.rows, width)
        nodes, where = np.unique(flat_nodes, return_inverse=True)
        where = where.reshape(-1)
        order = np.argsort(where, kind="stable")  # targets grouped by their node's block
        block_size = self.head.block_size
        bounds = np.searchsorted(where[order], np.arange(0, len(nodes) + block_size, block_size))
        picks = []
        for start in range(0, len(nodes), block_size):  # fixed blocks, padded to aligned sizes with their last node
            block = nodes[start : start + block_size]
            picks.append(np.concatenate([block, np.full(aligned(len(block)) - len(block), block[-1])]))
        picked = np.concatenate(picks)
        rows_of = where[order] - np.repeat(
            np.arange(0, len(nodes), block_size)[: len(picks)], np.diff(bounds)[: len(picks)]
        )
        host = np.concatenate([ids.ravel(), positions.ravel(), ends.ravel(), picked, rows_of, flat_targets[order]])
        staged = torch.from_numpy(host)
        if self.cuda:
            staged = staged.pin_memory().to(self.device, non_blocking=True)
        elif str(self.device) != "cpu":
            staged = staged.to(self.device)
        cells = n_rows * width
        ids_t, pos_t, ends_t = (staged[k * cells : (k + 1) * cells].view(n_rows, width) for k in range(3))
        offset = 3 * cells
        picked_t = staged[offset : offset + len(picked)]
        offset += len(picked)
        rows_t = staged[offset : offset + len(order)]
        targets_t = staged[offset + len(order) : offset + 2 * len(order)]

        hidden = self.decoder(
            input_ids=ids_t,
            attention_mask=self._mask(call, ends_t),
            position_ids=pos_t,
        ).last_hidden_state.reshape(n_rows * width, -1)
        if hidden.device != picked_t.device:  # the last layer on another device (a sharded model)
            picked_t = picked_t.to(hidden.device)
        parts = []
        picked_at = 0
        for k, pick in enumerate(picks):
            here = slice(int(bounds[k]), int(bounds[k + 1]))
            block_hidden = hidden[picked_t[picked_at : picked_at + len(pick)]]
            picked_at += len(pick)
            logprobs, hits = self.head.scores(block_hidden, rows_t[here], targets_t[here])
            parts.append(torch.stack([logprobs.float(), hits.float()]))
        values = torch.cat(parts, dim=1)
        ready = None
        if self.cuda:
            host_values = torch.empty(values.shape, dtype=values.dtype, pin_memory=True)
            host_values.copy_(values, non_blocking=True)
            ready = torch.cuda.Event()
            ready.record()
            values = host_values
        elif values.device.type != "cpu":
            values = values.cpu()
        ends_at = np.cumsum(lengths)
        items = list(zip(owners.tolist(), (ends_at - lengths).tolist(), ends_at.tolist()))
        return _Launched(values, ready, items, order, len(owners))

    def _mask(self, call: ForwardCall, ends: torch.Tensor) -> torch.Tensor | BlockMask | None:
        """The call's attention mask: with the tree-aware attention, none for plain causal rows (the
        causal kernel) and a FlexAttention block mask for trees; otherwise the dense boolean mask."""
        if not self.tree:
            width = ends.shape[1]
            if width not in self._causal:
                self._causal[width] = tree_attention.causal_triangle(width, ends.device)
            return tree_attention.dense_mask(ends, self._causal[width])
        return None if call.plain_causal else tree_attention.block_mask(ends)


def _scored_targets(rows: Sequence[PackedRow], width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A call's scored requests, flat over its rows: each request's index and number of targets,
    then every target's predicting node (as a position in the flattened [rows, width] call) and token."""

    def flat(name: str) -> np.ndarray:
        return np.concatenate([np.asarray(getattr(row, name), dtype=np.int64) for row in rows])

    offsets = np.repeat(np.arange(len(rows), dtype=np.int64) * width, [len(row.targets) for row in rows])
    return flat("owners"), flat("n_targets"), flat("target_nodes") + offsets, flat("targets")


def plan_loglikelihood(
    tokenizer: PreTrainedTokenizerBase,
    requests: Sequence[LoglikelihoodRequest],
    max_length: int,
    add_bos: bool,
    prefix_token_id: int,
    layout: ForwardLayout,
) -> list[ForwardCall]:
    """The forward calls scoring ``requests`` in one model call makes (what ``HFModel.loglikelihood``
    runs), planned without a model: tokenised, packed and laid out as the backend does."""
    items = [
        item
        for item in loglikelihood_items(tokenizer, requests, max_length, add_bos, prefix_token_id)
        if item.n_targets > 0
    ]
    return plan_calls(pack(items, layout.row_tokens, layout.lookahead), layout)


def loglikelihood_items(
    tokenizer: PreTrainedTokenizerBase,
    requests: Sequence[LoglikelihoodRequest],
    max_length: int,
    add_bos: bool,
    prefix_token_id: int,
) -> list[ScoringItem]:
    """The scoring item of each log-likelihood request: context + continuation cut on the left
    to the request's (or model's) limit, the continuation's tokens scored."""
    pairs = [split_whitespace(r.context, r.continuation, r.move_whitespace) for r in requests]
    items = []
    for request, (context_ids, continuation_ids) in zip(
        requests, encode_pairs(tokenizer, pairs, add_bos, prefix_token_id)
    ):
        limit = min(max_length, request.max_length or max_length)
        whole = context_ids + continuation_ids
        tokens = whole[-(limit + 1) :]
        items.append(ScoringItem(tuple(tokens), min(len(continuation_ids), len(tokens) - 1), len(whole) - len(tokens)))
    return items
