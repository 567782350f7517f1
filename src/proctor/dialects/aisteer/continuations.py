"""Log-probabilities of continuations after already-rendered prompts, on any use case target.

- a proctor ``Model`` or an executor: ``LoglikelihoodRequest``s through it (``session.py``: run
  store, cache and progress apply, as for generation);
- a ``SteeringPipeline``: the pipeline's model with every control applied
  (``forward_steered``), each prompt with its own runtime arguments;
- a plain transformers model with its tokenizer.

The prompts are scored exactly as generation saw them (``Generated.rendered_prompt``), without
extra special tokens on the transformers paths (as their generation tokenizes,
``models/steering/generation.py``) and with the backend's own rule on the engine path (as its ``generate`` does).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from proctor.models.steering.pipeline import RuntimeRow


def continuation_logprobs(
    target: object,
    tokenizer: PreTrainedTokenizerBase | None,
    pairs: Sequence[tuple[str, str]],
    runtime: Sequence[RuntimeRow] | None = None,
) -> list[float]:
    """log P(continuation | prompt) for every ``(prompt, continuation)``; ``runtime[i]`` goes with ``pairs[i]``."""
    from proctor.dialects.aisteer.session import as_executor
    from proctor.models.steering.pipeline import SteeringPipeline

    if not pairs:
        return []
    if isinstance(target, SteeringPipeline):
        from proctor.models.steering.steered_model import engine_model

        steered = engine_model(target, runtime)
        if steered is not None:  # through the pipeline's executor: the run store answers what it holds
            return continuation_logprobs(steered, tokenizer, pairs)
        rows = list(runtime) if runtime is not None else [{} for _ in pairs]
        groups: dict[str, list[int]] = {}
        for index, row in enumerate(rows):  # one steered forward setting per distinct runtime row
            groups.setdefault(json.dumps(row, sort_keys=True, default=repr), []).append(index)
        out: list[float] = [0.0] * len(pairs)
        for indices in groups.values():
            with target.forward_steered(rows[indices[0]]) as model:
                scores = _transformers_logprobs(model, target.tokenizer, [pairs[i] for i in indices])
            for i, score in zip(indices, scores):
                out[i] = score
        return out
    executor = as_executor(target)
    if executor is not None:
        from proctor.core.model_requests import LoglikelihoodRequest

        requests = [LoglikelihoodRequest(prompt, continuation, move_whitespace=False) for prompt, continuation in pairs]
        return [r.logprob for r in executor.run("loglikelihood", requests)]
    if tokenizer is None:
        raise ValueError("a plain transformers model needs its tokenizer")
    if not callable(target) or not callable(getattr(target, "parameters", None)):
        raise TypeError(
            f"continuation log-probabilities need the model's forward pass (a proctor model, a SteeringPipeline or a "
            f"torch module); {type(target).__name__} has none"
        )
    return _transformers_logprobs(target, tokenizer, pairs)


def _transformers_logprobs(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, pairs: Sequence[tuple[str, str]]
) -> list[float]:
    """One forward per prompt when every continuation is one token after it; else one per pair."""
    import torch

    device = next(model.parameters()).device
    by_prompt: dict[str, list[int]] = {}
    for index, (prompt, _) in enumerate(pairs):
        by_prompt.setdefault(prompt, []).append(index)
    out: list[float] = [0.0] * len(pairs)

    def forward(ids: list[int]) -> torch.Tensor:
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([ids], device=device)).logits[0].float()
        return torch.log_softmax(logits, dim=-1)

    for prompt, indices in by_prompt.items():
        context = tokenizer(prompt, add_special_tokens=False).input_ids
        joint = [tokenizer(prompt + pairs[i][1], add_special_tokens=False).input_ids for i in indices]
        single = all(len(ids) == len(context) + 1 and ids[: len(context)] == context for ids in joint)
        if single and context:
            logprobs = forward(context)[-1]
            for i, ids in zip(indices, joint):
                out[i] = float(logprobs[ids[-1]])
            continue
        if not context:
            raise ValueError("cannot score a continuation after an empty prompt")
        for i, ids in zip(indices, joint):
            if ids[: len(context)] != context or len(ids) <= len(context):  # the joint encoding moved the boundary
                ids = context + tokenizer(pairs[i][1], add_special_tokens=False).input_ids
            logprobs = forward(ids)
            out[i] = float(sum(logprobs[t - 1, ids[t]] for t in range(len(context), len(ids))))
    return out
