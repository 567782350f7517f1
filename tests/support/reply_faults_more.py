"""More well-formed but wrong replies for the toy server of ``reply_faults``: log-probs that contradict each other
(a token's own value against its ``top_logprobs`` entry, probabilities summing past 1, ranks against values),
finite but absurd log-probs, a batch whose prompts get each other's numbers, the server's own ``error`` object,
a chat-shaped choice on /completions, a lone surrogate in a text, a JSON body with a key twice.

``MoreFaultServer(fault)`` is ``ToyLogprobServer`` with one of ``MORE_FAULTS`` applied after the self-check (or
to it only, ``fault_on="self_check"``); a fault may answer raw bytes (a body ``json.dumps`` cannot write).
"""

from __future__ import annotations

import json
import math
from typing import Callable

from tests.support.reply_faults import ToyLogprobServer


def _echo(change: Callable[[dict], None]) -> Callable[[dict, dict], dict]:
    """``change`` applied to every choice's ``logprobs`` of an echo reply (other replies kept)."""

    def apply(reply: dict, body: dict) -> dict:
        if body.get("echo"):
            for choice in reply["choices"]:
                change(choice["logprobs"])
        return reply

    return apply


def _prompt_entries(change: Callable[[dict], None]) -> Callable[[dict, dict], dict]:
    """``change`` applied to every entry (but the first, None) of every choice's ``prompt_logprobs``."""

    def apply(reply: dict, body: dict) -> dict:
        if body.get("prompt_logprobs") is not None:
            for choice in reply["choices"]:
                for entry in choice["prompt_logprobs"][1:]:
                    change(entry)
        return reply

    return apply


def _generation(change: Callable[[dict], None]) -> Callable[[dict, dict], dict]:
    """``change`` applied to each choice of a plain generation reply (no echo, no log-probs)."""

    def apply(reply: dict, body: dict) -> dict:
        if not body.get("echo") and body.get("prompt_logprobs") is None and not body.get("logprobs"):
            for choice in reply["choices"]:
                change(choice)
        return reply

    return apply


def _every_token(value: float, top_too: bool) -> Callable[[dict], None]:
    def change(lp: dict) -> None:
        for i in range(1, len(lp["tokens"])):
            lp["token_logprobs"][i] = value
            lp["top_logprobs"][i] = {lp["tokens"][i]: value if top_too else -6.0, " zzz": -7.0}

    return change


def _top_sum_over_one(lp: dict) -> None:
    for i in range(1, len(lp["tokens"])):
        lp["top_logprobs"][i] = {lp["tokens"][i]: lp["token_logprobs"][i], " x": -0.05, " y": -0.05, " z": -0.05}


def _rounded(lp: dict) -> None:
    """A control: the token's value printed with 2 decimals in one place and 4 in the other (a server's rounding)."""
    for i in range(1, len(lp["tokens"])):
        value = lp["token_logprobs"][i]
        lp["token_logprobs"][i] = round(value, 4)
        lp["top_logprobs"][i] = {lp["tokens"][i]: round(value, 2), " zzz": round(value - 3.0, 2)}


def _one_collision(lp: dict) -> None:
    """A control: one position lists its token's text at another value (two token ids with one text)."""
    lp["top_logprobs"][2] = {lp["tokens"][2]: -9.0}


def _extra_rank_one(entry: dict) -> None:
    """038: the prompt token demoted to rank 7 and another token at -0.001 with rank 1 (probabilities past 1)."""
    next(iter(entry.values()))["rank"] = 7
    entry["99999"] = {"logprob": -0.001, "rank": 1, "decoded_token": " the"}


def _rank_against_value(entry: dict) -> None:
    """The prompt token given rank 2 while the one of rank 1 has a far lower log-prob."""
    next(iter(entry.values()))["rank"] = 2
    entry["99999"] = {"logprob": -12.0, "rank": 1, "decoded_token": " the"}


def _real_ranks(entry: dict) -> None:
    """A control: vLLM's shape with prompt_logprobs=1: the token and the top-1 (rank 1 above it, or rank 2 below
    a likely token), their probabilities summing under 1."""
    own = next(iter(entry.values()))
    rest = math.log(0.9 * (1 - math.exp(own["logprob"])))
    own["rank"] = 3 if rest > own["logprob"] else 1
    entry["99999"] = {"logprob": rest, "rank": 1 if rest > own["logprob"] else 2, "decoded_token": " the"}


def _crosstalk(reply: dict, body: dict) -> dict:
    """006: each choice of a batched echo carries the log-probs of the next prompt (its tokens right, its top
    entries made to agree, so nothing within one choice is wrong)."""
    choices = reply["choices"]
    if not body.get("echo") or len(choices) < 2:
        return reply
    values = [c["logprobs"]["token_logprobs"] for c in choices]
    for i, choice in enumerate(choices):
        lp = choice["logprobs"]
        other = values[(i + 1) % len(choices)]
        lp["token_logprobs"] = ([None] + other[1:] + [-1.0] * len(lp["tokens"]))[: len(lp["tokens"])]
        lp["top_logprobs"] = [None] + [{t: v} for t, v in zip(lp["tokens"][1:], lp["token_logprobs"][1:])]
    return reply


