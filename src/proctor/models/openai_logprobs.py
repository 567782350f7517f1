"""Prompt log-probs over HTTP: parse ``echo`` + ``logprobs`` and vLLM's ``prompt_logprobs``, and the
self-check that decides whether a server's prompt log-probs can be trusted.

The self-check needs no tokenizer. It asks the server to continue a fixed prompt by one greedy
token and reads that token's log-prob from the *generation* path (which servers get right); then it
sends prompt + that token and reads the same token's log-prob from the *prompt* path. A correct
server gives the same number; an off-by-one shift or an echo that reports something else (as
llama.cpp's does) gives a different one, and the mode is refused.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Callable

from proctor.models.openai_http import RetryBudgetExceeded

log = logging.getLogger(__name__)

SELF_CHECK_PROMPT = (
    "The quick brown fox jumps over the lazy dog. The capital of France is Paris, and the capital of Italy is"
)
TOLERANCE = 0.02  # nats; float32 vs. float16 kernels differ by far less than a shifted log-prob


@dataclass(frozen=True)
class PromptTokens:
    """Per prompt token: its text, start offset in the prompt, log-prob (None: unscored) and greedy flag."""

    tokens: tuple[str, ...]
    offsets: tuple[int, ...]
    logprobs: tuple[float | None, ...]
    greedy: tuple[bool, ...]


def _offsets(tokens: list[str], given: list | None) -> list[int]:
    if given and len(given) == len(tokens):
        return [int(x) for x in given]
    out, position = [], 0
    for token in tokens:
        out.append(position)
        position += len(token)
    return out


def parse_echo(choice: dict, prompt: str) -> PromptTokens | None:
    """The prompt part of an ``echo`` reply's ``logprobs`` (OpenAI's legacy completions format)."""
    data = choice.get("logprobs")
    if not isinstance(data, dict) or not data.get("tokens") or data.get("token_logprobs") is None:
        return None
    tokens = [str(t) for t in data["tokens"]]
    offsets = _offsets(tokens, data.get("text_offset"))
    lps = list(data["token_logprobs"])
    tops = data.get("top_logprobs") or [None] * len(tokens)
    keep = [i for i, start in enumerate(offsets) if start < len(prompt)]  # drop the generated token(s)
    greedy = []
    for i in keep:
        top, lp = tops[i] if i < len(tops) else None, lps[i]
        greedy.append(bool(top) and lp is not None and lp >= max(top.values()) - 1e-6)
    return PromptTokens(
        tuple(tokens[i] for i in keep),
        tuple(offsets[i] for i in keep),
        tuple(None if lps[i] is None else float(lps[i]) for i in keep),
        tuple(greedy),
    )


def parse_prompt_logprobs(choice: dict, prompt: str) -> PromptTokens | None:
    """vLLM's ``prompt_logprobs``: per prompt token, None (the first) or {token_id: {logprob, rank, decoded_token}}.

    The prompt's own token is the entry that is not one of the top-k extras; vLLM lists it first.
    """
    data = choice.get("prompt_logprobs")
    if not isinstance(data, list) or not data:
        return None
    tokens: list[str] = []
    lps: list[float | None] = []  # None: the first token, which has no log-prob
    greedy: list[bool] = []
    for entry in data:
        if entry is None:
            tokens.append("")
            lps.append(None)
            greedy.append(False)
            continue
        own = next(iter(entry.values()))
        tokens.append(str(own.get("decoded_token", "")))
        lps.append(float(own["logprob"]))
        greedy.append(own.get("rank") == 1)
    if tokens[0] == "" and lps[0] is None:
        # the first token's text is not given; recover it from the prompt and the rest
        rest = "".join(tokens[1:])
        tokens[0] = prompt[: len(prompt) - len(rest)] if prompt.endswith(rest) else ""
    offsets = _offsets(tokens, None)
    return PromptTokens(tuple(tokens), tuple(offsets), tuple(lps), tuple(greedy))


def continuation_scores(parsed: PromptTokens, context_chars: int) -> tuple[tuple[float, ...], bool]:
    """Log-probs of the tokens that end after the context (a token straddling the boundary counts)."""
    lps, greedy = [], True
    for start, token, lp, g in zip(parsed.offsets, parsed.tokens, parsed.logprobs, parsed.greedy):
        if start + len(token) > context_chars:
            if lp is None:
                raise ValueError("the server gave no log-prob for a continuation token (an empty context?)")
            lps.append(lp)
            greedy = greedy and g
    return tuple(lps), greedy


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    reason: str


def self_check(
    score: Callable[[str], PromptTokens | None], next_tokens: Callable[[str], dict[str, float] | None]
) -> CheckResult:
    """Compare the next token's top log-probs (generation path) with the same tokens' log-probs as
    the last token of the prompt (prompt path), for the top candidates: their values differ from
    each other, so a shifted or recomputed prompt log-prob cannot match them all by chance."""
    prompt = SELF_CHECK_PROMPT
    try:
        top = next_tokens(prompt)
    except RetryBudgetExceeded:
        raise  # the server is down, which says nothing about its log-probs
    except Exception as exc:  # noqa: BLE001 - any other failure means "cannot verify"
        return CheckResult(False, f"generating one token with logprobs failed: {exc}")
    if not top:
        return CheckResult(False, "the server returns no log-probs for generated tokens")
    checked, notes = [], []
    for token, expected in sorted(top.items(), key=lambda kv: -kv[1])[:4]:
        if not token or not token.strip(" ") or "\ufffd" in token:
            continue
        try:
            parsed = score(prompt + token)
        except RetryBudgetExceeded:
            raise
        except Exception as exc:  # noqa: BLE001
            return CheckResult(False, f"the prompt log-prob request failed: {exc}")
        if parsed is None or not parsed.tokens:
            return CheckResult(False, "the server ignores the request for prompt log-probs")
        if "".join(parsed.tokens) != prompt + token:
            return CheckResult(False, "the tokens it returns do not spell the prompt it was sent")
        if any(lp is not None and (math.isnan(lp) or lp > 1e-4) for lp in parsed.logprobs):
            return CheckResult(False, "it returns prompt log-probs above zero or NaN")
        tail = [i for i, start in enumerate(parsed.offsets) if start >= len(prompt)]
        if len(tail) != 1 or parsed.tokens[tail[0]] != token:
            notes.append(f"{token!r} tokenises differently after the prompt")
            continue
        got = parsed.logprobs[tail[0]]
        if got is None or abs(got - expected) > TOLERANCE:
            return CheckResult(
                False,
                f"the prompt log-prob of {token!r} is {got} but generation gives {expected:.4f}: "
                "prompt log-probs are shifted by a position or computed wrongly",
            )
        checked.append(f"{token!r} {expected:.3f}")
    if len(checked) < 2:
        return CheckResult(
            False, "inconclusive: fewer than two candidate tokens could be compared (" + "; ".join(notes) + ")"
        )
    return CheckResult(True, "prompt log-probs match generation log-probs for " + ", ".join(checked))
