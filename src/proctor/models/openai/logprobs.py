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
from dataclasses import dataclass
from typing import Callable, cast

from proctor.core.errors import ProctorError
from proctor.models.logprob_checks import check_agreement, check_ranked, check_sum, contradicts
from proctor.models.openai.http import ApiError, RetryBudgetExceeded
from proctor.models.reply_checks import (
    ReplyError,
    Where,
    a_dict,
    a_list,
    a_string,
    check_offsets,
    logprob,
    spelled_prefix,
)

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


def parse_echo(choice: dict[str, object], prompt: str, where: Where, max_new: int = 1) -> PromptTokens | None:
    """The prompt part of an ``echo`` reply's ``logprobs`` (OpenAI's legacy completions format); None when the
    reply holds no ``logprobs`` at all (a server that ignores ``echo``). Whatever it holds is checked
    (``reply_checks``): the tokens spell the prompt, then at most ``max_new`` generated ones; one log-prob per
    token, each finite and at most 0 (only the first token's may be null); ``text_offset`` consistent."""
    data = choice.get("logprobs")
    if data is None:
        return None
    data = a_dict(data, where, "logprobs")
    listed = a_list(data.get("tokens"), where, "logprobs.tokens")
    tokens = [a_string(t, where, f"logprobs.tokens[{i}]") for i, t in enumerate(listed)]
    if not tokens:
        raise where.error("logprobs.tokens", "is empty (an echo holds the prompt's tokens)")
    values = a_list(data.get("token_logprobs"), where, "logprobs.token_logprobs")
    if len(values) != len(tokens):
        raise where.error("logprobs.token_logprobs", f"has {len(values)} log-probs for {len(tokens)} tokens")
    n = spelled_prefix(tokens, prompt, where, "logprobs.tokens")
    text = choice.get("text")
    if isinstance(text, str) and not text.startswith(prompt):  # an echo's text is the prompt, then what was generated
        raise where.error("text", f"is {text[:60]!r}..., which does not start with the prompt that was sent (an echo)")
    if len(tokens) - n > max_new:
        extra = len(tokens) - n
        raise where.error("logprobs.tokens", f"holds {extra} tokens after the prompt; {max_new} was asked for")
    offsets = data.get("text_offset")
    if offsets is not None:
        check_offsets(a_list(offsets, where, "logprobs.text_offset"), tokens, where, "logprobs.text_offset")
    given = data.get("top_logprobs")
    tops: list[object] = [None] * len(tokens) if given is None else a_list(given, where, "logprobs.top_logprobs")
    lps: list[float | None] = []
    greedy: list[bool] = []
    position = 0
    starts = []
    found: list[tuple[str, str, float, float]] = []  # positions whose listed value is not the token's own
    compared = 0
    for i in range(n):
        starts.append(position)
        position += len(tokens[i])
        field = f"logprobs.token_logprobs[{i}]"
        lp = None if i == 0 and values[i] is None else logprob(values[i], where, field)
        top = tops[i] if i < len(tops) else None
        if top is not None:
            top = a_dict(top, where, f"logprobs.top_logprobs[{i}]")
            listed_at = {k: logprob(v, where, f"logprobs.top_logprobs[{i}][{k!r}]") for k, v in top.items()}
            check_sum(listed_at, where, f"logprobs.top_logprobs[{i}]")
            if lp is not None and tokens[i] in listed_at:
                compared += 1
                if contradicts(tokens[i], lp, listed_at):
                    found.append((f"logprobs.top_logprobs[{i}]", tokens[i], listed_at[tokens[i]], lp))
        lps.append(lp)
        # top: None, or an object whose values were each checked as a log-prob above
        greedy.append(bool(top) and lp is not None and lp >= max(cast("dict[str, float]", top).values()) - 1e-6)
    check_agreement(found, compared, where)
    return PromptTokens(tuple(tokens[:n]), tuple(starts), tuple(lps), tuple(greedy))