def _bf16_step(reply: dict, body: dict) -> dict:
    """A correct server whose kernels differ by batch shape: in a batch, one position of each prompt moved by a
    quarter of a nat (a bfloat16 logit's step around 32), its top entry with it."""
    choices = reply["choices"]
    if not body.get("echo") or len(choices) < 2:
        return reply
    for choice in choices:
        lp = choice["logprobs"]
        lp["token_logprobs"][2] -= 0.25
        lp["top_logprobs"][2] = {lp["tokens"][2]: lp["token_logprobs"][2]}
    return reply


def _next_token(change: Callable[[dict], None]) -> Callable[[dict, dict], dict]:
    """``change`` applied to the next-token ``logprobs`` of a generation with ``logprobs`` (the top mode)."""

    def apply(reply: dict, body: dict) -> dict:
        if body.get("logprobs") and not body.get("echo"):
            for choice in reply["choices"]:
                change(choice["logprobs"])
        return reply

    return apply


def _not_greedy(gap: float) -> Callable[[dict, dict], object]:
    """A server that refuses ``min_tokens`` (OpenAI's) and, at temperature 0, generates the second token of its
    list, ``gap`` nats below the first."""

    def apply(reply: dict, body: dict) -> object:
        if body.get("min_tokens") is not None:
            return 400, {"error": {"message": "Unrecognized request argument supplied: min_tokens"}}
        if body.get("logprobs") and not body.get("echo"):
            for choice in reply["choices"]:
                top = choice["logprobs"]["top_logprobs"][0]
                first, second = sorted(top, key=top.__getitem__, reverse=True)[:2]
                top[second] = top[first] - gap
                choice["text"] = second
                choice["logprobs"].update(tokens=[second], token_logprobs=[top[second]])
        return reply

    return apply


def _chat_shaped(choice: dict) -> None:
    choice["message"] = {"role": "assistant", "content": choice.pop("text")}


MORE_FAULTS: dict[str, Callable[[dict, dict], object]] = {
    # one number
    "logprob_below_floor": _echo(lambda lp: lp["token_logprobs"].__setitem__(len(lp["tokens"]) - 2, -1.0e6)),
    "logprob_minus_800": _echo(_every_token(-800.0, top_too=True)),  # absurd yet consistent: perplexity overflows
    # a position's candidates
    "top_contradicts_token": _echo(_every_token(-0.01, top_too=False)),
    "top_sum_over_one": _echo(_top_sum_over_one),
    "next_token_sum_over_one": _next_token(lambda lp: lp.__setitem__("top_logprobs", [{" A": -0.01, " B": -0.01}])),
    "next_token_contradicts": _next_token(
        lambda lp: lp.update(tokens=[" Rome"], token_logprobs=[-0.1], top_logprobs=[{" Rome": -4.0, " Milan": -5.0}])
    ),
    "pl_rank_one_above": _prompt_entries(_extra_rank_one),
    "pl_rank_against_value": _prompt_entries(_rank_against_value),
    "pl_rank_not_a_number": _prompt_entries(lambda e: next(iter(e.values())).__setitem__("rank", "first")),
    "echo_text_other_prompt": lambda r, b: (
        [c.__setitem__("text", "Completely different prompt text A") for c in r["choices"] if b.get("echo")],
        r,
    )[1],
    # a batch
    "batch_crosstalk": _crosstalk,
    # the reply as a whole
    "error_beside_choices": lambda r, b: {**r, "error": {"message": "partial failure: shard 3 timed out"}},
    "error_only": lambda r, b: {"error": {"message": "model overloaded", "type": "server_error"}},
    "chat_shaped_completion": _generation(_chat_shaped),
    "text_lone_surrogate": _generation(lambda c: c.__setitem__("text", " Par\ud800is")),
    "duplicate_choices": lambda r, b: json.dumps(r)
    .replace('"choices":', '"choices": [{"index": 0, "text": " B", "finish_reason": "stop"}], "choices":', 1)
    .encode(),
    "next_token_far_from_greedy": _not_greedy(3.0),
    # controls: replies real servers send
    "next_token_near_greedy": _not_greedy(0.05),  # a near-tie flipped (hosted APIs are not exactly argmax)
    "batch_bf16_step": _bf16_step,
    "top_rounded": _echo(_rounded),
    "top_one_collision": _echo(_one_collision),
    "pl_real_ranks": _prompt_entries(_real_ranks),
    "logprob_vllm_floor": _echo(lambda lp: lp["top_logprobs"][1].__setitem__(" never", -9999.0)),
}


class MoreFaultServer(ToyLogprobServer):
    """``ToyLogprobServer`` with one of ``MORE_FAULTS`` (see the module's docstring)."""

    faults = MORE_FAULTS

    def spoil(self, reply: dict, body: dict) -> object:
        """``reply`` with the fault applied: ``MORE_FAULTS``' entries read the request's body too."""
        return self.faults[self.fault](reply, body)
