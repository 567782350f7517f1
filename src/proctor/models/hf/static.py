"""Greedy decoding over a static key/value cache (the CUDA default), replayed as a CUDA graph.

The default continuous batching (``hf_decode``) grows, cuts and re-packs its cache as sequences
come and go: every step has a new shape and several host-to-device copies. Here the cache is
allocated once per call: ``slots`` rows x ``width`` columns per layer, ``width`` a multiple of
``COLUMNS`` that holds the longest prompt and its new tokens. A sequence lives in one slot, its
token p at column p (left-aligned); a finished sequence frees its slot, and a prefilled prompt takes
it (its key/values gathered from the prefill's cache, shared prompt start included). Every step is
then the same computation on the same tensors — the slots' newest tokens, their columns, a mask of
the columns each row may see — so on CUDA it is captured once as a CUDA graph and replayed: one
launch per step instead of a few hundred, and one copy back (the new tokens) per step.

Prefill is ``hf_decode``'s (left-padded groups after a shared prompt start, forwarded once). The
tokens equal the default decoding's except where the last bits of a decode step's attention decide a
near-tie: here each row sees its columns at fixed places in a wider cache (``tests`` compare them).
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Sequence

from proctor.models.hf.decode import (
    MIN_SHARED,
    Decoded,
    Decoder,
    DecodingRow,
    _Batch,
    _prefill_group,
    _shared_prefix,
    cache_keyword,
)

if TYPE_CHECKING:
    import torch
    from transformers import Cache, PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)

COLUMNS = 64  # cache widths are multiples of this


def cache_width(tokens: int) -> int:
    return COLUMNS * max(1, -(-tokens // COLUMNS))


@lru_cache(maxsize=None)
def slot_layer_class() -> type[Any]:
    """A transformers cache layer whose rows each write their new key/value at their own column
    (made on first use: transformers is imported lazily)."""
    from transformers.cache_utils import CacheLayerMixin

    class SlotLayer(CacheLayerMixin):  # type: ignore[misc]  # transformers is not followed: its classes are Any
        is_compileable = False
        is_sliding = False

        def __init__(self, keys: torch.Tensor, values: torch.Tensor, columns: torch.Tensor) -> None:
            super().__init__()
            self.keys, self.values = keys, values  # [rows, heads, width, head dim]
            self.columns = columns  # [rows]: where each row's next token goes
            self.rows: torch.Tensor | None = None
            self.is_initialized = True

        def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
            pass  # made full-size by its owner

        def update(
            self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
        ) -> tuple[torch.Tensor, torch.Tensor]:
            import torch

            if self.rows is None or len(self.rows) != key_states.shape[0]:
                self.rows = torch.arange(key_states.shape[0], device=key_states.device)
            columns = self.columns if self.columns.device == self.keys.device else self.columns.to(self.keys.device)
            self.keys[self.rows, :, columns] = key_states[:, :, 0]
            self.values[self.rows, :, columns] = value_states[:, :, 0]
            return self.keys, self.values

        def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
            return self.keys.shape[-2], 0

        def get_seq_length(self) -> int:
            return 0  # positions are always given explicitly

        def get_max_length(self) -> int:
            width: int = self.keys.shape[-2]
            return width

    return SlotLayer


def attention_mask(model: PreTrainedModel, allowed: torch.Tensor) -> torch.Tensor:
    """A step's 4-D mask as the model's attention takes it: boolean for SDPA, additive for eager."""
    import torch

    from proctor.core.errors import ModelLoadError

    implementation = getattr(model.config, "_attn_implementation", None) or "eager"
    if implementation == "sdpa":
        return allowed
    if implementation == "eager":
        return torch.zeros(allowed.shape, dtype=model.dtype, device=allowed.device).masked_fill(
            ~allowed, torch.finfo(model.dtype).min
        )
    raise ModelLoadError(
        "greedy decoding over a static cache (batch_invariant, decode=static) supports the 'sdpa' and "
        f"'eager' attention implementations, not '{implementation}'"
    )


def supported(model: PreTrainedModel) -> bool:
    """Whether a model can decode over the static cache: plain full-attention cache layers and an
    attention that takes a 4-D mask."""
    from proctor.models.hf.decode import cache_is_plain

    return cache_is_plain(model) and (getattr(model.config, "_attn_implementation", None) or "eager") in (
        "sdpa",
        "eager",
    )


class _Slots:
    """The static cache and the per-slot state the step reads (all on the device, fixed addresses)."""

    def __init__(self, model: PreTrainedModel, size: int, width: int, device: str) -> None:
        import torch

        self.model, self.size, self.width, self.device = model, size, width, device
        self.rows: list[DecodingRow | None] = [None] * size
        self.columns = torch.zeros(size, dtype=torch.long, device=device)  # each slot's next column (= position)
        self.feed = torch.zeros((size, 1), dtype=torch.long, device=device)  # each slot's newest token
        self.live = torch.zeros(size, dtype=torch.bool, device=device)
        self.cache: Cache | None = None  # made by the first prefill
        self.index = torch.arange(width, device=device)

    def free(self) -> list[int]:
        return [slot for slot in range(self.size) if self.rows[slot] is None]

    def busy(self) -> bool:
        return any(row is not None for row in self.rows)

    def place(self, batch: _Batch, slots: Sequence[int]) -> None:
        """Move a prefilled batch (``hf_decode._Batch``: right-aligned rows, the first token taken)
        into ``slots``: each row's key/values gathered to columns 0.. of its slot."""
        import torch
        from transformers.cache_utils import Cache

        count = len(batch.rows)
        real = batch.mask.bool()  # [rows, prefill width]: the row's own columns, in order
        lengths = real.sum(1)
        source = torch.zeros((count, self.width), dtype=torch.long)
        for r in range(count):  # column c of the slot holds the row's c-th real column
            source[r, : int(lengths[r])] = torch.nonzero(real[r]).flatten()
        source = source.to(self.device)
        target = torch.tensor(list(slots), device=self.device)
        prefilled = batch.cache.layers
        if self.cache is None:

            def empty(like: torch.Tensor) -> torch.Tensor:
                return torch.zeros(
                    (self.size, like.shape[1], self.width, like.shape[3]), dtype=like.dtype, device=like.device
                )

            layers = [slot_layer_class()(empty(layer.keys), empty(layer.values), self.columns) for layer in prefilled]
            self.cache = Cache(layers=layers)
        for mine, theirs in zip(self.cache.layers, prefilled):
            for name in ("keys", "values"):
                src = getattr(theirs, name)  # on its layer's device (a sharded model's layers differ)
                index = source.to(src.device)[:, None, :, None].expand(count, src.shape[1], self.width, src.shape[3])
                getattr(mine, name).index_copy_(0, target.to(src.device), src.gather(2, index))
        for slot, row in zip(slots, batch.rows):
            self.rows[slot] = row
        self.columns.index_copy_(0, target, torch.tensor([row.next_position for row in batch.rows], device=self.device))
        self.feed.index_copy_(0, target, torch.tensor([[row.generated[-1]] for row in batch.rows], device=self.device))
        self.live.index_fill_(0, target, True)

    def retire(self, slots: Sequence[int]) -> None:
        import torch

        for slot in slots:
            self.rows[slot] = None
        index = torch.tensor(list(slots), device=self.device)
        self.live.index_fill_(0, index, False)
        self.columns.index_fill_(0, index, 0)


