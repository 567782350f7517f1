"""What the audit reads of an lm-eval task: under the chat template, each prompt as its messages' contents; and
the rows of a task whose choices are contexts.

Under ``--chat-template on`` lm-eval's requests are built before a model loads, so each context is a marker
holding the chat messages as JSON (``chat.recorder``), which the run renders with the model's template later.
Read as text, JSON's escapes ('\\n', '\\"') are what the audit would see in every prompt: escapes written out,
no option at a line's start, a field's quoted text missing. The audit reads the messages' contents joined by
line breaks instead (``chat_contents``), as it reads a native task's chat prompt (``Prompt.plain_text``).

A task whose choices are contexts (``multiple_input``: Winogrande's partial
scoring). lm-eval scores one continuation after each choice's context, and its gold is ``doc_to_text``'s index;
the samples the runner keeps carry the first context as the prompt and the one continuation once per choice, with
a gold that is a placeholder (lm-eval's own ``process_results`` scores). Read as they are, every row would list
the same choice twice with the first one right. The audit reads the row as asked: what the contexts share is the
question, with a blank where they differ and the shared continuation after it (Winogrande's own sentence, "... because
_ was too big."); the parts that differ are its choices; the gold is the real one. (The continuation alone is no
prompt: Winogrande-style rows often end alike, " was too big.", while what they ask is in the contexts.)"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Sequence

from proctor.dialects.lmeval.chat import recorded
from proctor.prompts.builder import PreparedSample, Prompt


def _recorded_messages(text: object) -> list[tuple[str, str]] | None:
    """The (role, content) pairs a recorded chat context holds; None for any other text."""
    chat = recorded(text)
    messages = chat.get("messages") if isinstance(chat, dict) else None
    if not isinstance(messages, list):
        return None
    return [
        (str(m.get("role")), m["content"])
        for m in messages
        if isinstance(m, dict) and isinstance(m.get("content"), str)
    ]


def _as_asked(prompt: Prompt) -> Prompt | None:
    """``prompt`` with its recorded chat context read as the messages it holds: the context is the prompt's text,
    or (the run's chat setting wraps it) one message's content; None where it holds none."""
    if prompt.messages is None:
        found = _recorded_messages(prompt.text)
        return None if found is None else dataclasses.replace(prompt, text=None, messages=tuple(found))
    expanded: list[tuple[str, str]] = []
    for role, content in prompt.messages:
        found = _recorded_messages(content)
        expanded.extend([(role, content)] if found is None else found)
    return dataclasses.replace(prompt, messages=tuple(expanded)) if expanded != list(prompt.messages) else None


def chat_contents(samples: Sequence[PreparedSample]) -> Sequence[PreparedSample] | None:
    """``samples`` with each recorded chat context (``chat.recorder``'s marker) read as its messages, whose
    contents the rules read joined by line breaks (``Prompt.plain_text``); None where no prompt holds one (every
    run without the chat template)."""
    viewed = []
    changed = False
    for sample in samples:
        prompt = _as_asked(sample.prompt)
        viewed.append(sample if prompt is None else dataclasses.replace(sample, prompt=prompt))
        changed = changed or prompt is not None
    return viewed if changed else None


def contexts_as_choices(
    task: Any, docs: Sequence[tuple[int, Any]], samples: Sequence[PreparedSample]
) -> Sequence[PreparedSample]:
    """``samples`` as the audit reads them: unchanged unless ``task`` scores contexts (``multiple_input``)."""
    if not getattr(task, "multiple_input", False) or len(docs) != len(samples):
        return samples
    viewed = []
    for (_, doc), sample in zip(docs, samples):
        try:
            contexts = [str(c) for c in task.doc_to_choice(doc)]
            gold = task.doc_to_text(doc)
            continuation = task.doc_to_target(doc)
        except Exception:  # noqa: BLE001 - a document lm-eval cannot read is reported where it builds requests
            return samples
        if not isinstance(gold, int) or not 0 <= gold < len(contexts):
            return samples
        cut = _shared_words(contexts)
        delimiter = str(getattr(task.config, "target_delimiter", " ") or "")
        viewed.append(
            dataclasses.replace(
                sample,
                prompt=Prompt(text=f"{contexts[0][:cut]}{BLANK}{delimiter}{continuation}"),
                choices=tuple(c[cut:] for c in contexts),
                gold=(gold,),
            )
        )
    return viewed


BLANK = "_"  # where the row's options go, as Winogrande writes its sentences


def _shared_words(contexts: Sequence[str]) -> int:
    """How much every context begins with alike, ending at a space (options "trophy" and "trunk" share "tr", which
    belongs to the options); the whole of the shorter one when one context is the others' beginning."""
    if len(contexts) < 2:
        return 0
    shared = os.path.commonprefix(list(contexts))
    at_a_word = all(len(c) == len(shared) or c[len(shared)].isspace() for c in contexts)
    if shared and not shared[-1].isspace() and not at_a_word:
        return shared.rfind(" ") + 1
    return len(shared)
