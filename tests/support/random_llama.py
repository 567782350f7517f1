"""Random-initialised Llama models saved with a tokenizer: what the tests and the CPU benchmarks
run on (offline, seconds to build). ``TINY`` is the test suite's shared model."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

# 2 layers, hidden 64: the forward pass costs next to nothing beside the 49,152-wide vocabulary head
TINY = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=512,
    tie_word_embeddings=True,
)


def save_random_llama(
    folder: str | Path,
    tokenizer,
    *,
    seed: int = 0,
    embedding_scale: float | None = None,
    adjust: Callable[[Any], None] | None = None,
    **config: Any,
) -> Path:
    """A ``LlamaForCausalLM`` with ``config`` (sizes etc.; vocabulary and special tokens from
    ``tokenizer``), initialised after ``torch.manual_seed(seed)``, its embeddings multiplied by
    ``embedding_scale`` and then ``adjust(model)`` applied (both without gradients); saved with the
    tokenizer into ``folder``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tokenizer),
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            **config,
        )
    )
    with torch.no_grad():
        if embedding_scale is not None:
            model.model.embed_tokens.weight.mul_(embedding_scale)
        if adjust is not None:
            adjust(model)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return Path(folder)
