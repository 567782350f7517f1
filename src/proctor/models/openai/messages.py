"""Chat messages for an OpenAI-compatible server: a chat prompt as the text proctor's prompt pipeline
carries (``encode_chat``: a marker and the messages as JSON, read back by ``decode_chat``), and images
as ``image_url`` content parts (base64 data URIs) of those messages.

Kept apart from ``openai_compat.py`` (the backend) because it is the shape of a prompt, not the talking
to a server: the backend reads it when it builds a request body and writes it for chat templates and
judges' chat calls.
"""

from __future__ import annotations

import json
from typing import Mapping, Sequence, cast

from proctor.core.images import ImageInput

CHAT_PREFIX = "<|proctor:chat|>"  # a rendered chat prompt: this prefix + the messages as JSON


def encode_chat(messages: Sequence[Mapping[str, object]]) -> str:
    return CHAT_PREFIX + json.dumps(
        [{"role": m["role"], "content": m["content"]} for m in messages], ensure_ascii=False
    )


def decode_chat(prompt: str) -> list[dict[str, object]] | None:
    # what encode_chat wrote: the messages as a JSON list
    return (
        cast("list[dict[str, object]]", json.loads(prompt[len(CHAT_PREFIX) :]))
        if prompt.startswith(CHAT_PREFIX)
        else None
    )


def with_image_parts(messages: Sequence[dict[str, object]], images: Sequence[ImageInput]) -> list[dict[str, object]]:
    """Messages with each ``{"type": "image"}`` placeholder replaced by the next image as an OpenAI
    ``image_url`` content part (a base64 data URI); images left over (a plain-text prompt) go ahead of
    the last user message's text."""
    queue = [{"type": "image_url", "image_url": {"url": image.data_uri()}} for image in images]
    used, out = 0, []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                if isinstance(part, dict) and part.get("type") == "image" and used < len(queue):
                    parts.append(queue[used])
                    used += 1
                else:
                    parts.append(part)
            message = {**message, "content": parts}
        out.append(message)
    if used < len(queue):
        last = max((i for i, m in enumerate(out) if m.get("role") == "user"), default=len(out) - 1)
        content = out[last].get("content")
        text = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        out[last] = {**out[last], "content": queue[used:] + text}
    return out