def parse_prompt_logprobs(choice: dict[str, object], prompt: str, where: Where) -> PromptTokens | None:
    """vLLM's ``prompt_logprobs``: per prompt token, None (the first) or {token_id: {logprob, rank, decoded_token}};
    None when the reply holds none (a server without the extension).

    The prompt's own token is the entry that is not one of the top-k extras; vLLM lists it first. Checked as
    ``parse_echo``'s are: the decoded tokens spell the prompt, every log-prob but the first is a finite number
    at most 0."""
    data = choice.get("prompt_logprobs")
    if data is None:
        return None
    data = a_list(data, where, "prompt_logprobs")
    if not data:
        raise where.error("prompt_logprobs", "is empty (one entry per prompt token was asked for)")
    tokens: list[str] = []
    lps: list[float | None] = []  # None: the first token, which has no log-prob
    greedy: list[bool] = []
    for i, entry in enumerate(data):
        field = f"prompt_logprobs[{i}]"
        if entry is None and i == 0:
            tokens.append("")
            lps.append(None)
            greedy.append(False)
            continue
        entry = a_dict(entry, where, field)
        if not entry:
            raise where.error(field, "is empty (the prompt token's own log-prob is missing)")
        key, own = next(iter(entry.items()))
        own = a_dict(own, where, f"{field}[{key!r}]")
        tokens.append(a_string(own.get("decoded_token"), where, f"{field}[{key!r}].decoded_token"))
        lps.append(logprob(own.get("logprob"), where, f"{field}[{key!r}].logprob"))
        greedy.append(own.get("rank") == 1)
        check_ranked(_candidates(entry, where, field), where, field)
    if lps[0] is None:
        # the first token's text is not given; recover it from the prompt and the rest
        rest = "".join(tokens[1:])
        if not prompt.endswith(rest):  # rest == prompt: the first entry is a BOS token, with no text
            raise where.error(
                "prompt_logprobs[].decoded_token",
                f"spells {rest[-60:]!r} at the end, which is not how the prompt that was sent ends",
            )
        tokens[0] = prompt[: len(prompt) - len(rest)]
    elif spelled_prefix(tokens, prompt, where, "prompt_logprobs") != len(tokens):
        raise where.error("prompt_logprobs", "holds more tokens than the prompt that was sent")
    starts, position = [], 0
    for token in tokens:
        starts.append(position)
        position += len(token)
    return PromptTokens(tuple(tokens), tuple(starts), tuple(lps), tuple(greedy))


def _candidates(entry: dict[str, object], where: Where, field: str) -> list[tuple[str, float, object]]:
    """A ``prompt_logprobs`` entry's candidates (token id, log-prob, rank), each log-prob checked."""
    out = []
    for key, value in entry.items():
        value = a_dict(value, where, f"{field}[{key!r}]")
        out.append((key, logprob(value.get("logprob"), where, f"{field}[{key!r}].logprob"), value.get("rank")))
    return out


def continuation_scores(parsed: PromptTokens, context_chars: int) -> tuple[tuple[float, ...], bool]:
    """Log-probs of the tokens that end after the context (a token straddling the boundary counts)."""
    lps, greedy = [], True
    for start, token, lp, g in zip(parsed.offsets, parsed.tokens, parsed.logprobs, parsed.greedy):
        if start + len(token) > context_chars:
            if lp is None:
                raise ProctorError("the server gave no log-prob for a continuation token (an empty context?)")
            lps.append(lp)
            greedy = greedy and g
    return tuple(lps), greedy


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    reason: str
    wrong_reply: bool = False  # it failed on a reply that broke an invariant (reply_checks), not on a capability


def _failed(step: str, exc: ProctorError) -> CheckResult:
    """A self-check step that raised: a wrong reply, or a refusal (the server cannot do what was asked).
    Transport faults and a refused key say nothing about log-probs: raised, never a fallback."""
    if isinstance(exc, RetryBudgetExceeded) or (isinstance(exc, ApiError) and exc.status in (401, 403)):
        raise exc
    if isinstance(exc, ReplyError):
        return CheckResult(False, f"{step} got a wrong reply from {exc.server}: '{exc.field}' {exc.problem}", True)
    return CheckResult(False, f"{step} failed: {exc}")


def self_check(
    score: Callable[[str], PromptTokens | None], next_tokens: Callable[[str], dict[str, float] | None]
) -> CheckResult:
    """Compare the next token's top log-probs (generation path) with the same tokens' log-probs as
    the last token of the prompt (prompt path), for the top candidates: their values differ from
    each other, so a shifted or recomputed prompt log-prob cannot match them all by chance."""
    prompt = SELF_CHECK_PROMPT
    try:
        top = next_tokens(prompt)
    except ProctorError as exc:  # anything else is a defect, raised as one
        return _failed("generating one token with logprobs", exc)
    if not top:
        return CheckResult(False, "the server returns no log-probs for generated tokens")
    checked, notes = [], []
    for token, expected in sorted(top.items(), key=lambda kv: -kv[1])[:4]:
        if not token or not token.strip(" ") or "\ufffd" in token:
            continue
        try:
            parsed = score(prompt + token)
        except ProctorError as exc:
            return _failed("the prompt log-prob request", exc)
        if parsed is None or not parsed.tokens:
            return CheckResult(False, "the server ignores the request for prompt log-probs")
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
