"""Attention for scoring units (``unit_plan``): each unit over its ancestors and itself, alone.

transformers calls ``attention`` for every layer while the decoder's config names ``NAME``
(``unit_attention_scope``); the call's queries, keys and values come in as one sequence of
``CALL_TOKENS`` tokens. Units of one *shape class* — their ancestors' length and their own, each
rounded up to a multiple of 16 — are gathered into one batch: queries [units, heads, own, dim],
keys and values [units, kv heads, ancestors + own, dim] (ancestors' keys from this call or kept from
an earlier one), a mask that shows each unit its ancestors and itself causally, and PyTorch's
scaled-dot-product attention runs on it. Every tensor a unit's numbers pass through is then shaped
by the unit alone, and PyTorch's CPU attention computes each batch element on its own (measured: the
same bits alone, at any batch position and any thread count), so a unit's outputs are the same
whatever else the call holds.

The keys and values of units that later calls read are kept (one gather per layer and call) and
dropped after their last reader.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from proctor.models.hf.packing import aligned
from proctor.models.hf.tree_attention import named_attention
from proctor.models.hf.unit_plan import UnitPlan

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

NAME = "proctor_units"
ALIGN = 16  # ancestors' and own lengths are padded to multiples of this (fewer shape classes)

_CURRENT: contextvars.ContextVar["CallAttention"] = contextvars.ContextVar("proctor_unit_call")


def padded(n: int) -> int:
    return 0 if n == 0 else aligned(n, ALIGN)


@dataclass
class ShapeClass:
    """Units attended together: gather indices into the key pool and the query pool, where each
    output row goes (padding rows: to the sink row), and the mask."""

    n: int
    own: int  # padded own length
    width: int  # padded ancestors + padded own
    keys: "torch.Tensor"  # [n * width] rows of the key pool
    queries: "torch.Tensor"  # [n * own] rows of the query pool
    dest: "torch.Tensor"  # [n * own] output rows
    mask: "torch.Tensor"  # [n, 1, own, width] bool: True = attend
    _bias: "torch.Tensor | None" = None

    def bias(self, dtype: torch.dtype) -> "torch.Tensor":
        """The mask as an additive bias (0 / -inf) of ``dtype``, made once per call, read by every layer."""
        if self._bias is None or self._bias.dtype != dtype:
            import torch

            self._bias = torch.zeros(self.mask.shape, dtype=dtype, device=self.mask.device).masked_fill_(
                ~self.mask, float("-inf")
            )
        return self._bias


class KeptValues:
    """Per call, per layer: the keys and values of the units later calls read."""

    def __init__(self) -> None:
        self.keys: dict[int, dict[int, torch.Tensor]] = {}
        self.values: dict[int, dict[int, torch.Tensor]] = {}

    def drop(self, calls: list[int]) -> None:
        for c in calls:
            self.keys.pop(c, None)
            self.values.pop(c, None)


class CallAttention:
    """What ``attention`` needs for one call of ``plan``: built on the host once, read by every layer."""

    def __init__(self, plan: UnitPlan, index: int, kept: KeptValues, device: str) -> None:
        import torch

        self.index, self.kept = index, kept
        call = plan.calls[index]
        # The columns of the units later calls read, in call order (their kept buffer's rows).
        keep_columns: list[int] = []
        for u in plan.kept(index):
            start = plan.placed[u][1]
            keep_columns.extend(range(start, start + len(plan.units[u].tokens)))
        self.keep = torch.tensor(keep_columns, dtype=torch.long, device=device) if keep_columns else None

        # The key pool: the kept buffers of the earlier calls this one reads, then this call's tokens.
        earlier = sorted(
            {plan.placed[a][0] for u in call.units for a in plan.units[u].ancestors if plan.placed[a][0] != index}
        )
        base: dict[int, int] = {}
        size = 0
        for c in earlier:
            base[c] = size
            size += plan.kept_tokens(c)
        self.earlier = earlier
        own_base = size
        # Padding slots read row 0 of the pools (a masked key weighs exactly zero whatever it holds; a
        # padding query's output goes to the sink row, past the call's tokens).

        def rows_of(unit: int) -> range:
            c, column = plan.placed[unit]
            n = len(plan.units[unit].tokens)
            start = own_base + column if c == index else base[c] + plan.kept_at[unit]
            return range(start, start + n)

        groups: dict[tuple[int, int], list[int]] = {}
        for u in call.units:
            unit = plan.units[u]
            groups.setdefault((padded(unit.start), padded(len(unit.tokens))), []).append(u)
        self.classes: list[ShapeClass] = []
        for (ancestors, own), members in sorted(groups.items()):
            width = ancestors + own
            n = len(members)
            keys = np.zeros((n, width), dtype=np.int64)
            queries = np.zeros((n, own), dtype=np.int64)
            dest = np.full((n, own), plan.call_tokens, dtype=np.int64)
            mask = np.zeros((n, own, width), dtype=bool)
            triangle = np.tril(np.ones((own, own), dtype=bool))
            for b, u in enumerate(members):
                unit = plan.units[u]
                column = plan.placed[u][1]
                at = 0
                for a in unit.ancestors:
                    rows = rows_of(a)
                    keys[b, at : at + len(rows)] = rows
                    at += len(rows)
                length = len(unit.tokens)
                keys[b, ancestors : ancestors + length] = range(own_base + column, own_base + column + length)
                queries[b, :length] = range(column, column + length)
                dest[b, :length] = range(column, column + length)
                mask[b, :, : unit.start] = True
                mask[b, :, ancestors:] = triangle
            self.classes.append(
                ShapeClass(
                    n,
                    own,
                    width,
                    torch.from_numpy(keys.ravel()).to(device),
                    torch.from_numpy(queries.ravel()).to(device),
                    torch.from_numpy(dest.ravel()).to(device),
                    torch.from_numpy(mask[:, None]).to(device),
                )
            )


@lru_cache(maxsize=None)
def _register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(NAME, attention)


def supported(decoder: PreTrainedModel) -> str | None:
    """Why the decoder's attention cannot be replaced by this one, or None: only plain causal softmax
    attention (no sliding window, logit soft-capping or attention sinks) through transformers'
    attention functions."""
    config = decoder.config
    if getattr(config, "_attn_implementation", None) not in ("sdpa", "eager"):
        return f"its attention is '{getattr(config, '_attn_implementation', None)}'"
    if getattr(config, "model_type", None) not in PLAIN_ATTENTION:
        return f"model type '{getattr(config, 'model_type', None)}' is not one whose attention is known to be plain"
    window = getattr(config, "sliding_window", None)
    if window and getattr(config, "use_sliding_window", True):
        return "it uses a sliding attention window"
    if getattr(config, "attn_logit_softcapping", None):
        return "its config sets attn_logit_softcapping"
    if any(kind != "full_attention" for kind in getattr(config, "layer_types", None) or ()):
        return "its config sets layer_types"
    return None


# Model types whose attention layers call transformers' attention function with plain causal softmax.
PLAIN_ATTENTION = frozenset({"llama", "mistral", "qwen2", "qwen3", "granite", "olmo", "olmo2", "phi3", "smollm3"})


def unit_attention_scope(decoder: PreTrainedModel) -> contextlib.AbstractContextManager[None]:
    """The decoder's layers call ``attention`` inside the block."""
    return named_attention(decoder, NAME, _register)


