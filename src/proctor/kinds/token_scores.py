"""Token-level log-probs on a local Hugging Face model, for task code that works on token ids
(GLM-130B's ``evaluation`` stand-in, probsem's CogSci2023 scoring).

proctor's request calls take text; these tasks fix the exact token sequence themselves, so they
need the model's torch module and tokenizer (proctor's ``hf`` backend, or any model object that
has ``model``, ``tokenizer`` and ``device`` attributes of that kind).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from proctor.core.errors import ProctorError

if TYPE_CHECKING:
    import torch


def require_local(model: object, what: str) -> torch.nn.Module:
    """The model's torch module; a clear error for backends that have none (HTTP servers, vLLM)."""
    module = getattr(model, "model", None)
    if module is None or not callable(module) or getattr(model, "tokenizer", None) is None:
        raise ProctorError(
            f"{what} works on token ids and needs a local Hugging Face model (--model hf:... or a model folder); "
            f"model '{getattr(model, 'name', type(model).__name__)}' has no torch module and tokenizer"
        )
    return module


def max_positions(model: Any) -> int:
    given = getattr(model, "max_length", None)
    if given:
        return int(given)
    return int(getattr(getattr(model.model, "config", None), "max_position_embeddings", 2048))


def target_logprobs(
    model: object, sequences: Sequence[Sequence[int]], n_targets: Sequence[int], what: str = "this task"
) -> list[list[float]]:
    """Per sequence, the log-probs of its last ``n`` tokens, each given every token before it
    (sequences longer than the model's context keep their last tokens). One forward pass each, in float32."""
    import torch

    module = require_local(model, what)
    device = getattr(model, "device", "cpu")
    limit = max_positions(model)
    out: list[list[float]] = []
    with torch.inference_mode():
        for tokens, n in zip(sequences, n_targets):
            tokens = list(tokens)[-limit:]
            n = min(int(n), len(tokens) - 1)
            if n <= 0:
                out.append([])
                continue
            ids = torch.tensor([tokens], device=device)
            logits = module(input_ids=ids).logits[0].float()
            logprobs = torch.log_softmax(logits[-n - 1 : -1], dim=-1)
            targets = ids[0, -n:]
            out.append(logprobs[torch.arange(n, device=device), targets].tolist())
    return out


def next_token_logits(
    model: object, sequences: Sequence[Sequence[int]], what: str = "this task", batch: int = 32
) -> torch.Tensor:
    """The logits for the token after each sequence (a [len(sequences), vocab] float tensor). Sequences of
    the same length (the beams of one item) go through the model together, without padding."""
    import torch

    module = require_local(model, what)
    device = getattr(model, "device", "cpu")
    limit = max_positions(model)
    rows = [list(tokens)[-limit:] for tokens in sequences]
    by_length: dict[int, list[int]] = {}
    for index, row in enumerate(rows):
        by_length.setdefault(len(row), []).append(index)
    out: dict[int, torch.Tensor] = {}  # by the sequence's index
    with torch.inference_mode():
        for indices in by_length.values():
            for start in range(0, len(indices), batch):
                chunk = indices[start : start + batch]
                ids = torch.tensor([rows[i] for i in chunk], device=device)
                logits = module(input_ids=ids).logits[:, -1].float()
                for i, row_logits in zip(chunk, logits):
                    out[i] = row_logits
    return torch.stack([out[i] for i in range(len(rows))])
