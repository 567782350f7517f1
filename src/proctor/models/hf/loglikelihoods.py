"""Log-likelihoods for the Hugging Face backend (``HFModel.loglikelihood`` and ``rolling_loglikelihood``):
requests tokenized into scoring items, packed into prefix-sharing rows (or scoring units) laid out in forward
calls that depend on the requests alone, and scored through the vocabulary head at the scored positions only.

A mixin of ``HFModel`` (``model.py``), as generation is (``generation.py``): it reads only the settings
``HFModel`` sets up (declared below).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Sequence

from proctor.core.model_requests import (
    LoglikelihoodRequest,
    LoglikelihoodResult,
    RollingLoglikelihoodRequest,
    RollingLoglikelihoodResult,
)
from proctor.models.base import Progress
from proctor.models.hf import head_kernel
from proctor.models.hf.forward_plan import ForwardCall, ForwardLayout
from proctor.models.hf.packing import ItemScores, ScoringItem, pack
from proctor.models.hf.scoring import encode_many, loglikelihood_items, plan_loglikelihood, score_rows
from proctor.models.hf.unit_scoring import score_units
from proctor.models.hf.vocab_head import VocabularyHead

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger("proctor.models.hf.model")  # the backend's logger: its warnings are named as the backend's


class HFLoglikelihoods:
    """``loglikelihood``, ``rolling_loglikelihood`` and the scoring core they share, mixed into
    :class:`proctor.models.hf.model.HFModel`."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    name: str
    device: str
    max_length: int
    add_bos: bool
    prefix_token_id: int
    pack_tokens: int
    layout: ForwardLayout
    attention: str
    vocab_head: str | None
    _head: VocabularyHead | None
    tokens_forwarded: int  # tokens sent through the decoder so far (set on the first scoring call)

    # ------------------------------------------------------------------ scoring core
    def _score(self, items: Sequence[ScoringItem], progress: Progress | None = None) -> list[ItemScores]:
        """Per item: (token log-probs, all-greedy flag).

        Items are packed into prefix-sharing rows (see ``packing``); which rows share a forward
        call, and its shape, depend only on the rows (``forward_plan``), so an item's numbers never
        depend on the batch size, the request order or the number of threads.
        """
        import torch

        if self.layout.name == "units":
            with torch.inference_mode():
                scored, forwarded = score_units(
                    self.model.get_decoder(),
                    self._vocabulary_head(),
                    items,
                    self.device,
                    self.tokenizer.pad_token_id,
                    progress,
                    self.layout.call_tokens,
                    self.name,
                )
            self.tokens_forwarded = getattr(self, "tokens_forwarded", 0) + forwarded
            return scored
        rows = pack(items, self.pack_tokens, self.layout.lookahead)
        self.tokens_forwarded = getattr(self, "tokens_forwarded", 0) + sum(len(row) for row in rows)
        with torch.inference_mode():
            return score_rows(
                self.model.get_decoder(),
                self._vocabulary_head(),
                rows,
                len(items),
                self.device,
                self.tokenizer.pad_token_id,
                progress,
                self.layout,
                self.attention,
            )

    def forward_calls(self, requests: Sequence[LoglikelihoodRequest]) -> list[ForwardCall]:
        """The forward calls ``loglikelihood(requests)`` makes, planned without running the model."""
        return plan_loglikelihood(
            self.tokenizer, requests, self.max_length, self.add_bos, self.prefix_token_id, self.layout
        )

    def _vocabulary_head(self) -> VocabularyHead:
        """The output embedding with its scoring buffers, made once per model (again if the
        model's output embedding was replaced)."""
        if self._head is None or self._head.head is not self.model.get_output_embeddings():
            softcap = getattr(self.model.config, "final_logit_softcapping", None)
            self._head = VocabularyHead(
                self.model.get_output_embeddings(),
                self.device,
                softcap,
                fused=self.vocab_head != "torch",
            )
            if self._head.refused:  # the default fused head, refused by its probe: PyTorch's ops, slower, same bits
                log.warning("the fused vocabulary head is off: %s; it runs as PyTorch ops", self._head.refused)
            elif self.vocab_head == "fused" and self._head.implementation is None:
                log.warning(
                    "--model-arg vocab_head=fused: %s; the vocabulary head runs as PyTorch ops",
                    "no C compiler could build the kernel"
                    if head_kernel.load() is None
                    else "it runs only a plain float32 Linear head on the CPU",
                )
        return self._head

    # ------------------------------------------------------------------ the three calls
    def loglikelihood(
        self, requests: Sequence[LoglikelihoodRequest], progress: Progress | None = None
    ) -> list[LoglikelihoodResult]:
        items = loglikelihood_items(self.tokenizer, requests, self.max_length, self.add_bos, self.prefix_token_id)
        results: list[LoglikelihoodResult] = [LoglikelihoodResult(0.0, (), True)] * len(items)
        scored = [i for i, item in enumerate(items) if item.n_targets > 0]
        for i, (token_lp, greedy) in zip(scored, self._score([items[i] for i in scored], progress)):
            results[i] = LoglikelihoodResult(float(sum(token_lp)), token_lp, greedy, items[i].cut)
        if progress and len(scored) < len(items):
            progress(len(items) - len(scored))
        return results

    def rolling_loglikelihood(
        self, requests: Sequence[RollingLoglikelihoodRequest], progress: Progress | None = None
    ) -> list[RollingLoglikelihoodResult]:
        items, owner = [], []
        encoded = encode_many(self.tokenizer, [request.text for request in requests])
        for index, (request, ids) in enumerate(zip(requests, encoded)):
            window = min(request.window, self.max_length)
            stride = min(request.stride or window, window)
            full = [self.prefix_token_id] + ids
            n = len(full) - 1  # tokens to score: all of the text
            start, end = 0, min(window, n)
            while start < n:
                items.append(ScoringItem(tuple(full[max(0, end - window) : end + 1]), end - start))
                owner.append(index)
                start, end = end, min(end + stride, n)
        scored = self._score(items) if items else []
        per_request: list[list[float]] = [[] for _ in requests]
        for index, (token_lp, _) in zip(owner, scored):
            per_request[index].extend(token_lp)
        if progress:
            progress(len(requests))
        return [RollingLoglikelihoodResult(float(sum(lp)), len(lp), tuple(lp)) for lp in per_request]
