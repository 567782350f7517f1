"""Greedy decoding with continuous batching.

transformers' ``generate`` keeps a finished sequence in the batch, feeding it padding until the
longest one ends, and a new batch starts only when the whole previous one is done. Here a sequence
that meets end-of-sequence, a stop string or its token limit leaves the batch at once (its rows
leave the key/value cache), and a waiting prompt takes its slot: the batch stays full, so the
number of decoding steps is about the total number of new tokens divided by the batch size
instead of the sum of each batch's longest answer.

When all prompts start alike (an instruction, few-shot examples), that start is forwarded once and
every prefill begins from its key/values.

Each row of the cache holds its own tokens right-aligned (left padding, masked out), with its own
position ids, so rows of different lengths and ages share one forward pass. Columns that are
padding in every row are cut off as rows leave, so the cache stays as wide as its longest row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    import torch
    from transformers import Cache, PreTrainedModel, PreTrainedTokenizerBase


@dataclass
class Decoded:
    tokens: list[int]  # new tokens, end-of-sequence excluded
    reason: str  # "eos", "stop" or "length"


@dataclass
class DecodingRow:
    index: int  # which prompt
    next_position: int
    generated: list[int] = field(default_factory=list)


def cache_keyword(model: object) -> str:
    """The keyword a model's forward takes its key/value cache by: ``cache`` in newer transformers
    (where ``past_key_values`` is deprecated, to be removed in 5.40), ``past_key_values`` before.
    Read off the class (a hooked instance's ``forward`` may be a ``*args, **kwargs`` wrapper)."""
    import inspect

    cls = type(model)
    keyword = _CACHE_KEYWORDS.get(cls)
    if keyword is None:
        keyword = "cache" if "cache" in inspect.signature(getattr(cls, "forward")).parameters else "past_key_values"
        _CACHE_KEYWORDS[cls] = keyword
    return keyword


# model class -> its cache keyword: a plain dict, as mypy's lru_cache stub takes no class as a key
_CACHE_KEYWORDS: dict[type, str] = {}


def output_cache(out: Any) -> Cache:
    """The key/value cache a forward returned, under either name (see ``cache_keyword``)."""
    cache: Cache = out.cache if "cache" in getattr(type(out), "__dataclass_fields__", {}) else out.past_key_values
    return cache


def _hit_stop(tokenizer: PreTrainedTokenizerBase, tokens: list[int], stop: Sequence[str], longest: int) -> bool:
    # Only the tail can hold a stop string that the previous step had not already completed.
    tail = tokenizer.decode(tokens[-(longest + 2) :], skip_special_tokens=True)
    return any(s in tail for s in stop)


def _plain_layers(cache: Cache | None) -> list[Any] | None:
    """The cache's layers if each is a plain growing key/value pair that can be re-packed; else None
    (sliding-window and other special caches keep the simpler drop-only decoding)."""
    from transformers.cache_utils import DynamicLayer

    layers: list[Any] | None = getattr(cache, "layers", None)
    if not layers or any(type(layer) is not DynamicLayer for layer in layers):
        return None
    return layers


def _left_pad(tensor: torch.Tensor, width: int, dim: int) -> torch.Tensor:
    import torch

    missing = width - tensor.shape[dim]
    if missing <= 0:
        return tensor
    shape = list(tensor.shape)
    shape[dim] = missing
    return torch.cat([torch.zeros(shape, dtype=tensor.dtype, device=tensor.device), tensor], dim=dim)


class _Batch:
    """Rows with their key/value cache: each row's tokens right-aligned (left padding, masked out)."""

    def __init__(
        self, rows: list[DecodingRow] | None = None, cache: Cache | None = None, mask: torch.Tensor | None = None
    ) -> None:
        self.rows = rows or []
        # Both None exactly while the batch has no rows (every method that reads them has rows), so
        # they are typed as what they hold then.
        self.cache: Cache = cache
        self.mask: torch.Tensor = mask  # [rows, cache width]: 1 where a row holds a real token

    def keep(self, slots: list[int]) -> None:
        """Keep only these rows (and their cache rows); cut columns that are padding everywhere."""
        import torch

        if len(slots) == len(self.rows):
            return
        self.rows = [self.rows[slot] for slot in slots]
        if not slots:
            self.cache, self.mask = None, None
            return
        self.cache.batch_select_indices(torch.tensor(slots))
        self.mask = self.mask[slots]
        if _plain_layers(self.cache) is not None:
            self._cut_padding()

    def split(self, count: int) -> "_Batch":
        """Remove the first ``count`` rows and return them as a batch of their own."""
        from transformers.cache_utils import DynamicCache

        if count >= len(self.rows):
            taken = _Batch(self.rows, self.cache, self.mask)
            self.rows, self.cache, self.mask = [], None, None
            return taken
        layers = [(layer.keys[:count], layer.values[:count]) for layer in self.cache.layers]
        taken = _Batch(self.rows[:count], DynamicCache(layers), self.mask[:count])
        taken._cut_padding()
        for layer in self.cache.layers:
            layer.keys, layer.values = layer.keys[count:], layer.values[count:]
        self.rows, self.mask = self.rows[count:], self.mask[count:]
        self._cut_padding()
        return taken

    def _cut_padding(self) -> None:
        """Drop leading columns that are padding in every row (they held departed rows' tokens)."""
        import torch

        lead = int((self.mask.sum(0) > 0).to(torch.int8).argmax())
        if lead:
            for layer in self.cache.layers:
                layer.keys = layer.keys[..., lead:, :]
                layer.values = layer.values[..., lead:, :]
            self.mask = self.mask[:, lead:]

    def join(self, other: "_Batch") -> None:
        """Append ``other``'s rows, left-padding whichever cache is narrower."""
        import torch

        if not other.rows:
            return
        if not self.rows:
            self.rows, self.cache, self.mask = other.rows, other.cache, other.mask
            return
        width = max(self.mask.shape[1], other.mask.shape[1])
        for mine, theirs in zip(self.cache.layers, other.cache.layers):
            mine.keys = torch.cat([_left_pad(mine.keys, width, -2), _left_pad(theirs.keys, width, -2)], dim=0)
            mine.values = torch.cat([_left_pad(mine.values, width, -2), _left_pad(theirs.values, width, -2)], dim=0)
        self.mask = torch.cat([_left_pad(self.mask, width, 1), _left_pad(other.mask, width, 1)], dim=0)
        self.rows = self.rows + other.rows


class Decoder:
    """The state of one continuously batched greedy decode."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        max_new_tokens: int,
        stop: Sequence[str],
        eos_ids: Sequence[int],
        device: str,
        on_finish: Callable[[], None] | None = None,
    ) -> None:
        self.on_finish = on_finish  # called once per finished sequence (progress)
        self.model, self.tokenizer, self.device = model, tokenizer, device
        self.max_new_tokens, self.stop, self.eos = max_new_tokens, tuple(stop), set(eos_ids)
        # Stop strings span at most this many tokens (a token holds at least one character).
        self.longest = max((len(s) for s in stop), default=0)
        # A token can complete a stop string only if its text holds the string's last character (or
        # is a partial character); stop strings ending in whitespace are checked at every token, as
        # a token decoded alone may lose its leading space.
        self._stop_ends = {s[-1] for s in self.stop if s}
        self._check_always = any(s[-1].isspace() for s in self.stop if s)
        self._pieces: dict[int, bool] = {}  # token -> may it end a stop string
        self.running = _Batch()  # decoding now
        self.ready = _Batch()  # prefilled, first token taken, waiting for a free slot
        self.results: dict[int, Decoded] = {}
        # per layer (keys, values) of the prompts' shared start, one row
        self.prefix: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.prefix_length = 0

    def share_prefix(self, tokens: Sequence[int]) -> None:
        """Forward the start every prompt shares once; prefills then start from its key/values."""
        import torch

        out = self.model(input_ids=torch.tensor([list(tokens)], device=self.device), use_cache=True, logits_to_keep=1)
        layers = _plain_layers(output_cache(out))
        if layers is not None:
            self.prefix = [(layer.keys, layer.values) for layer in layers]
            self.prefix_length = len(tokens)

    def prefill(self, prompts: Sequence[Sequence[int]], indices: Sequence[int]) -> _Batch:
        """Forward new prompts (left-padded among themselves, after the shared prefix if there is
        one) and take each one's first token; returns the rows still running."""
        import torch

        shared = self.prefix_length
        own = [list(prompt[shared:]) for prompt in prompts]
        width = max(len(p) for p in own)
        ids = torch.full((len(own), width), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(own), width), dtype=torch.long)
        for r, tokens in enumerate(own):
            ids[r, width - len(tokens) :] = torch.tensor(tokens)
            mask[r, width - len(tokens) :] = 1
        positions = shared + (mask.cumsum(-1) - 1).clamp(min=0)
        past = None
        if shared:
            from transformers.cache_utils import DynamicCache

            count = len(own)
            past = DynamicCache([(k.expand(count, -1, -1, -1), v.expand(count, -1, -1, -1)) for k, v in self.prefix])
            mask = torch.cat([torch.ones((count, shared), dtype=torch.long), mask], dim=1)
        out = self.model(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device),
            position_ids=positions.to(self.device),
            use_cache=True,
            logits_to_keep=1,
            **{cache_keyword(self.model): past},
        )
        batch = _Batch(
            [DecodingRow(index, len(prompt)) for index, prompt in zip(indices, prompts)], output_cache(out), mask
        )
        batch.keep(self.take(batch.rows, out.logits[:, -1]))
        return batch

    def take(self, rows: Sequence[DecodingRow], logits: torch.Tensor) -> list[int]:
        """Append each row's greedy token; returns the positions (in ``rows``) of rows still running."""
        running = []
        for slot, (row, token) in enumerate(zip(rows, logits.argmax(-1).tolist())):
            reason = self._finished(row, token)
            if reason is None:
                running.append(slot)
                continue
            self.results[row.index] = Decoded(row.generated, reason)
            if self.on_finish:
                self.on_finish()
        return running

    def _finished(self, row: DecodingRow, token: int) -> str | None:
        """Add ``token`` to the row; why the row is done ("eos", "stop", "length"), or None."""
        if token in self.eos:
            return "eos"
        row.generated.append(token)
        if (
            self.stop
            and self._may_end_stop(token)
            and _hit_stop(self.tokenizer, row.generated, self.stop, self.longest)
        ):
            return "stop"
        if len(row.generated) >= self.max_new_tokens:
            return "length"
        return None

    def _may_end_stop(self, token: int) -> bool:
        """Whether ``token`` can complete a stop string (a cheap filter before ``_hit_stop``, which
        decodes the row's tail: a few hundred rows a step made that the step's main cost)."""
        if self._check_always:
            return True
        may = self._pieces.get(token)
        if may is None:
            piece = self.tokenizer.decode([token], skip_special_tokens=True)
            may = self._pieces[token] = "\ufffd" in piece or any(end in piece for end in self._stop_ends)
        return may

    def step(self) -> None:
        """Feed every running row its newest token and take the next one."""
        import torch

        batch = self.running
        batch.mask = torch.cat([batch.mask, torch.ones((len(batch.rows), 1), dtype=torch.long)], dim=1)
        feed = torch.tensor([[row.generated[-1]] for row in batch.rows], device=self.device)
        positions = torch.tensor([[row.next_position] for row in batch.rows], device=self.device)
        out = self.model(
            input_ids=feed,
            attention_mask=batch.mask.to(self.device),
            position_ids=positions,
            use_cache=True,
            **{cache_keyword(self.model): batch.cache},
        )
        for row in batch.rows:
            row.next_position += 1
        batch.keep(self.take(batch.rows, out.logits[:, -1]))


