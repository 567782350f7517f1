"""transformers' ``generate`` keywords for a request's decoding settings: one mapping for the text and the
vision backends, so the two decode a request the same way (sampling seeded per request, greedy with
the model's own sampling defaults switched off)."""

from __future__ import annotations

from typing import Any

from proctor.core.model_requests import GenerateRequest


def decoding_kwargs(request: GenerateRequest, pad_token_id: int | None, eos_ids: list[int]) -> dict[str, Any]:
    """The keywords for ``model.generate`` (seeds torch's generator for a sampled request, as it is about to run)."""
    kwargs: dict[str, Any] = dict(
        max_new_tokens=request.max_tokens,
        pad_token_id=pad_token_id,
        eos_token_id=eos_ids,
        do_sample=request.temperature > 0,
    )
    if request.temperature > 0:
        import torch

        torch.manual_seed(request.seed)
        kwargs.update(temperature=request.temperature, top_p=request.top_p)
        if request.top_k is not None:
            kwargs.update(top_k=request.top_k)
    else:
        kwargs.update(temperature=None, top_p=None, top_k=None)  # the model's generation_config must not sample
    if request.num_beams > 1:
        kwargs.update(num_beams=request.num_beams, length_penalty=request.length_penalty, early_stopping=True)
    if request.no_repeat_ngram_size:
        kwargs.update(no_repeat_ngram_size=request.no_repeat_ngram_size)
    if request.min_tokens:
        kwargs.update(min_new_tokens=request.min_tokens)
    if request.repetition_penalty != 1.0:
        kwargs.update(repetition_penalty=request.repetition_penalty)
    return kwargs
