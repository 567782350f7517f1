"""What every backend hands back is checked once, where it enters the run (``runs/executor.execute``).

The OpenAI-compatible and vLLM backends check each server reply (``reply_checks``); a backend a plug-in registers
answers in Python, and its results were taken as they came: positive or NaN log-likelihoods chose the answer, a
generation of ``None`` ended in an internal error, ``is_greedy`` given as the text ``'False'`` was stored as true.
Here the results of every backend, built-in or plug-in, are held to the invariants of their type:

- a log-likelihood and each token's log-prob are finite numbers at most 0 (the slack and floor of
  ``reply_checks``; the floor of a sum scales with its tokens), and the sum is the sum of the token log-probs (no
  token scored: 0), so a per-token metric divides by the tokens that were scored; ``is_greedy`` and ``bounded``
  are booleans, ``truncated`` a count;
- a generation's text is a string, its finish reason a string, its token counts whole numbers at least 0;
- a rolling log-likelihood's token count is a whole number at least 0 and agrees with its token log-probs.

A broken one is a :class:`~proctor.models.reply_checks.ReplyError` naming the backend (and the file of a plug-in's
class), the request and the field; the engine adds the task and the sample. It is never retried, never a number.
"""

from __future__ import annotations

import math
import numbers
from pathlib import Path
from typing import Any, NoReturn, Sequence

import numpy as np

from proctor.core.model_requests import (
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    RollingLoglikelihoodResult,
)
from proctor.core.registrations import defined_in
from proctor.models.logprob_checks import SAME_SLACK_ABS, SAME_SLACK_REL
from proctor.models.reply_checks import LOGPROB_FLOOR, LOGPROB_SLACK, Where, describe_request

_PROCTOR = str(Path(__file__).resolve().parents[1]) + "/"
_RESULT_TYPES = {
    "loglikelihood": LoglikelihoodResult,
    "generate": GenerateResult,
    "rolling_loglikelihood": RollingLoglikelihoodResult,
}
_ADVICE = "check the backend's code (what its {call} returns)"


def backend_named(model: object) -> str:
    """'model 'fake:v1' (class Fake in /path/bk.py)': the model and, for a plug-in's class, where it is defined."""
    name = getattr(model, "name", None) or type(model).__name__
    file = defined_in(type(model))
    if file is None or str(Path(file).resolve()).startswith(_PROCTOR):
        return f"model '{name}'"
    return f"model '{name}' (class {type(model).__name__} in {file})"


def _request_text(request: object) -> str:
    if isinstance(request, LoglikelihoodRequest):
        return request.context + request.continuation
    return str(getattr(request, "prompt", None) or getattr(request, "text", ""))


def check_results(model: object, request_type: str, requests: Sequence[object], results: Sequence[Any]) -> None:
    """Each of ``results`` (the answers to ``requests``, in order) obeys its type's invariants."""
    expected = _RESULT_TYPES.get(request_type)
    if expected is None:
        return
    server = backend_named(model)
    for request, result in zip(requests, results):
        text = _request_text(request)
        where = Where(server, describe_request(text), prompt=text)
        if not isinstance(result, expected):
            _fail(where, request_type, "(the result)", f"is {_shown(result)}, not a {expected.__name__}")
        if isinstance(result, LoglikelihoodResult):
            _loglikelihood(result, where)
        elif isinstance(result, GenerateResult):
            _generation(result, where)
        elif isinstance(result, RollingLoglikelihoodResult):
            _rolling(result, where)


def _fail(where: Where, call: str, field: str, problem: str) -> NoReturn:
    error = where.error(field, problem)
    raise error.with_advice(_ADVICE.format(call=call))


def _shown(value: object) -> str:
    text = repr(value)
    return (text if len(text) <= 80 else text[:77] + "...") + f" (a {type(value).__name__})"


def _number(value: object) -> float | None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return None
    return float(value)


def _logprob(value: object, where: Where, call: str, field: str, tokens: int = 1) -> float:
    number = _number(value)
    if number is None:
        _fail(where, call, field, f"is {_shown(value)}, not a log-prob (a number)")
    floor = LOGPROB_FLOOR * max(1, tokens)
    if math.isnan(number):
        _fail(where, call, field, "is NaN, not a log-prob")
    elif math.isinf(number):
        _fail(where, call, field, f"is {number} (a log-prob is finite)")
    elif number > LOGPROB_SLACK:
        _fail(where, call, field, f"is {number}, above 0 (a log-prob is at most 0)")
    elif number < floor:
        _fail(where, call, field, f"is {number}, below {floor:g} (no model's log-softmax gives it)")
    return number


def _count(value: object, where: Where, call: str, field: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or int(value) < 0:
        _fail(where, call, field, f"is {_shown(value)}, not a count (a whole number at least 0)")
    return int(value)


def _flag(value: object, where: Where, call: str, field: str) -> None:
    if not isinstance(value, (bool, np.bool_)):
        _fail(where, call, field, f"is {_shown(value)}, not true or false")


def _token_logprobs(values: object, where: Where, call: str) -> list[float]:
    if not isinstance(values, (tuple, list)):
        _fail(where, call, "token_logprobs", f"is {_shown(values)}, not a tuple of log-probs (one per token)")
    return [_logprob(v, where, call, f"token_logprobs[{i}]") for i, v in enumerate(values)]


def _agrees(total: float, tokens: list[float], where: Where, call: str) -> None:
    summed = math.fsum(tokens)
    if abs(summed - total) > SAME_SLACK_ABS + SAME_SLACK_REL * max(abs(summed), abs(total)):
        shown = "no token log-probs" if not tokens else f"{len(tokens)} token log-probs summing to {summed}"
        _fail(where, call, "logprob", f"is {total}, but the result lists {shown}: the two disagree")


def _loglikelihood(result: LoglikelihoodResult, where: Where) -> None:
    call = "loglikelihood"
    tokens = _token_logprobs(result.token_logprobs, where, call)
    total = _logprob(result.logprob, where, call, "logprob", len(tokens))
    _agrees(total, tokens, where, call)
    _flag(result.is_greedy, where, call, "is_greedy")
    _flag(result.bounded, where, call, "bounded")
    _count(result.truncated, where, call, "truncated")


def _generation(result: GenerateResult, where: Where) -> None:
    call = "generate"
    for field in ("text", "finish_reason"):
        value = getattr(result, field)
        if not isinstance(value, str):
            _fail(where, call, field, f"is {_shown(value)}, not text")
    for field in ("reasoning", "withheld"):
        value = getattr(result, field)
        if value is not None and not isinstance(value, str):
            _fail(where, call, field, f"is {_shown(value)}, not text (or None)")
    for field in ("prompt_tokens", "completion_tokens", "truncated"):
        _count(getattr(result, field), where, call, field)


def _rolling(result: RollingLoglikelihoodResult, where: Where) -> None:
    call = "rolling_loglikelihood"
    n = _count(result.n_tokens, where, call, "n_tokens")
    tokens = _token_logprobs(result.token_logprobs, where, call)
    total = _logprob(result.logprob, where, call, "logprob", n)
    if tokens and len(tokens) != n:
        _fail(where, call, "n_tokens", f"is {n}, but the result lists {len(tokens)} token log-probs")
    if tokens or n == 0:
        _agrees(total, tokens, where, call)
