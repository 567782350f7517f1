"""The three request kinds a model backend answers, and their results.

Requests are immutable and hashable: the engine dedupes and reorders them freely and hands
results back in the order it was given.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LoglikelihoodRequest:
    """log P(continuation | context), summed over the continuation's tokens."""

    context: str
    continuation: str


@dataclass(frozen=True)
class LoglikelihoodResult:
    logprob: float
    token_logprobs: tuple[float, ...]
    is_greedy: bool

    @property
    def n_tokens(self) -> int:
        return len(self.token_logprobs)


@dataclass(frozen=True)
class GenerateRequest:
    prompt: str
    max_tokens: int = 64
    stop: tuple[str, ...] = ()
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0


@dataclass(frozen=True)
class GenerateResult:
    text: str
    finish_reason: str  # "stop" (stop string or end-of-sequence) or "length"
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class RollingLoglikelihoodRequest:
    """Log-likelihood of a whole text, scored in windows of ``window`` tokens moving by ``stride``."""

    text: str
    window: int = 1024
    stride: int | None = None


@dataclass(frozen=True)
class RollingLoglikelihoodResult:
    logprob: float
    n_tokens: int
    token_logprobs: tuple[float, ...] = field(default=(), repr=False)


Request = LoglikelihoodRequest | GenerateRequest | RollingLoglikelihoodRequest
