"""Generation for the Hugging Face backend (``HFModel.generate``): requests grouped by their decoding
settings, then greedy requests continuously batched by the decoder the model was set up with
(``hf_decode``, ``hf_static`` or ``hf_invariant``), and sampling or beam search through transformers'
own ``generate``; results cut at stop strings and end-of-sequence, with the prompt tokens cut to fit.

A mixin of ``HFModel`` (``hf.py``), kept apart from its loading and log-likelihood scoring: it reads
only the settings ``HFModel`` sets up (declared below) and shares no code with the scoring path.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any, Callable, Sequence

from proctor.core.model_requests import GenerateRequest, GenerateResult
from proctor.models.base import Progress
from proctor.models.chat_reply import eos_ids
from proctor.models.generate_kwargs import decoding_kwargs
from proctor.models.hf.decode import Decoded, greedy_decode
from proctor.models.hf.invariant import invariant_greedy_decode
from proctor.models.hf.scoring import encode_many
from proctor.models.hf.static import static_greedy_decode
from proctor.models.memory import halving

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


class HFGeneration:
    """``generate`` and its helpers, mixed into :class:`proctor.models.hf.model.HFModel` (uses the loaded
    ``model`` and ``tokenizer`` and the settings ``HFModel._setup`` reads off them)."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    device: str
    batch_size: int | str
    max_length: int
    add_bos: bool
    prefix_token_id: int
    pack_tokens: int
    batch_invariant: bool
    decoding: str
    cuda_graphs: bool

    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[GenerateResult]:
        import torch

        prompts = encode_many(self.tokenizer, [r.prompt for r in requests])
        if self.add_bos:
            prompts = [[self.prefix_token_id] + p for p in prompts]

        # Same settings batch together; within them longest first, to keep padding low.
        def settings(i: int) -> tuple[Any, ...]:
            r = requests[i]
            return (
                r.max_tokens,
                r.stop,
                r.temperature,
                r.top_p,
                r.seed,
                r.num_beams,
                r.length_penalty,
                r.no_repeat_ngram_size,
                r.min_tokens,
                r.max_length,
                r.top_k,
                r.repetition_penalty,
            )

        order = sorted(range(len(requests)), key=lambda i: (repr(settings(i)), -len(prompts[i]), i))
        results: list[Any] = [None] * len(requests)  # each request's GenerateResult, filled group by group
        longest = max((len(p) + r.max_tokens for p, r in zip(prompts, requests)), default=1)
        size = self._chosen_generation_batch(longest) if self.batch_size == "auto" else max(1, int(self.batch_size))
        # Requests with the same settings decode together.
        groups: list[list[int]] = []
        for i in order:
            if groups and settings(groups[-1][0]) == settings(i):
                groups[-1].append(i)
            else:
                groups.append([i])
        eos_ids = self._eos_ids()
        cuts: dict[int, int] = {}  # request -> prompt tokens cut on the left to fit the window
        with torch.inference_mode():
            for group in groups:
                request = requests[group[0]]
                budget = min(self.max_length, request.max_length or self.max_length) - request.max_tokens
                ids = [prompts[i][-budget:] if budget > 0 else prompts[i][-1:] for i in group]
                cuts.update((i, len(prompts[i]) - len(x)) for i, x in zip(group, ids) if len(x) < len(prompts[i]))
                if (
                    request.temperature == 0
                    and request.num_beams == 1
                    and not request.no_repeat_ngram_size
                    and not request.min_tokens
                    and request.repetition_penalty == 1.0
                ):
                    # Greedy: continuously batched, `size` sequences in flight.
                    # On out-of-memory the group decodes again with half as many in flight.
                    decode: Callable[..., list[Decoded]]
                    if self.batch_invariant:
                        decode = invariant_greedy_decode
                    elif self.decoding == "static":
                        decode = functools.partial(
                            static_greedy_decode, prefill_tokens=self.pack_tokens, graphs=self.cuda_graphs
                        )
                    else:
                        decode = functools.partial(greedy_decode, prefill_tokens=self.pack_tokens)
                    decoded = halving(
                        lambda n: decode(
                            self.model,
                            self.tokenizer,
                            ids,
                            request.max_tokens,
                            request.stop,
                            eos_ids,
                            self.device,
                            batch_size=n,
                            on_finish=(lambda: progress(1)) if progress else None,
                        ),
                        size,
                        "generation batch",
                    )
                    for r, i in enumerate(group):
                        results[i] = self._result(decoded[r].tokens, decoded[r].reason, requests[i], len(ids[r]))
                    continue
                for start in range(0, len(group), size):
                    batch, batch_ids = group[start : start + size], ids[start : start + size]
                    outputs = halving(
                        lambda n: [
                            new
                            for k in range(0, len(batch_ids), n)
                            for new in self._transformers_generate(batch_ids[k : k + n], request, eos_ids)
                        ],
                        len(batch_ids),
                        "generation batch",
                    )
                    for r, (i, new) in enumerate(zip(batch, outputs)):
                        results[i] = self._finish(new, requests[i], len(batch_ids[r]), eos_ids)
                    if progress:
                        progress(len(batch))
        for i, cut in cuts.items():
            results[i] = dataclasses.replace(results[i], truncated=cut)
        return results

    def _chosen_generation_batch(self, sequence_length: int) -> int:
        """``--batch-size auto``: the size chosen for this call, remembered (``chosen_batch_sizes``, each size once)
        so the run records what ran rather than 'auto' (results.json's ``model_info.batch_sizes``)."""
        size = self._auto_generation_batch(sequence_length)
        chosen = self.__dict__.setdefault("chosen_batch_sizes", [])
        if size not in chosen:
            chosen.append(size)
        return size

    def _auto_generation_batch(self, sequence_length: int) -> int:
        """As many sequences as a quarter of free memory holds key/value caches for (1 to 64 on the
        CPU, 256 on CUDA); an out-of-memory error halves it and retries (``memory.halving``)."""
        config = self.model.config
        layers = getattr(config, "num_hidden_layers", 24)
        heads = getattr(config, "num_key_value_heads", 0) or getattr(config, "num_attention_heads", 16)
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // getattr(config, "num_attention_heads", 16)
        per_token = 2 * layers * heads * head_dim * self.model.dtype.itemsize
        if self.device.startswith("cuda"):
            import torch

            free = torch.cuda.mem_get_info()[0]
        else:
            import os

            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        most = 256 if self.device.startswith("cuda") else 64
        return int(max(1, min(most, free // 4 // max(1, per_token * sequence_length))))

    def _transformers_generate(
        self, ids: list[list[int]], request: GenerateRequest, eos_ids: list[int]
    ) -> list[list[int]]:
        """Sampling and beam search through transformers' ``generate`` (left-padded batch)."""
        import torch

        pad = self.tokenizer.pad_token_id
        width = max(len(x) for x in ids)
        input_ids = torch.full((len(ids), width), pad, dtype=torch.long)
        mask = torch.zeros((len(ids), width), dtype=torch.long)
        for r, x in enumerate(ids):
            input_ids[r, width - len(x) :] = torch.tensor(x)
            mask[r, width - len(x) :] = 1
        kwargs = decoding_kwargs(request, pad, eos_ids)
        if request.stop:
            kwargs.update(stop_strings=list(request.stop), tokenizer=self.tokenizer)
        output = self.model.generate(input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device), **kwargs)
        return [output[r, width:].tolist() for r in range(len(ids))]

    def _result(self, tokens: list[int], reason: str, request: GenerateRequest, n_prompt: int) -> GenerateResult:
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        cut = min((text.find(s) for s in request.stop if s in text), default=-1)
        if cut >= 0:
            return GenerateResult(text[:cut], "stop", n_prompt, len(tokens))
        return GenerateResult(
            text, "length" if reason == "length" else "stop", n_prompt, len(tokens) + (reason == "eos")
        )

    def _eos_ids(self) -> list[int]:
        return eos_ids(self.tokenizer, self.model.generation_config)

    def _finish(self, new: list[int], request: GenerateRequest, n_prompt: int, eos_ids: list[int]) -> GenerateResult:
        """A result from transformers' output row: cut at end-of-sequence, drop trailing padding."""
        pad = self.tokenizer.pad_token_id
        reason = "length"
        for position, token in enumerate(new):
            if token in eos_ids:
                new, reason = new[:position], "eos"
                break
        while new and new[-1] == pad and pad not in eos_ids:
            new.pop()
        return self._result(new, reason, request, n_prompt)
