"""Reasoning models (``--think-end-token``): the thinking cut off a generation before it is scored.

lm-evaluation-harness's rule (``lm_eval.models.utils.postprocess_generated_text``): the answer is the text
after the *last* end-of-thinking marker, left-stripped, and only then cut at the request's stop strings (a
thinking trace often holds a stop string such as a blank line). So with the marker set, generation requests
go to the model without their stop strings and are cut here; runs without it send and store exactly what
they did before. One rule differs from lm-eval's: a generation whose thinking never closes has no answer
(lm-eval scores the whole thinking trace as the answer); such replies are counted and warned about.

A server that returns a reasoning model's thinking apart from its answer (a chat reply's
``reasoning_content``: ``GenerateResult.reasoning``) needs no marker: that text is the thinking, kept and
counted with or without ``--think-end-token``, and the reply's content is the answer (cut further at the
marker when one is set and the content holds it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypeVar

from proctor.core.model_requests import GenerateRequest, GenerateResult
from proctor.runs.task_result import Number

Request = TypeVar("Request")  # a request as a handler made it


@dataclass(frozen=True)
class ThoughtResult(GenerateResult):
    """A generation's answer (``text``) with the thinking cut off it (None: no thinking was found)."""

    thinking: str | None = None
    closed: bool = True  # False: the thinking never ended, so there is no answer


def split_thinking(text: str, end_token: str, stop: Sequence[str]) -> tuple[str, str | None, bool]:
    """(answer, thinking, closed): the answer after the last ``end_token`` cut at the first of ``stop``."""
    if end_token not in text:
        return "", text, False
    thinking, answer = text.rsplit(end_token, 1)
    answer = answer.lstrip()
    for term in stop:
        if term:
            answer = answer.split(term)[0]
    return answer, thinking, True


def sent_request(request: Any, end_token: str | None, budget: int | None = None) -> Any:
    """What goes to the model: a generation request without its stop strings when thinking is cut, and
    with ``budget`` more tokens to generate (``--max-thinking-tokens``: the thinking's own allowance)."""
    if not isinstance(request, GenerateRequest):
        return request
    if budget is not None:
        request = dataclasses.replace(request, max_tokens=request.max_tokens + budget)
    if end_token is None or not request.stop:
        return request
    return dataclasses.replace(request, stop=())


def answer_of(request: object, result: object, end_token: str | None) -> object:
    """The reply scored for ``request``: its thinking split off (a ``ThoughtResult``), or as given."""
    if not isinstance(request, GenerateRequest) or not isinstance(result, GenerateResult):
        return result
    thinking: str | None
    if result.reasoning is not None:  # the server kept the thinking apart: the content is the answer
        answer, closed, kept = result.text, True, result.reasoning
        if end_token is not None:
            if end_token in answer:
                before, answer = answer.rsplit(end_token, 1)
                kept += before + end_token
            answer = split_thinking(end_token + answer, end_token, request.stop)[0]
        thinking = kept
    elif end_token is None:
        return result
    else:
        answer, thinking, closed = split_thinking(result.text, end_token, request.stop)
    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(GenerateResult)}
    return ThoughtResult(**{**fields, "text": answer}, thinking=thinking, closed=closed)


def run_thinking(
    run: Callable[[list[Request]], list[Any]],
    requests: Sequence[Request],
    end_token: str | None,
    budget: int | None = None,
) -> list[Any]:
    """``run`` (which answers requests through the store) on the requests as sent, each answer split."""
    results = run([sent_request(r, end_token, budget) for r in requests])
    return [answer_of(r, out, end_token) for r, out in zip(requests, results)]


@dataclass
class ThinkingTally:
    """A task's thinking: replies seen, those that never closed, the thinking's characters, and the tokens
    each reply generated (thinking and answer: what a thinking budget bounds)."""

    unclosed: int = 0
    texts: list[str] = field(default_factory=list)  # the thinking of each reply (its length; its tokens at the end)
    tokens: list[int] = field(default_factory=list)
    at_limit: int = 0  # replies that stopped because they reached max_tokens (the budget, when one is set)

    @property
    def samples(self) -> int:
        """The replies whose thinking was split off."""
        return len(self.texts)

    def add(self, results: Sequence[object]) -> None:
        for result in results:
            if isinstance(result, ThoughtResult):
                self.unclosed += 0 if result.closed else 1
                self.texts.append(result.thinking or "")
                self.tokens.append(result.completion_tokens)
                self.at_limit += result.finish_reason == "length"

    def as_json(self, count_tokens: Callable[[Sequence[str]], list[int] | None] | None = None) -> dict[str, Number]:
        """The tally; with ``count_tokens`` (the model's tokenizer, where it has one at hand) the thinking's own
        tokens too (``mean_thinking_tokens``, ``max_thinking_tokens``)."""
        mean = sum(map(len, self.texts)) / len(self.texts) if self.texts else 0.0
        tokens = sum(self.tokens) / len(self.tokens) if self.tokens else 0.0
        counted = count_tokens(self.texts) if count_tokens is not None and self.texts else None
        thought = (
            {
                "mean_thinking_tokens": round(sum(counted) / len(counted), 1),
                "max_thinking_tokens": max(counted),
            }
            if counted and len(counted) == len(self.texts)
            else {}
        )
        return {
            "samples": self.samples,
            "unclosed": self.unclosed,
            "mean_chars": round(mean, 1),
            "mean_generated_tokens": round(tokens, 1),
            "max_generated_tokens": max(self.tokens, default=0),
            "stopped_at_max_tokens": self.at_limit,
            **thought,
        }

    def warning(self, end_token: str) -> str | None:
        if not self.unclosed:
            return None
        return (
            f"{self.unclosed} of {self.samples} generations never closed their thinking with {end_token!r}: they "
            "have no answer and score as wrong (raise the generation's max_tokens, or check the marker)"
        )
