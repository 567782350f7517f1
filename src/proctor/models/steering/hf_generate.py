"""Batched generation on a plain transformers model and tokenizer (no proctor backend in between).

Used for raw model/tokenizer pairs and by steering pipelines, which need hooks and logits
processors around ``model.generate``. Prompts are rendered with the tokenizer's chat template
when it has one, tokenized without special tokens, left-padded, and only new tokens are decoded.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Sequence

Prompt = str | Sequence[dict]
DEFAULT_MAX_NEW_TOKENS = 64


@dataclass(frozen=True)
class Generated:
    text: str
    finish_reason: str  # "stop" (end of sequence or a stop string) or "length"
    prompt_tokens: int
    completion_tokens: int
    rendered_prompt: str


def render(prompt: Prompt, tokenizer: Any, use_chat: bool | None = None) -> str:
    """Prompt text as the model sees it: chat template when the tokenizer has one, else as is."""
    has_template = getattr(tokenizer, "chat_template", None) is not None
    if use_chat is None:
        use_chat = has_template
    if isinstance(prompt, str):
        if not use_chat:
            return prompt
        messages = [{"role": "user", "content": prompt}]
    else:
        messages = [dict(m) for m in prompt]
        if not use_chat:
            return "\n\n".join(m["content"] for m in messages)
    if not has_template:
        raise ValueError("chat messages were given but the tokenizer has no chat template")
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def eos_ids(model: Any, tokenizer: Any) -> list[int]:
    ids = {tokenizer.eos_token_id}
    config_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(config_eos, int):
        ids.add(config_eos)
    elif isinstance(config_eos, (list, tuple)):
        ids.update(config_eos)
    return sorted(i for i in ids if i is not None)


def split_gen_kwargs(gen_kwargs: dict | None) -> tuple[dict, int, list[str]]:
    """HF generate kwargs (greedy unless asked), the sampling seed, and stop strings."""
    kwargs = dict(gen_kwargs or {})
    seed = int(kwargs.pop("seed", 0))
    stop = kwargs.pop("stop", None) or []
    stop = [stop] if isinstance(stop, str) else list(stop)
    kwargs.setdefault("max_new_tokens", DEFAULT_MAX_NEW_TOKENS)
    if not kwargs.get("do_sample"):
        kwargs["do_sample"] = False
        for key in ("temperature", "top_p", "top_k"):
            kwargs[key] = None
    return kwargs, seed, stop


def hf_generate(
    model: Any,
    tokenizer: Any,
    rendered: Sequence[str],
    gen_kwargs: dict | None = None,
    *,
    batch_size: int = 8,
    around_batch: Callable[[list[int]], ContextManager[list | None]] | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Generated]:
    """Generate for already-rendered prompts, ``batch_size`` at a time, results in input order.

    ``around_batch(indices)`` may return a context manager (hooks on, per-row settings) that
    yields a list of logits processors for that batch.
    """
    import torch

    kwargs, seed, stop = split_gen_kwargs(gen_kwargs)
    max_new = int(kwargs["max_new_tokens"])
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    pad = tokenizer.pad_token_id
    eos = eos_ids(model, tokenizer)
    encoded = [tokenizer(text, add_special_tokens=False).input_ids for text in rendered]
    device = next(model.parameters()).device
    out: list[Generated | None] = [None] * len(rendered)
    size = max(1, int(batch_size))
    with torch.inference_mode():
        for start in range(0, len(encoded), size):
            batch = list(range(start, min(start + size, len(encoded))))
            width = max(len(encoded[i]) for i in batch)
            input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for r, i in enumerate(batch):
                ids = encoded[i]
                if ids:
                    input_ids[r, width - len(ids):] = torch.tensor(ids)
                    mask[r, width - len(ids):] = 1
            context = around_batch(batch) if around_batch else contextlib.nullcontext(None)
            with context as processors:
                call = dict(kwargs, pad_token_id=pad, eos_token_id=eos)
                if processors:
                    from transformers import LogitsProcessorList

                    call["logits_processor"] = LogitsProcessorList(processors)
                if stop:
                    call.update(stop_strings=stop, tokenizer=tokenizer)
                if call.get("do_sample"):
                    torch.manual_seed(seed)
                output = model.generate(input_ids=input_ids.to(device), attention_mask=mask.to(device), **call)
            for r, i in enumerate(batch):
                out[i] = _finish(output[r, width:].tolist(), tokenizer, eos, pad, max_new, stop, len(encoded[i]), rendered[i])
            if progress:
                progress(len(batch))
    return out  # type: ignore[return-value]


def _finish(new: list[int], tokenizer: Any, eos: list[int], pad: int, max_new: int, stop: list[str], n_prompt: int, rendered: str) -> Generated:
    ended = False
    n_generated = len(new)
    for position, token in enumerate(new):
        if token in eos:
            new, n_generated, ended = new[:position], position + 1, True
            break
    while new and new[-1] == pad and pad not in eos:
        new.pop()
        n_generated -= 1
    text = tokenizer.decode(new, skip_special_tokens=True)
    cut = min((text.find(s) for s in stop if s in text), default=-1)
    if cut >= 0:
        return Generated(text[:cut], "stop", n_prompt, n_generated, rendered)
    reason = "stop" if ended or n_generated < max_new else "length"
    return Generated(text, reason, n_prompt, n_generated, rendered)