@contextlib.contextmanager
def current(call: CallAttention) -> Iterator[None]:
    token = _CURRENT.set(call)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature: [1, heads, tokens, dim] in, ([1, tokens, heads, dim], None) out.

    Everything is gathered token-major ([tokens, heads, dim], as the projections made them), so
    a class's queries, keys and values are strided views with one gather each; a padding slot reads
    any real row (masked keys weigh exactly zero, a padding query's output is dropped)."""
    import torch
    import torch.nn.functional as F

    call = _CURRENT.get()
    layer = module.layer_idx
    q, k, v = query[0].transpose(0, 1), key[0].transpose(0, 1), value[0].transpose(0, 1)  # [tokens, heads, dim]
    tokens, heads, dim = q.shape
    kv_heads = k.shape[1]
    if call.earlier:
        k_pool = torch.cat([call.kept.keys[c][layer] for c in call.earlier] + [k])
        v_pool = torch.cat([call.kept.values[c][layer] for c in call.earlier] + [v])
    else:
        k_pool, v_pool = k, v
    out = q.new_empty(tokens + 1, heads, dim)  # the last row: where padding queries' outputs go
    for shape in call.classes:
        n, own, width = shape.n, shape.own, shape.width
        keys = k_pool.index_select(0, shape.keys).view(n, width, kv_heads, dim).transpose(1, 2)
        values = v_pool.index_select(0, shape.keys).view(n, width, kv_heads, dim).transpose(1, 2)
        queries = q.index_select(0, shape.queries).view(n, own, heads, dim).transpose(1, 2)
        result = F.scaled_dot_product_attention(
            queries, keys, values, attn_mask=shape.bias(q.dtype), scale=scaling, enable_gqa=heads != kv_heads
        )
        out.index_copy_(0, shape.dest, result.transpose(1, 2).reshape(n * own, heads, dim))
    if call.keep is not None:
        call.kept.keys.setdefault(call.index, {})[layer] = k.index_select(0, call.keep)
        call.kept.values.setdefault(call.index, {})[layer] = v.index_select(0, call.keep)
    return out[:tokens].unsqueeze(0), None
