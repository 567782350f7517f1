"""The three request kinds a model backend answers, and their results.

Requests are immutable and hashable: the engine dedupes and reorders them freely and hands
results back in the order it was given.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from proctor.core.images import ImageInput


@dataclass(frozen=True)
class LoglikelihoodRequest:
    """log P(continuation | context), summed over the continuation's tokens.

    With ``move_whitespace`` (lm-evaluation-harness's rule) trailing whitespace of the context is
    scored as part of the continuation; without it the context is kept exactly as given and only
    the continuation's own tokens are scored (probsem's rule).
    """

    context: str
    continuation: str
    move_whitespace: bool = True
    max_length: int | None = None  # at most this many tokens (context cut on the left); None: the model's limit
    images: tuple[ImageInput, ...] = ()  # images the context's placeholders refer to, in order (vision models)


@dataclass(frozen=True)
class LoglikelihoodResult:
    logprob: float
    token_logprobs: tuple[float, ...]
    is_greedy: bool
    truncated: int = 0  # tokens cut from the left of context + continuation to fit the model's window
    # an upper bound, not the log-prob: the continuation was not among a server's top next tokens (top_logprobs)
    bounded: bool = False

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
    num_beams: int = 1  # > 1: deterministic beam search
    length_penalty: float = 1.0  # beam scores divided by length ** length_penalty
    no_repeat_ngram_size: int = 0
    min_tokens: int = 0  # end-of-sequence is banned before this many new tokens
    max_length: int | None = None  # prompt + new tokens fit in this many (prompt cut on the left)
    images: tuple[ImageInput, ...] = ()  # images the prompt's placeholders refer to, in order (vision models)
    top_k: int | None = None  # sampling from the k likeliest tokens; None: the model's default, 0: off
    repetition_penalty: float = (
        1.0  # > 1: logits of tokens already in the sequence shrink (CTRL's rule, as transformers)
    )


# Settings added after requests were first stored: they enter a request's identity only when set,
# so every request stored before them keeps its hash.
LATER_SETTINGS = {"top_k": None, "repetition_penalty": 1.0}
LATER_RESULT_FIELDS = {
    "truncated": 0,
    "bounded": False,
    "reasoning": None,
    "withheld": None,
}  # result fields added later: stored only when set (a stored answer reads as before)


@dataclass(frozen=True)
class GenerateResult:
    text: str
    finish_reason: str  # "stop" (stop string or end-of-sequence) or "length"
    prompt_tokens: int
    completion_tokens: int
    truncated: int = 0  # prompt tokens cut from the left to fit the model's window (with the tokens to generate)
    # a server's separate reasoning text (a chat reply's reasoning_content / reasoning: vLLM, DeepSeek), else None
    reasoning: str | None = None
    # why the server gave no answer, in its own words ("finish_reason content_filter", "refusal", "tool_calls"):
    # counted by runs/outcome_tally.py; None for an answer
    withheld: str | None = None


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
