"""Attention for packed scoring rows: tree masks as block masks, plain causal rows as plain causal.

A packed row (``models/hf/packing.py``) is a forest of token tries, numbered depth first: node i may
attend to node j iff j <= i < ends[j] (j is i or an ancestor of i). The mask is built on the device
from ``ends`` ([rows, width], one small copy) in one of two forms:

- ``flex`` (``--model-arg attention=flex``): a FlexAttention ``BlockMask``. Only the 128 x 128 blocks
  holding an allowed pair are computed; a row of many short questions is nearly block-diagonal, so
  most blocks are skipped. On CUDA the kernel is compiled (``torch.compile``) when the model loads,
  through the real scoring path at two call shapes, so that it generalises to every shape; elsewhere
  FlexAttention runs its reference implementation (exact, slow: for tests and checks).
- ``mask`` (the default): the dense boolean [rows, 1, width, width] mask, for PyTorch's SDPA. Nothing
  to compile. On one H200 the compiled kernel's recompiles cost more than the attention it saved
  (docs/performance.md), so the block mask is opt-in until a GPU measures the fixed warm-up.

A call whose rows are all single chains from position 0 gets no mask at all: SDPA's causal kernel.

transformers calls ``attention`` for every layer while the decoder's config names it
(``scoring_attention``); it hands over whatever ``attention_mask`` the call passed (4-D masks and
block masks go through transformers' mask preparation untouched) and dispatches on it.
"""

from __future__ import annotations

import contextlib
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    import torch
    from torch.nn.attention.flex_attention import BlockMask
    from transformers import PreTrainedModel

NAME = "proctor_scoring"
ATTENTIONS = ("flex", "mask")
BLOCK = 128  # FlexAttention's block size (its default)


@lru_cache(maxsize=None)
def _register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(NAME, attention)


def supported(decoder: PreTrainedModel) -> bool:
    """Whether the decoder's attention can be swapped for this one: SDPA layers (transformers'
    default for most models); anything else keeps its own attention and the dense mask."""
    return getattr(decoder.config, "_attn_implementation", None) == "sdpa"


def scoring_attention(decoder: PreTrainedModel) -> contextlib.AbstractContextManager[None]:
    """The decoder's layers call ``attention`` inside the block."""
    return named_attention(decoder, NAME, _register)


@contextlib.contextmanager
def named_attention(decoder: PreTrainedModel, name: str, register: Callable[[], None]) -> Iterator[None]:
    """The decoder's layers call the attention function registered as ``name`` inside the block
    (``register()`` registers it, once; the config's implementation name is swapped and restored).
    Shared with the scoring units' attention (``unit_attention``)."""
    register()
    config = decoder.config
    before = config._attn_implementation
    config._attn_implementation = name
    try:
        yield
    finally:
        config._attn_implementation = before


def attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | BlockMask | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature: [batch, heads, length, dim] in,
    ([batch, length, heads, dim], None) out."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if _is_block_mask(attention_mask):
        out = _flex(query.device.type)(
            query, key, value, block_mask=attention_mask, scale=scaling, enable_gqa=query.shape[1] != key.shape[1]
        )
        return out.transpose(1, 2).contiguous(), None
    # a dense boolean mask, or None (plain causal rows): PyTorch's SDPA kernels
    return sdpa_attention_forward(  # type: ignore[no-any-return]
        module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
    )


def _is_block_mask(mask: object) -> bool:
    from torch.nn.attention.flex_attention import BlockMask

    return isinstance(mask, BlockMask)


@lru_cache(maxsize=None)
def _flex(device_type: str) -> Callable[..., Any]:
    """FlexAttention: compiled on CUDA (once per process; shapes repeat, see ``forward_plan``), its
    reference implementation elsewhere."""
    import warnings

    import torch
    from torch.nn.attention.flex_attention import flex_attention

    if device_type == "cuda":
        return torch.compile(flex_attention)  # type: ignore[no-any-return]

    def reference(*args: Any, **kwargs: Any) -> Any:
        with warnings.catch_warnings():  # "called without torch.compile": intended off CUDA
            warnings.simplefilter("ignore")
            return flex_attention(*args, **kwargs)

    return reference


def dense_mask(ends: torch.Tensor, causal: torch.Tensor | None = None) -> torch.Tensor:
    """[rows, 1, width, width] booleans from ``ends`` [rows, width] (on its device): query q sees key
    kv where kv <= q < ends[kv]. ``causal``: the [width, width] lower triangle (``causal_triangle``),
    kept by a caller that makes many masks of one width (the compare and the in-place ``and`` are
    the two passes over the mask left; building the triangle was a third)."""
    import torch

    width = ends.shape[1]
    if causal is None:
        causal = causal_triangle(width, ends.device)
    index = torch.arange(width, device=ends.device)
    mask = index[:, None] < ends[:, None, :]
    mask &= causal
    return mask[:, None]


def causal_triangle(width: int, device: torch.device) -> torch.Tensor:
    """[width, width] booleans, true where key <= query."""
    import torch

    return torch.ones(width, width, dtype=torch.bool, device=device).tril_()


def block_mask(ends: torch.Tensor) -> BlockMask:
    """The FlexAttention ``BlockMask`` of the same mask (built on ``ends``'s device)."""
    from torch.nn.attention.flex_attention import create_block_mask

    rows, width = ends.shape

    def allowed(b: torch.Tensor, h: torch.Tensor, q: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
        return (kv <= q) & (q < ends[b, kv])

    return create_block_mask(allowed, rows, None, width, width, device=ends.device, BLOCK_SIZE=BLOCK)
