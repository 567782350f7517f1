"""Rules that need the loaded model: what no task file tells before the model is there.

They run once the model has loaded, before any request is sent (``stage.audit_with_model``, called by the
engine as it renders a task's prompts for the model); ``proctor validate`` loads no model and does not run them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Protocol

from proctor.core.audit import AuditRule, Hit
from proctor.core.chat_reply import ChatReplyEnd
from proctor.core.task import Task
from proctor.core.task_spec import TaskSpec


class AuditedModel(Protocol):
    """What the rules ask of the model (``proctor.models.base.Model``; a plug-in's model may lack
    ``chat_reply_end``, which then says nothing)."""

    name: str


@dataclass(frozen=True)
class ModelSubject:
    """A prepared task with the model it is about to run on."""

    task: Task
    use_chat: bool  # prompts go through the model's chat template (the task file's chat, or --chat-template)
    model: AuditedModel

    @property
    def spec(self) -> TaskSpec:
        return self.task.spec

    @property
    def file(self) -> str | None:
        return str(self.task.file) if self.task.file else None

    def line(self, key: str) -> int | None:
        return self.task.lines.get(key, self.task.line)


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
        yield Hit(message, file=subject.file, line=subject.line("chat"), field="chat")
    else:
        yield Hit(message, file=subject.file, field="--chat-template")


RULES: tuple[AuditRule, ...] = (
    AuditRule(
        "chat.base-model",
        "warning",
        "The chat template closes a reply with a token the model does not end sequences with: a base model's "
        "tokenizer carrying a chat model's template, which the model was not trained on.",
        _chat_on_base_model,
        stage="model",
    ),
)
