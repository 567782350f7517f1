"""lm-eval's chat-template path (``--apply_chat_template``, ``--fewshot_as_multiturn``,
``--system_instruction``) with the model's own template.

lm-eval builds each context as chat messages and hands them to ``lm.apply_chat_template(messages,
add_generation_prompt=not gen_prefix)``. Requests are built before any model loads (the prepare
phase), so lm-eval's task objects get a *recorder* in place of that function: it returns a marker
holding the messages, and :func:`render_all` turns each marker into the model's text when the
model is known, exactly as lm-eval's ``HFLM.apply_chat_template`` would:
``tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=AGP,
continue_final_message=not AGP)``, retried without system messages when the template rejects them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterable

from proctor.core.errors import ProctorError

if TYPE_CHECKING:
    from lm_eval.api.instance import Instance

    from proctor.models.base import Model

MARKER = "\x1elm-eval chat messages\x1e"  # a record separator: no task text starts with it


def recorder(messages: list[dict], add_generation_prompt: bool = True) -> str:
    """Stands in for ``lm.apply_chat_template`` while lm-eval builds the requests."""
    return MARKER + json.dumps(
        {"messages": messages, "add_generation_prompt": bool(add_generation_prompt)}, ensure_ascii=False
    )


def recorded(text: object) -> dict | None:
    """The messages behind a marker, or None for plain text."""
    if isinstance(text, str) and text.startswith(MARKER):
        return json.loads(text[len(MARKER) :])
    return None


def render(model: Model, messages: list[dict], add_generation_prompt: bool) -> str:
    import jinja2

    def apply(chat: list[dict]) -> str:
        tokenizer = getattr(model, "tokenizer", None)
        if add_generation_prompt:  # the model's own call: tokenize=False, add_generation_prompt=True
            return model.apply_chat_template(chat)
        if tokenizer is None or not hasattr(tokenizer, "apply_chat_template"):
            raise ProctorError(
                f"this lm-eval task continues an assistant turn (gen_prefix) under the chat template, which needs "
                f"the model's tokenizer; model '{getattr(model, 'name', model)}' has none here"
            )
        return tokenizer.apply_chat_template(
            chat, tokenize=False, add_generation_prompt=False, continue_final_message=True
        )

    try:
        return apply(messages)
    except jinja2.exceptions.TemplateError:  # as lm-eval: a template that refuses the system role runs without it
        return apply([m for m in messages if m.get("role") != "system"])


def render_all(model: Model, instances: Iterable[Instance]) -> dict[str, str]:
    """Every instance's recorded context replaced by the model's chat text (each distinct one rendered
    once); returns {marker: text}."""
    done: dict[str, str] = {}
    for instance in instances:
        args = instance.arguments
        if not isinstance(args, tuple) or not args:
            continue
        context = args[0]
        chat = recorded(context)
        if chat is None:
            continue
        if context not in done:
            done[context] = render(model, chat["messages"], chat["add_generation_prompt"])
        instance.arguments = (done[context], *args[1:])
    return done