class _Step:
    """One decoding step over every slot: forward the newest tokens, take the greedy ones, advance.
    On CUDA captured once as a graph (after a warm-up) and replayed."""

    def __init__(self, slots: _Slots, graphs: bool) -> None:
        self.slots = slots
        self.graph: torch.cuda.CUDAGraph | None = None
        self.next: torch.Tensor | None = None  # the captured step's greedy tokens (a static output)
        self.graphs = graphs
        self.calls = 0

    def _compute(self) -> torch.Tensor:
        slots = self.slots
        allowed = slots.index[None, :] <= slots.columns[:, None]
        out = slots.model(
            input_ids=slots.feed,
            attention_mask=attention_mask(slots.model, allowed[:, None, None, :]),
            position_ids=slots.columns[:, None],
            use_cache=True,
            **{cache_keyword(slots.model): slots.cache},
        )
        token = out.logits[:, -1].argmax(-1)
        slots.feed.copy_(token[:, None])
        slots.columns.add_(slots.live.long())
        return token

    def __call__(self) -> list[int]:
        self.calls += 1
        if self.graph is None and self.graphs and self.calls >= 3:  # two eager steps warm the kernels up
            self._capture()
        if self.graph is not None:
            self.graph.replay()
            tokens: list[int] = self.next.tolist()  # type: ignore[union-attr]  # set with the graph
            return tokens
        computed: list[int] = self._compute().tolist()
        return computed

    def _capture(self) -> None:
        """Record the step as a CUDA graph. Capturing records kernels without running them; the
        warm-up before it (on a side stream, as capture needs) does run a step, so the slots' feed
        and columns are put back: the first replay then redoes that step, writing the same keys and
        values into the same cache columns."""
        import torch

        slots = self.slots
        try:
            saved = (slots.feed.clone(), slots.columns.clone())
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self._compute()
            torch.cuda.current_stream().wait_stream(side)
            slots.feed.copy_(saved[0])
            slots.columns.copy_(saved[1])
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self.next = self._compute()
            self.graph = graph
        except Exception as exc:  # a model whose forward cannot be captured: eager steps
            log.info("decoding without a CUDA graph (%s: %s)", type(exc).__name__, exc)
            self.graphs, self.graph = False, None


