"""Conversations for SEA-HELM rows: a dataloader's ready-made chat conversations (HealthBench, ONERULER),
checked as chat messages; proctor builds the others from ``prompts`` + ``prompt_template`` (``prompts.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from proctor.dialects.seahelm.rows import RowList, as_rows
from proctor.dialects.seahelm.task_options import SeaHelmTaskOptions

if TYPE_CHECKING:
    from proctor.dialects.seahelm.dataloaders import AbstractDataloader


def _messages(conversation: object, where: str, source: str | Path | None, index: int) -> list[dict] | None:
    """A ready-made conversation checked as chat messages (``role`` and string ``content`` each)."""
    from proctor.core.errors import TaskDefinitionError

    if conversation is None:
        return None
    if hasattr(conversation, "tolist"):
        conversation = conversation.tolist()
    if not isinstance(conversation, (list, tuple)) or not conversation:
        raise TaskDefinitionError(
            f"{where}: conversation of row {index + 1} is not a non-empty list of messages "
            f"(got {type(conversation).__name__})",
            file=source,
            row=index + 1,
            field="conversations",
        )
    out = []
    for k, message in enumerate(conversation):
        if (
            not isinstance(message, dict)
            or not isinstance(message.get("role"), str)
            or not isinstance(message.get("content"), str)
        ):
            raise TaskDefinitionError(
                f"{where}: message {k} of row {index + 1} needs a string 'role' and 'content' (got {message!r:.80})",
                file=source,
                row=index + 1,
                field=f"conversations[{k}]",
            )
        out.append({"role": message["role"], "content": message["content"]})
    return out


def _row_id(row: dict, index: int) -> str:
    for key in ("id", "question_id"):
        if row.get(key) is not None:
            return str(row[key])
    return str(index)


class ReadyConversations:
    """Mixed into :class:`proctor.dialects.seahelm.task.SeaHelmTask` (uses its ``_plugin_call``, ``task_id``, ``lang``,
    ``config`` and ``options``)."""

    options: SeaHelmTaskOptions
    task_id: str
    lang: str
    config: dict
    _plugin_call: Callable[..., Any]

    def _ready_conversations(self, loader: AbstractDataloader, rows: list[dict], turn: int) -> list | None:
        """Ready-made chat conversations (one message list per row, None where a row has none for ``turn``),
        or None when proctor builds the prompts from ``prompts`` + ``prompt_template``. They come from a
        dataloader that overrides SEA-HELM's ``prepare_conversations_for_inference`` (HealthBench), else
        from rows that carry a ``conversations`` message list and no ``prompts``."""
        from proctor.core.errors import TaskDefinitionError

        hook = getattr(type(loader), "prepare_conversations_for_inference", None)
        source = getattr(type(loader), "__proctor_source__", None) or self.options.config_file
        if hook is not None and not getattr(hook, "__proctor_template__", False):
            loader.dataset = RowList(rows)
            got = self._plugin_call(
                loader.prepare_conversations_for_inference,
                "prepare_conversations_for_inference",
                turn,
                fewshot_as_multiturn=True,
            )
            got = as_rows(got) if not isinstance(got, list) else got
            if len(got) != len(rows):
                raise TaskDefinitionError(
                    f"{type(loader).__name__}.prepare_conversations_for_inference gave {len(got)} conversations "
                    f"for {len(rows)} rows ({self.task_id}/{self.lang}, turn {turn})",
                    file=source,
                    field="conversations",
                )
            where = f"{type(loader).__name__}.prepare_conversations_for_inference"
            return [_messages(c, where, source, i) for i, c in enumerate(got)]
        if turn != 1 or not any(not r.get("prompts") and r.get("conversations") is not None for r in rows):
            return None
        data = self.options.data or self.config["languages"][self.lang].get("filepath")
        return [
            _messages(r["conversations"], "row", data, i)
            if not r.get("prompts") and r.get("conversations") is not None
            else None
            for i, r in enumerate(rows)
        ]
