"""Rules that need the loaded model: what no task file tells before the model is there.

They run once the model has loaded, before any request is sent (``stage.audit_with_model``, called by the
engine as it renders a task's prompts for the model); ``proctor validate`` loads no model and does not run them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Protocol, Sequence

from proctor.audit.subject import OfTask
from proctor.core.audit import AuditRule, Hit
from proctor.core.chat_reply import ChatReplyEnd
from proctor.core.task import Task
from proctor.prompts.builder import PreparedSample


class AuditedModel(Protocol):
    """What the rules ask of the model (``proctor.models.base.Model``; a plug-in's model may lack
    ``chat_reply_end``, which then says nothing)."""

    name: str


@dataclass(frozen=True)
class ModelSubject(OfTask):
    """A prepared task with the model it is about to run on."""

    task: Task
    use_chat: bool  # prompts go through the model's chat template (the task file's chat, or --chat-template)
    model: AuditedModel
    samples: Sequence[PreparedSample] = ()


def _chat_on_base_model(subject: ModelSubject) -> Iterator[Hit]:
    if not subject.use_chat:
        return
    ask = getattr(subject.model, "chat_reply_end", None)  # a plug-in's model need not derive from Model
    end = ask() if callable(ask) else None
    if not isinstance(end, ChatReplyEnd) or end.ends_sequence:
        return
    eos = ", ".join(f"'{token}'" for token in end.eos) or "none"
    message = (
        f"model '{subject.model.name}': its chat template closes a reply with '{end.token}', which the model's "
        f"configuration does not end a sequence with (its end-of-sequence tokens: {eos}). A base model's "
        "tokenizer often ships its chat sibling's template: the model was not trained on it, and its generations "
        "do not stop at the end of a reply. Run it without the chat template, or silence this rule for a chat "
        "model whose configuration lacks its end of turn"
    )
    chat = subject.spec.chat
    if chat is not None and chat.enabled:  # the task file asked for the template
        yield subject.at_line("chat", message)
    else:
        yield Hit(message, file=subject.file, field="--chat-template")


def _delimiter_after_reply_header(subject: ModelSubject) -> Iterator[Hit]:
    """A multiple-choice task under the chat template, whose reply header ends with a line break
    ('<|im_start|>assistant\\n'), with a target_delimiter that starts with a space: each choice is scored as a
    reply starting with that space, which no reply does (lm-eval drops the delimiter under a chat template)."""
    spec = subject.spec
    delimiter = spec.target_delimiter
    if not subject.use_chat or spec.kind != "multiple_choice" or not delimiter[:1].isspace():
        return
    if spec.handler is not None or spec.task_class is not None:
        return  # a dialect's handler builds its own requests (lm-eval's drops the delimiter itself)
    render = getattr(subject.model, "apply_chat_template", None)
    try:
        header = render([{"role": "user", "content": "?"}]) if callable(render) else None
    except Exception:  # noqa: BLE001 - a model without a template renders none: nothing to compare
        return
    if not isinstance(header, str) or not header.endswith("\n"):
        return  # a reply that follows the header on its line ('[/INST]'): a space starts it, as in plain text
    message = (
        f"the prompts go through the chat template of model '{subject.model.name}', whose reply starts on a new "
        f"line, and target_delimiter is {delimiter!r}: each choice is scored as a reply starting with "
        f"{delimiter!r} ({delimiter + 'Paris'!r}), which no reply does; set target_delimiter: \"\" (lm-eval "
        "drops it under a chat template)"
    )
    # the default delimiter is on no line of the task file: the chat setting's line is named then
    key = "target_delimiter" if "target_delimiter" in subject.task.lines else "chat"
    yield Hit(message, file=subject.file, line=subject.line(key), field="target_delimiter")


def _special_tokens_in_rows(subject: ModelSubject) -> Iterator[Hit]:
    """A row's text holding the tokenizer's special tokens ('<|endoftext|>', '<|im_end|>'): read as control tokens
    (an end of text, an end of turn), so the model is shown another prompt than the data. A token in every
    prompt is the template's own (a chat format written out by hand) and is left alone."""
    ask = getattr(subject.model, "special_tokens", None)
    tokens = tuple(ask()) if callable(ask) else ()
    if not tokens or not subject.samples:
        return
    prompts = [s.prompt.plain_text for s in subject.samples]
    answers = ["\x00".join((*s.choices, *s.references)) for s in subject.samples]
    joined, joined_answers = "\x01".join(prompts), "\x01".join(answers)
    for token in tokens:
        if token in joined_answers:
            row = next(i for i, a in enumerate(answers) if token in a)
            field = "choices" if subject.samples[row].choices else "target"
        elif token in joined and not all(token in p for p in prompts):
            row, field = next(i for i, p in enumerate(prompts) if token in p), "prompt"
        else:
            continue
        sample = subject.samples[row].sample
        yield Hit(
            f"the {field} holds {token!r}, one of the special tokens of model '{subject.model.name}': its tokenizer "
            "reads it as a control token (an end of text or of a turn), not as these characters, so the model is shown "
            "another text than the data's",
            file=sample.file or subject.file,
            row=sample.row,
            field=field,
            sample=sample.id,
        )
        return


