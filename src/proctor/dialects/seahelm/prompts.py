"""SEA-HELM prompts: few-shot user/assistant turns, the preamble, multi-turn carry-forward, the
plain base-model template, and stripping a reasoning model's thinking."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from proctor.models.base import Model

BASE_STOP = "\n\n"  # constants.yaml few_shot_stop_tokens
END_THINK = "</think>"


def fewshot_turns(template: dict, examples: Sequence[dict]) -> list[tuple[str, str]]:
    """Each example: user = task_template(example prompt), assistant = answer_template(example)."""
    tag = template.get("answer_tag", "")
    turns = []
    for example in examples:
        values = (example.get("prompts") or [{}])[0]
        turns.append(("user", template["task_template"].format(**values, answer_tag=tag)))
        fields = {k: v for k, v in example.items() if k != "answer_tag"}
        turns.append(
            ("assistant", template.get("answer_template", "").format(**{**fields, **values, "answer_tag": tag}))
        )
    return turns


def with_preamble(template: dict, content: str) -> str:
    preamble = template.get("preamble") or ""
    return (preamble.format(answer_tag=template.get("answer_tag", "")) + "\n\n" + content).strip()


def conversation(template: dict, row: dict, turn: int, examples: Sequence[dict], answers: Sequence[str]) -> list[dict]:
    """Messages for ``turn`` (1-based): few-shot turns, then each user turn up to ``turn`` with the
    model's earlier answers in between; the preamble opens the first message."""
    tag = template.get("answer_tag", "")
    messages = [{"role": r, "content": c} for r, c in fewshot_turns(template, examples)]
    prompts = row.get("prompts") or [{}]
    for t in range(turn):
        values = {**prompts[t], "answer_tag": tag} if "answer_tag" not in prompts[t] else dict(prompts[t])
        messages.append({"role": "user", "content": template["task_template"].format(**values)})
        if t < turn - 1:
            messages.append({"role": "assistant", "content": answers[t] if t < len(answers) else ""})
    messages[0] = {**messages[0], "content": with_preamble(template, messages[0]["content"])}
    return messages


def render_base(messages: Sequence[dict]) -> str:
    """SEA-HELM's base-model template: trimmed contents joined by a blank line, ending in one."""
    return "\n\n".join(str(m["content"]).strip() for m in messages) + "\n\n"


def render(model: Model, messages: Sequence[dict], is_base: bool) -> str:
    if is_base:
        return render_base(messages)
    return model.apply_chat_template(list(messages))


def strip_thinking(text: str, end_think: str = END_THINK) -> str:
    """The answer after the last end-of-thinking marker (the whole text when there is none)."""
    if end_think and end_think in text:
        return text.rsplit(end_think, 1)[1].strip()
    return text
