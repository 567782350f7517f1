"""A scripted judge model for the AISteer360 metric tests."""

from __future__ import annotations

from typing import Sequence

from proctor.core.model_requests import GenerateResult
from proctor.models.base import Model


class ScriptedJudge(Model):
    """A judge that answers every prompt with ``reply(prompt)`` and records the prompts it saw."""

    name = "scripted-judge"

    def __init__(self, reply) -> None:
        self.reply, self.prompts = reply, []

    @property
    def fingerprint(self) -> dict:
        return {"backend": "scripted", "id": id(self)}

    @property
    def has_chat_template(self) -> bool:
        return True

    def apply_chat_template(self, messages: Sequence[dict]) -> str:
        return "".join(f"<{m['role']}>{m['content']}</{m['role']}>" for m in messages) + "<assistant>"

    def generate(self, requests, progress=None):
        out = []
        for r in requests:
            self.prompts.append(r.prompt)
            out.append(GenerateResult(self.reply(r.prompt), "stop", len(r.prompt), 1))
        return out

    def loglikelihood(self, requests, progress=None):
        raise NotImplementedError

    def rolling_loglikelihood(self, requests, progress=None):
        raise NotImplementedError