def _flat(text: str) -> str:
    return " ".join(text.split())


def _dropped_messages(subject: ModelSubject) -> Iterator[Hit]:
    """A chat template that leaves messages out of the text it renders (one that skips the system role, one that
    renders only the last turn): the system prompt or the few-shot turns the run records as given never reach the
    model. The first prompt of two messages or more is rendered and each message's text looked for in it."""
    render = getattr(subject.model, "apply_chat_template", None)
    first = next((s for s in subject.samples if s.prompt.messages and len(s.prompt.messages) >= 2), None)
    if not subject.use_chat or not callable(render) or first is None:
        return
    try:
        text = render(first.prompt.chat_messages())
    except Exception:  # noqa: BLE001 - a template that fails on these messages fails when the run renders them
        return
    if not isinstance(text, str):
        return
    shown = _flat(text)
    messages = first.prompt.messages or ()
    missing = [
        (i, role) for i, (role, content) in enumerate(messages) if _flat(content) and _flat(content) not in shown
    ]
    if not missing:
        return
    roles = [role for _, role in missing]
    what = "the system message" if roles == ["system"] else f"{len(missing)} of the {len(messages)} messages"
    example = _flat(messages[missing[0][0]][1])[:60]
    sample = first.sample
    yield Hit(
        f"the chat template of model '{subject.model.name}' leaves out {what} ({', '.join(roles)}; "
        f"{example!r}...): the model never sees them, while the run records them as given (a system prompt, "
        "few-shot turns); run without them, or with a template that renders every message",
        file=sample.file or subject.file,
        row=sample.row,
        field="system_prompt" if roles == ["system"] else "fewshot",
        sample=sample.id,
    )


def _window_past_the_model(subject: ModelSubject) -> Iterator[Hit]:
    """A perplexity window longer than the model's: the backend scores in windows of its own length (the most it
    can read at once), so the recorded window is not the one the numbers come from."""
    spec = subject.spec
    longest = getattr(subject.model, "max_length", None)
    if spec.kind != "perplexity" or spec.perplexity is None or not isinstance(longest, int):
        return
    named = "window" in spec.perplexity.model_fields_set and "perplexity" in subject.task.lines  # not the default
    if named and spec.perplexity.window > longest:
        yield subject.at_line(
            "perplexity",
            f"perplexity.window is {spec.perplexity.window} tokens, more than model '{subject.model.name}' reads "
            f"at once ({longest}): texts are scored in windows of {longest} tokens, and a text longer than that "
            "gets the numbers of that window, not of the one the task names; give a window of at most "
            f"{longest}",
            "perplexity.window",
        )


RULES: tuple[AuditRule, ...] = (
    AuditRule(
        "chat.base-model",
        "warning",
        "The chat template closes a reply with a token the model does not end sequences with: a base model's "
        "tokenizer carrying a chat model's template, which the model was not trained on.",
        _chat_on_base_model,
        stage="model",
    ),
    AuditRule(
        "chat.delimiter",
        "warning",
        "Once the model has loaded: a multiple-choice task under a chat template whose reply starts on a new line "
        "keeps a target_delimiter that starts with a space, so each choice is scored as a reply starting with it.",
        _delimiter_after_reply_header,
        stage="model",
    ),
    AuditRule(
        "chat.drops-messages",
        "warning",
        "Once the model has loaded: its chat template leaves messages out of the text (a system message, earlier "
        "turns), so a system prompt or few-shot turns the run records as given never reach the model.",
        _dropped_messages,
        stage="model",
    ),
    AuditRule(
        "perplexity.window-capped",
        "warning",
        "Once the model has loaded: a perplexity task's window is longer than the model's, which scores in windows "
        "of its own length instead.",
        _window_past_the_model,
        stage="model",
    ),
    AuditRule(
        "text.special-tokens",
        "warning",
        "Once the model has loaded: a row's prompt, choices or references hold one of its tokenizer's special tokens "
        "('<|endoftext|>'), which the tokenizer reads as a control token, not as text.",
        _special_tokens_in_rows,
        stage="model",
    ),
)
