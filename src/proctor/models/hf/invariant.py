"""Greedy decoding whose tokens depend only on the prompt (``HFModel(batch_invariant=True)``).

In the default decoding (``hf_decode``) a row's numbers change in the last bits with what shares
its forward passes: the prefill's padded width and the shared-prefix split change the attention
kernel's blocking, the cache width (set by the longest row) changes the attention's reductions, and
in float32 the number of rows changes the matrix products (on this CPU one row takes another kernel
than two to eight, and sixteen or more another). Near-ties in the logits then flip a greedy token. Here
every kernel a row goes through sees shapes and a data layout that do not depend on the other rows:

- each prompt is prefilled alone, at its own length (a shape decided by the prompt only);
- every decoding step forwards exactly ``rows_per_step(device)`` rows (empty slots are padding
  rows: the pad token at column 0), and so does the head's product for a prompt's first token;
  more sequences in flight run as several such lanes, one forward pass each;
- a row's token at position p lives at cache column p (left-aligned, never shifted by other
  rows), and the cache is a whole number of ``COLUMNS`` columns wide; the masked columns past a
  row's end then change none of its bits (measured on the CPU, see docs/performance.md);
- no shared-prefix reuse.

The fixed shapes are also what CUDA graphs need; the GPU cost is not measured yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from proctor.core.errors import ModelLoadError
from proctor.models.hf.decode import Decoded, Decoder, DecodingRow, cache_is_plain, cache_keyword, output_cache
from proctor.models.hf.static import COLUMNS, attention_mask, cache_width, slot_layer_class

if TYPE_CHECKING:
    import torch
    from transformers import Cache, PreTrainedModel, PreTrainedTokenizerBase

ROWS = 8  # rows in every CPU decoding step (the default --batch-size: no padding rows there)
GPU_ROWS = 64  # on CUDA, where a step's cost hardly grows with its rows (a guess: not measured yet)


def rows_per_step(device: str) -> int:
    return GPU_ROWS if device.startswith("cuda") else ROWS


def layout(device: str) -> str:
    """What decides the mode's shapes; changing it changes outputs, so it enters the fingerprint."""
    return f"rows={rows_per_step(device)},columns={COLUMNS}"


class _Lane:
    """Slots that decode together: one forward pass of exactly ``size`` rows per step."""

    def __init__(self, size: int, capacity: int, device: str):
        import torch

        self.size = size
        self.capacity = capacity  # slots that may hold a sequence (the others stay padding rows)
        self.rows: list[DecodingRow | None] = [None] * size
        self.columns = torch.zeros(size, dtype=torch.long, device=device)  # each row's next column
        self.cache: Cache | None = None  # made by the first prefill
        self.width = 0

    def free(self) -> list[int]:
        return [slot for slot in range(self.capacity) if self.rows[slot] is None]

    def live(self) -> list[int]:
        return [slot for slot in range(self.size) if self.rows[slot] is not None]

    def resize(self, width: int) -> None:
        """Grow (zeros on the right) or cut the cache to ``width`` columns; no row's column moves."""
        import torch

        if width == self.width:
            return
        assert self.cache is not None  # resized only after the first prefill made it
        for layer in self.cache.layers:
            for name in ("keys", "values"):
                tensor = getattr(layer, name)
                if width > tensor.shape[-2]:
                    shape = list(tensor.shape)
                    shape[-2] = width - tensor.shape[-2]
                    tensor = torch.cat([tensor, torch.zeros(shape, dtype=tensor.dtype, device=tensor.device)], dim=-2)
                else:
                    tensor = tensor[..., :width, :].contiguous()
                setattr(layer, name, tensor)
        self.width = width

    def place(self, slot: int, row: DecodingRow, prefilled: Cache) -> None:
        """Put a prefilled sequence (its own one-row cache, one column per prompt token) into ``slot``."""
        import torch
        from transformers.cache_utils import Cache

        length = row.next_position
        if self.cache is None:
            width = cache_width(length + 1)

            # [lane rows, heads, width, head dim] zeros shaped after a one-row prefill tensor
            def empty(like: torch.Tensor) -> torch.Tensor:
                return torch.zeros(
                    (self.size, like.shape[1], width, like.shape[3]), dtype=like.dtype, device=like.device
                )

            layers = [
                slot_layer_class()(empty(source.keys), empty(source.values), self.columns)
                for source in prefilled.layers
            ]
            self.cache, self.width = Cache(layers=layers), width
        self.resize(max(self.width, cache_width(length + 1)))
        for mine, theirs in zip(self.cache.layers, prefilled.layers):
            for name in ("keys", "values"):
                target = getattr(mine, name)
                target[slot].zero_()
                target[slot, :, :length] = getattr(theirs, name)[0]
        self.rows[slot] = row
        self.columns[slot] = length


