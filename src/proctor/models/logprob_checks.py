"""The invariants of the log-prob distributions a reply lists beside a token, checked where the reply enters.

``reply_checks.logprob`` checks one number (finite, at most 0, above a floor). A reply also lists, per position,
several candidates of one distribution (``top_logprobs`` of an echo or a generation, the entries of vLLM's
``prompt_logprobs``), and those numbers constrain each other whatever the model:

- the token's own log-prob and its entry among the candidates are one number (a server that gives the token
  -0.01 and lists it at -6.0 contradicts itself: which one it scores with is unknown);
- candidates of one distribution have probabilities that sum to at most 1 (five tokens each at -0.01 are not a
  distribution);
- ranks follow the values: no candidate ranked lower has a higher log-prob than one ranked above it (rank 1 holds
  the greatest), and under greedy decoding the generated token is the most likely one listed.

Each broken one is a :class:`~proctor.models.reply_checks.ReplyError` naming the server, the request and the
field. The slack is wide enough for what real servers do: vLLM and OpenAI compute log-probs in float32 from
float16/bfloat16 logits and may round what they print; the differences that matter here are whole nats.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from proctor.models.reply_checks import Where

# Two printings of one log-prob: bfloat16 carries about 3 significant digits, so the slack grows with the value.
SAME_SLACK_ABS = 0.02
SAME_SLACK_REL = 0.01
# The probabilities of listed candidates may exceed 1 only by rounding (each printed log-prob rounded up a hair).
SUM_SLACK = 0.05


def _differ(a: float, b: float) -> bool:
    return abs(a - b) > SAME_SLACK_ABS + SAME_SLACK_REL * max(abs(a), abs(b))


def _total(values: Sequence[float]) -> float:
    return sum(math.exp(v) for v in values)


def contradicts(token: str, own: float | None, top: Mapping[str, float]) -> bool:
    """Whether ``top`` lists ``token`` at another value than its own log-prob ``own`` (None: not given, the first
    prompt token). A token text that is empty or holds U+FFFD (a byte of a character split over tokens) may be
    shared by several token ids, so its entry is not compared."""
    return own is not None and bool(token) and "\ufffd" not in token and token in top and _differ(top[token], own)


def check_sum(top: Mapping[str, float], where: Where, field: str) -> None:
    """``top`` (token text -> log-prob, each already a checked log-prob): probabilities summing to at most 1."""
    total = _total(list(top.values()))
    if total > 1 + SUM_SLACK:
        raise where.error(
            field,
            f"lists {len(top)} candidates whose probabilities sum to {total:.3f}, above 1: they are not log-probs of "
            "one distribution",
        )


def check_agreement(found: Sequence[tuple[str, str, float, float]], compared: int, where: Where) -> None:
    """``found``: (field, token, listed, own) for each position where ``contradicts``, of ``compared`` positions
    whose token was listed. A server that contradicts itself at most positions is refused; a few positions are
    let pass, as two token ids whose texts are the same (a detokenizer's spelling of a split character, a
    tokenizer with duplicate pieces) can put another token's value under the same text."""
    if not found or 2 * len(found) <= compared:
        return
    field, token, listed, own = found[0]
    raise where.error(
        f"{field}[{token!r}]",
        f"is {listed}, but the same token's own log-prob is {own} ({len(found)} of the {compared} positions that "
        "list their token disagree so): the reply contradicts itself (which number the server means is unknown)",
    )


# nats by which another token may outrank the one generated at temperature 0: hosted APIs are not exactly argmax
# (batch-dependent kernels, speculative decoding) and near-ties flip, which changes no score read from the list;
# a token e times less likely than the first is a server that sampled where greedy decoding was asked for
GREEDY_SLACK = 1.0


def check_greedy(token: str, own: float, top: Mapping[str, float], where: Where, field: str) -> None:
    """Under greedy decoding (temperature 0) the generated ``token`` is the most likely: none of ``top`` is above
    it by more than ``GREEDY_SLACK``."""
    best = max(top, key=top.__getitem__, default=None)
    if best is not None and best != token and top[best] - own > GREEDY_SLACK:
        raise where.error(
            f"{field}[{best!r}]",
            f"is {top[best]}, above the generated token {token!r} ({own}) although greedy decoding (temperature 0) "
            "was asked for: the token generated is not the one the log-probs rank first",
        )


def check_ranked(entries: Sequence[tuple[str, float, object]], where: Where, field: str) -> None:
    """One position's ranked candidates (key, log-prob, rank or None), as vLLM's ``prompt_logprobs`` lists them:
    each rank a whole number at least 1, a better rank never a lower log-prob, probabilities summing to at most 1.
    Tied values may take any order (vLLM counts ties against the prompt token's rank)."""
    ranked = []
    for key, value, rank in entries:
        if rank is None:
            continue
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise where.error(f"{field}[{key!r}].rank", f"is {rank!r}, not a rank (a whole number at least 1)")
        ranked.append((rank, value, key))
    ranked.sort()
    for (rank_a, value_a, key_a), (rank_b, value_b, key_b) in zip(ranked, ranked[1:]):
        if rank_a < rank_b and value_b > value_a and _differ(value_a, value_b):
            raise where.error(
                f"{field}[{key_b!r}]",
                f"has rank {rank_b} and log-prob {value_b}, above the {value_a} of rank {rank_a} ({key_a!r}): the "
                "ranks contradict the log-probs",
            )
    total = _total([value for _, value, _ in entries])
    if total > 1 + SUM_SLACK:
        raise where.error(
            field,
            f"lists {len(entries)} candidates whose probabilities sum to {total:.3f}, above 1: they are not "
            "log-probs of one distribution",
        )
