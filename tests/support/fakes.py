"""A deterministic model without torch: answers are a pure function of the request.

It counts its calls (and can log them to a file, one line per call, written before it answers)
so tests can check how much work a resumed run redoes.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Sequence

from proctor.core.model_requests import (
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    RollingLoglikelihoodRequest,
    RollingLoglikelihoodResult,
)
from proctor.models.base import Model


def _unit(*parts: object) -> float:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class FakeModel(Model):
    def __init__(
        self,
        name: str = "fake",
        *,
        batch_size: int = 4,
        salt: str = "",
        log_file: str | Path | None = None,
        prefer_gold: float = 0.0,
    ) -> None:
        self.name = name
        self.batch_size = batch_size
        self.salt = salt
        self.log_file = Path(log_file) if log_file else None
        self.prefer_gold = prefer_gold  # boost for continuations containing '*' (planted skill)
        self.calls: list[tuple[str, int]] = []

    @property
    def fingerprint(self) -> dict:
        return {"backend": "fake", "model": self.name, "salt": self.salt, "prefer_gold": self.prefer_gold}

    def _log(self, kind: str, n: int) -> None:
        self.calls.append((kind, n))
        if self.log_file is not None:
            with self.log_file.open("a") as handle:
                handle.write(f"{kind} {n}\n")
                handle.flush()
                os.fsync(handle.fileno())

    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest], progress=None) -> list[LoglikelihoodResult]:
        self._log("loglikelihood", len(requests))
        out = []
        for r in requests:
            n = max(1, len(r.continuation.split()))
            tokens = [-5.0 * _unit(self.salt, r.context, r.continuation, i) for i in range(n)]
            # the planted skill: every other continuation loses prefer_gold on its first token (a log-prob stays at
            # most 0, and the result's log-prob stays its tokens' sum, as every backend's must)
            if not r.continuation.strip().startswith("*"):
                tokens[0] -= self.prefer_gold
            out.append(LoglikelihoodResult(sum(tokens), tuple(tokens), _unit(self.salt, r.continuation) > 0.5))
        if progress:
            progress(len(requests))
        return out

    def generate(self, requests: Sequence[GenerateRequest], progress=None) -> list[GenerateResult]:
        self._log("generate", len(requests))
        words = ["paris", "blue", "seven", "water", "oxygen", "cat"]
        out = [
            GenerateResult(words[int(_unit(self.salt, r.prompt, r.max_tokens) * len(words))], "stop", len(r.prompt), 1)
            for r in requests
        ]
        if progress:
            progress(len(requests))
        return out

    def rolling_loglikelihood(
        self, requests: Sequence[RollingLoglikelihoodRequest], progress=None
    ) -> list[RollingLoglikelihoodResult]:
        self._log("rolling_loglikelihood", len(requests))
        out = []
        for r in requests:
            n = max(1, len(r.text.split()))
            tokens = tuple(-3.0 * _unit(self.salt, r.text, i) for i in range(n))
            out.append(RollingLoglikelihoodResult(sum(tokens), n, tokens))
        if progress:
            progress(len(requests))
        return out


TASKS_YAML = """\
tasks:
  - name: mc_alpha
    kind: multiple_choice
    group: [science]
    data: {{path: mc.jsonl, id: id}}
    prompt: "{mc_prompt}"
    choices: "{{{{ choices }}}}"
    target: "{{{{ answer }}}}"
    metrics: [acc, acc_norm, brier_score]
  - name: mc_beta
    kind: multiple_choice
    group: [science]
    data: {{path: mc.jsonl, id: id}}
    prompt: "Q{{{{ id }}}}: {{{{ question }}}} ->"
    choices: "{{{{ choices }}}}"
    target: "{{{{ answer }}}}"
  - name: gen_gamma
    kind: generate
    data: {{path: gen.jsonl, id: id}}
    prompt: "Say: {{{{ question }}}}"
    target: "{{{{ answers }}}}"
    generation: {{max_tokens: 8}}
    metrics: [exact_match, f1]
  - name: ppl_delta
    kind: perplexity
    data: {{path: gen.jsonl, id: id}}
    text: "{{{{ question }}}} is a question"
"""


def write_tasks(
    folder: Path,
    *,
    n_mc: int = 16,
    n_gen: int = 10,
    mc_prompt: str = "Question: {{ question }}\\nAnswer:",
    star_gold: bool = False,
) -> Path:
    """A task folder: two multiple-choice tasks (one group), a generation task and a perplexity task.

    With ``star_gold`` the gold choice starts with '*', which FakeModel(prefer_gold=...) favours.
    """
    import json

    folder.mkdir(parents=True, exist_ok=True)
    words = ["red", "green", "blue", "amber", "violet", "teal", "ochre", "umber"]
    with (folder / "mc.jsonl").open("w") as handle:
        for i in range(n_mc):
            choices = [f"{words[(i + k) % len(words)]} {k}" for k in range(4)]
            answer = i % 4
            if star_gold:
                choices[answer] = "*" + choices[answer]
            handle.write(
                json.dumps(
                    {"id": f"m{i}", "question": f"which colour is number {i}?", "choices": choices, "answer": answer}
                )
                + "\n"
            )
    with (folder / "gen.jsonl").open("w") as handle:
        for i in range(n_gen):
            handle.write(
                json.dumps({"id": f"g{i}", "question": f"what is item {i}", "answers": ["paris", "blue"][: 1 + i % 2]})
                + "\n"
            )
    (folder / "tasks.yaml").write_text(TASKS_YAML.format(mc_prompt=mc_prompt))
    return folder


def stable(results: dict) -> dict:
    """results.json without what legitimately differs between runs: timings."""
    import copy

    out = copy.deepcopy(results)
    out.pop("timing", None)
    for task in out.get("tasks", {}).values():
        task.pop("timing", None)
    return out