def static_greedy_decode(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    stop: Sequence[str],
    eos_ids: Sequence[int],
    device: str,
    batch_size: int | None = None,
    on_finish: Callable[[], None] | None = None,
    prefill_tokens: int = 512,
    graphs: bool | None = None,
) -> list[Decoded]:
    """Greedy continuations of ``prompts`` with at most ``batch_size`` sequences in flight, over a
    static cache (``graphs``: replay the step as a CUDA graph, on CUDA; on by default)."""
    import torch

    size = max(1, min(batch_size or len(prompts), len(prompts)))
    decoder = Decoder(model, tokenizer, max_new_tokens, stop, eos_ids, device, on_finish)
    waiting = list(range(len(prompts)))
    with torch.inference_mode():
        shared = _shared_prefix(prompts)
        if shared >= MIN_SHARED:
            decoder.share_prefix(prompts[0][:shared])
        slots = _Slots(model, size, cache_width(max(len(p) for p in prompts) + max_new_tokens), device)
        step = _Step(slots, graphs is not False and str(device).startswith("cuda"))
        while waiting or slots.busy():
            free = slots.free()
            if waiting and (len(free) >= max(1, size // 4) or not slots.busy()):  # refill once a quarter is free
                while waiting and free:
                    group = _prefill_group(prompts, waiting, len(free), prefill_tokens, decoder.prefix_length)[
                        : len(free)
                    ]
                    waiting = waiting[len(group) :]
                    batch = decoder.prefill([prompts[i] for i in group], group)
                    if batch.rows:
                        slots.place(batch, free[: len(batch.rows)])
                        free = free[len(batch.rows) :]
            if not slots.busy():
                continue
            tokens = step()
            done = []
            for slot, row in enumerate(slots.rows):
                if row is None:
                    continue
                reason = decoder._finished(row, tokens[slot])
                row.next_position += 1
                if reason is not None:
                    decoder.results[row.index] = Decoded(row.generated, reason)
                    if decoder.on_finish:
                        decoder.on_finish()
                    done.append(slot)
            if done:
                slots.retire(done)
    return [decoder.results[i] for i in range(len(prompts))]
