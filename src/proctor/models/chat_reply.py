"""``ChatReplyEnd`` from a Hugging Face tokenizer: the first special token the chat template writes after an
assistant's reply, and the model's end-of-sequence tokens (``core/chat_reply.py`` says why it matters)."""

from __future__ import annotations

from typing import Any, Iterable

from proctor.core.chat_reply import ChatReplyEnd

_REPLY = "proctor-reply-marker"  # a reply text no template alters, found again in the rendered conversation


def eos_ids(tokenizer: Any, generation_config: Any) -> list[int]:
    """The tokens that end this model's sequences: the tokenizer's end-of-sequence token and those its
    generation config lists (a chat model's end of turn is often only there: Llama 3, Gemma 2)."""
    ids = {getattr(tokenizer, "eos_token_id", None)}
    config_eos = getattr(generation_config, "eos_token_id", None)
    if isinstance(config_eos, int):
        ids.add(config_eos)
    elif isinstance(config_eos, (list, tuple)):
        ids.update(config_eos)
    return sorted(i for i in ids if isinstance(i, int))


def _special_ids(tokenizer: Any) -> set[int]:
    """The ids of the tokenizer's special tokens: the named ones, and the added ones marked special."""
    ids = set(getattr(tokenizer, "all_special_ids", ()) or ())
    decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
    ids.update(i for i, token in decoder.items() if getattr(token, "special", False))
    return ids


def special_texts(tokenizer: Any) -> tuple[str, ...]:
    """The tokenizer's special tokens as texts, longest first."""
    found = {str(t) for t in tokenizer.convert_ids_to_tokens(sorted(_special_ids(tokenizer)))}
    return tuple(sorted((t for t in found if t.strip()), key=lambda t: (-len(t), t)))


def reply_end(tokenizer: Any, eos_ids: Iterable[int]) -> ChatReplyEnd | None:
    """None where the tokenizer has no template, the template cannot render a user-assistant exchange, or it
    closes a reply with no special token (plain text, a newline): nothing to compare then."""
    if getattr(tokenizer, "chat_template", None) is None:
        return None
    messages = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": _REPLY}]
    try:
        text = tokenizer.apply_chat_template(messages, tokenize=False)
    except Exception:  # a template that refuses this exchange: the audit cannot tell, and says nothing
        return None
    if not isinstance(text, str) or _REPLY not in text:
        return None
    tail = text[text.rindex(_REPLY) + len(_REPLY) :]
    special = _special_ids(tokenizer)
    ids: list[int] = tokenizer(tail, add_special_tokens=False).input_ids if tail else []
    closing = next((i for i in ids if i in special), None)
    if closing is None:
        return None
    names = tokenizer.convert_ids_to_tokens([closing, *sorted(set(eos_ids))])
    return ChatReplyEnd(token=str(names[0]), eos=tuple(str(n) for n in names[1:]))
