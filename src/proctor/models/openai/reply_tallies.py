"""What an OpenAI-compatible server's replies said about themselves, counted over a run: the tokens and
requests they used (``Usage``: results.json's ``usage``) and the model and configuration each says answered
(``ReplyOrigins``). ``ApiClient`` adds every reply it receives; a reply's shape is checked where it is read,
so a count here takes whatever a field holds and counts only whole numbers and names.
"""

from __future__ import annotations

import threading
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator


def token_count(value: object) -> int:
    """A usage count as a server sent it; anything but a whole number (null, text) counts as none."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


@dataclass
class Usage:
    requests: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, payload: object, retries: int) -> None:
        usage = payload.get("usage") if isinstance(payload, dict) else None
        usage = usage if isinstance(usage, dict) else {}  # a reply's shape is checked where it is read, not here
        with self.lock:
            self.requests += 1
            self.retries += retries
            self.prompt_tokens += token_count(usage.get("prompt_tokens"))
            self.completion_tokens += token_count(usage.get("completion_tokens"))

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return {
                "requests": self.requests,
                "retries": self.retries,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
            }


@dataclass
class ReplyOrigins:
    """Which model each reply says answered (its ``model`` field) and on which configuration
    (``system_fingerprint``), counted: a server that serves another model under the name asked for, or two
    servers mixed in one run, show here (engine/provenance_warnings.py warns of both)."""

    models: Counter[str] = field(default_factory=Counter)
    fingerprints: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    aside: int = 0  # inside set_aside(): replies not counted

    @contextmanager
    def set_aside(self) -> Iterator[None]:
        """Replies within are not counted (the capability self-check's, which answer no question of a task)."""
        with self.lock:
            self.aside += 1
        try:
            yield
        finally:
            with self.lock:
                self.aside -= 1

    def add(self, payload: object) -> None:
        if not isinstance(payload, dict) or self.aside:
            return
        model, fingerprint = payload.get("model"), payload.get("system_fingerprint")
        with self.lock:
            if isinstance(model, str) and model:
                self.models[model] += 1
            if isinstance(fingerprint, str) and fingerprint:
                self.fingerprints[fingerprint] += 1

    def snapshot(self) -> dict[str, dict[str, int]]:
        with self.lock:
            return {"models": dict(self.models), "system_fingerprints": dict(self.fingerprints)}