# A shared start shorter than this is not worth its own forward pass.
MIN_SHARED = 4


def _shared_prefix(prompts: Sequence[Sequence[int]]) -> int:
    """How many leading tokens all prompts share, leaving each at least one token of its own."""
    if len(prompts) < 2:
        return 0
    first, n = prompts[0], min(len(p) for p in prompts) - 1
    for prompt in prompts[1:]:
        k = 0
        while k < n and prompt[k] == first[k]:
            k += 1
        n = k
    return max(n, 0)


def greedy_decode(
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
) -> list[Decoded]:
    """Greedy continuations of ``prompts`` with at most ``batch_size`` sequences in flight (all of
    them at once by default); results in the order of ``prompts``.

    Waiting prompts are prefilled ahead, up to about ``prefill_tokens`` tokens per forward pass
    (a few large prefills cost less than many small ones), and join the running batch as slots
    free up."""
    import torch

    size = max(1, batch_size or len(prompts))
    decoder = Decoder(model, tokenizer, max_new_tokens, stop, eos_ids, device, on_finish)
    # Re-packing rows needs plain growing caches; others (sliding window, ...) decode batch by batch.
    plain = cache_is_plain(model)
    waiting = list(range(len(prompts)))
    with torch.inference_mode():
        shared = _shared_prefix(prompts)
        if plain and shared >= MIN_SHARED:
            decoder.share_prefix(prompts[0][:shared])
        while waiting or decoder.ready.rows or decoder.running.rows:
            free = size - len(decoder.running.rows)
            if not plain:
                if not decoder.running.rows:
                    group, waiting = waiting[:size], waiting[size:]
                    decoder.running = decoder.prefill([prompts[i] for i in group], group)
            elif free >= max(1, size // 4) or not decoder.running.rows:  # refill once a quarter is free
                while waiting and len(decoder.ready.rows) < free:
                    group = _prefill_group(
                        prompts, waiting, free - len(decoder.ready.rows), prefill_tokens, decoder.prefix_length
                    )
                    waiting = waiting[len(group) :]
                    decoder.ready.join(decoder.prefill([prompts[i] for i in group], group))
                decoder.running.join(decoder.ready.split(free))
            if decoder.running.rows:
                decoder.step()
    return [decoder.results[i] for i in range(len(prompts))]


def cache_is_plain(model: PreTrainedModel) -> bool:
    """Whether the model's key/value cache is plain growing layers (rows can be re-packed)."""
    from transformers.cache_utils import DynamicCache

    try:
        return _plain_layers(DynamicCache(config=model.config)) is not None
    except Exception:  # a model type transformers' cache cannot describe: decode batch by batch
        return False


def _prefill_group(
    prompts: Sequence[Sequence[int]], waiting: list[int], needed: int, budget: int, shared: int
) -> list[int]:
    """The next waiting prompts to prefill together: at least ``needed``, more while the group's
    padded size stays within ``budget`` tokens."""
    group: list[int] = []
    width = 0
    for i in waiting:
        width = max(width, len(prompts[i]) - shared)
        if len(group) >= needed and width * (len(group) + 1) > budget:
            break
        group.append(i)
    return group
