"""Prompt rendering helpers with AISteer360's names (``aisteer360.utils.rendering``), for metric and
control files that call them.

A string rendered with a chat template already holds the template's special tokens, so it is
tokenized without adding more; plain text gets the tokenizer's usual special tokens.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import BatchEncoding, PreTrainedTokenizerBase

log = logging.getLogger(__name__)

MODES = ("raw", "chat_completion", "chat_prompt")


def has_chat_template(tokenizer: PreTrainedTokenizerBase) -> bool:
    return getattr(tokenizer, "chat_template", None) is not None


def render_messages(
    tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, str]], *, add_generation_prompt: bool = True
) -> str:
    """Chat messages through the tokenizer's template; without one, their contents joined by blank lines."""
    if not has_chat_template(tokenizer):
        log.warning("render_messages: the tokenizer has no chat template; joining the message contents")
        return "\n\n".join(m["content"] for m in messages)
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)


def render_for_model(
    tokenizer: PreTrainedTokenizerBase,
    *,
    prompt: str | None = None,
    completion: str | None = None,
    mode: str = "chat_completion",
) -> str:
    """``raw``: prompt + completion; ``chat_prompt``: the prompt as a user turn ready for the reply;
    ``chat_completion``: that, followed by the completion. Chat modes fall back to ``raw`` without a template."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    text, tail = prompt or "", completion or ""
    if mode == "raw" or not has_chat_template(tokenizer):
        return text + tail
    head = render_messages(tokenizer, [{"role": "user", "content": text}], add_generation_prompt=True)
    return head if mode == "chat_prompt" else head + tail


def encode_for_model(
    tokenizer: PreTrainedTokenizerBase,
    *,
    prompt: str | None = None,
    completion: str | None = None,
    messages: list[dict[str, str]] | None = None,
    mode: str = "chat_prompt",
    **tokenizer_kwargs: Any,
) -> BatchEncoding:
    """Render (``messages`` first, else ``prompt`` / ``completion`` in ``mode``) and tokenize."""
    if messages is not None:
        text, templated = render_messages(tokenizer, messages), has_chat_template(tokenizer)
    else:
        text = render_for_model(tokenizer, prompt=prompt, completion=completion, mode=mode)
        templated = has_chat_template(tokenizer) and mode != "raw"
    return tokenizer(text, add_special_tokens=not templated, **tokenizer_kwargs)