class _InvariantDecoder(Decoder):
    def prefill_one(self, index: int, prompt: Sequence[int]) -> tuple[DecodingRow, Cache] | None:
        """Forward one prompt alone, at its own length (plain causal attention, as transformers'
        ``generate`` does for one prompt); returns (its row, its cache) if it goes on, else None."""
        import torch

        # The last position's logits once per step row: the head's product has the decoding steps' shape.
        last = torch.full((rows_per_step(self.device),), len(prompt) - 1, device=self.device)
        out = self.model(
            input_ids=torch.tensor([list(prompt)], device=self.device),
            position_ids=torch.arange(len(prompt), device=self.device)[None],
            use_cache=True,
            logits_to_keep=last,
        )
        row = DecodingRow(index, len(prompt))
        if not self.take([row], out.logits[:, 0]):
            return None
        return row, output_cache(out)

    def step_lane(self, lane: _Lane) -> None:
        """Feed each row of the lane its newest token (padding rows: the pad token at column 0)."""
        import torch

        live = lane.live()
        rows = [row for row in (lane.rows[slot] for slot in live) if row is not None]  # all of them: live slots
        lane.resize(cache_width(max(row.next_position for row in rows) + 1))
        pad = self.tokenizer.pad_token_id
        feed = torch.tensor([[row.generated[-1] if row else pad] for row in lane.rows], device=self.device)
        for slot in range(lane.size):
            if lane.rows[slot] is None:
                lane.columns[slot] = 0
        mask = torch.arange(lane.width, device=self.device)[None, :] <= lane.columns[:, None]
        out = self.model(
            input_ids=feed,
            attention_mask=attention_mask(self.model, mask[:, None, None, :]),
            position_ids=lane.columns[:, None].clone(),
            use_cache=True,
            **{cache_keyword(self.model): lane.cache},
        )
        going = set(self.take(rows, out.logits[live, -1]))
        for k, slot in enumerate(live):
            if k in going:
                rows[k].next_position += 1
                lane.columns[slot] += 1
            else:
                lane.rows[slot] = None


def invariant_greedy_decode(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    stop: Sequence[str],
    eos_ids: Sequence[int],
    device: str,
    batch_size: int | None = None,
    on_finish: Callable[[], None] | None = None,
) -> list[Decoded]:
    """Greedy continuations of ``prompts``, each a function of its prompt alone: the same tokens at
    any ``batch_size`` (sequences in flight) and in any request order."""
    import torch

    if not cache_is_plain(model):
        raise ModelLoadError(
            f"batch_invariant decoding needs a model with plain full-attention layers; {type(model).__name__} "
            "has sliding-window or other special cache layers"
        )
    size = max(1, batch_size or len(prompts))
    rows = rows_per_step(device)
    lanes = [_Lane(rows, min(rows, size - start), device) for start in range(0, size, rows)]
    decoder = _InvariantDecoder(model, tokenizer, max_new_tokens, stop, eos_ids, device, on_finish)
    waiting = list(range(len(prompts)))[::-1]
    with torch.inference_mode():
        while True:
            for lane in lanes:
                for slot in lane.free():
                    while waiting:
                        index = waiting.pop()
                        prefilled = decoder.prefill_one(index, prompts[index])
                        if prefilled is not None:
                            lane.place(slot, *prefilled)
                            break
            busy = [lane for lane in lanes if lane.live()]
            if not busy:
                break
            for lane in busy:
                decoder.step_lane(lane)
    return [decoder.results[i] for i in range(len(prompts))]
