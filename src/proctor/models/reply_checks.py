"""What a server or an inference engine returns is checked where it enters, before it becomes a number.

A reply can be well formed and still wrong: an echo that leaves out a prompt token, a NaN or positive
log-prob, a batch's choices in another order without ``index``. Each of those used to become a wrong score
(or an ``IndexError`` far from its cause). Here every invariant of a reply is one check, and a broken one
is a :class:`ReplyError` that names the server, the request and the field. A wrong reply is never retried:
sending the same request again gets the same wrong answer (only transport faults are retried, in
``openai_http``). Used by the OpenAI-compatible backend (``openai_compat``, ``openai_scoring``,
``openai_logprobs``) and by the vLLM backend, whose ``prompt_logprobs`` obey the same rules.
"""

from __future__ import annotations

import math
from typing import Callable, NoReturn, Sequence, cast

from proctor.core.errors import ProctorError

# A log-prob is at most 0; float16 kernels round a near-certain token's log-prob to a hair above it.
LOGPROB_SLACK = 1e-4
# A log-prob below this is not a real log-softmax: it needs a logit gap of ten thousand. vLLM prints -inf as
# -9999.0, which stays above it. Finite absurd values used to decide choices and overflow perplexity's exp().
LOGPROB_FLOOR = -1e4


class ReplyError(ProctorError):
    """A reply that breaks an invariant: ``server`` (an endpoint URL or engine), ``request`` (which one) and
    ``field`` (the JSON path of what is wrong) are named in the message and kept as attributes."""

    def __init__(
        self, server: str, request: str, field: str, problem: str, prompt: str | None = None, advice: str | None = None
    ) -> None:
        self.server, self.request, self.field, self.problem = server, request, field, problem
        self.prompt = prompt  # the whole prompt sent, for finding its sample (not shown)
        self.advice = advice  # what to check instead of the server (an in-process backend's code: result_checks)
        more = (
            " or choose another log-likelihood mode (--model-arg loglikelihood=...) or --mc-format generate"
            if advice is None and any(word in field for word in ("logprob", "tokens", "text_offset"))
            else ""
        )
        check = advice or "check the server (its version, its options)"
        super().__init__(
            f"{server} sent a wrong reply to {request}: '{field}' {problem}. It is not retried (the same request "
            f"gets the same reply) and no score is made from it: {check}{more}"
        )

    def with_advice(self, advice: str) -> "ReplyError":
        return ReplyError(self.server, self.request, self.field, self.problem, self.prompt, advice)

    def in_task(self, task: str, sample: str | None = None) -> "ReplyError":
        """This error with the task (and the sample) that sent the request named: the backend sees requests only."""
        where = f"{self.request} of task '{task}'" + (f", sample '{sample}'" if sample is not None else "")
        return ReplyError(self.server, where, self.field, self.problem, self.prompt, self.advice)


class Where:
    """The server and the request a reply answers, for messages: ``Where(url, "the request (prompt 'Q: ...')")``.
    ``scrub`` masks secrets in what the message quotes from the reply (a server may echo a key back)."""

    def __init__(self, server: str, request: str, scrub: Callable[[str], str] = str, prompt: str | None = None) -> None:
        self.server, self.request, self.scrub, self.prompt = server, request, scrub, prompt

    def error(self, field: str, problem: str) -> ReplyError:
        return ReplyError(self.server, self.scrub(self.request), field, self.scrub(problem), self.prompt)


def describe_request(prompt: object, head: str = "the request") -> str:
    """'the request (prompt 'The sky is ...')': enough to find the sample whose prompt it is."""
    text = prompt if isinstance(prompt, str) else str(prompt)
    shown = text if len(text) <= 60 else text[:57] + "..."
    return f"{head} (prompt {shown!r})"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# ------------------------------------------------------------------ plain values
def logprob(value: object, where: Where, field: str) -> float:
    """A log-prob: a finite number at most 0 (null, text, NaN, infinity or a positive number are errors)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _fail(where, field, f"is {_shown(value)}, not a log-prob (a number)")
    number = float(value)
    if math.isnan(number):
        return _fail(where, field, "is NaN")
    if math.isinf(number):
        return _fail(where, field, f"is {number} (a log-prob is finite)")
    if number > LOGPROB_SLACK:
        return _fail(where, field, f"is {number}, above 0 (a log-prob is at most 0)")
    if number < LOGPROB_FLOOR:
        return _fail(where, field, f"is {number}, below {LOGPROB_FLOOR:g} (no model's log-softmax gives it)")
    return number


def _fail(where: Where, field: str, problem: str) -> NoReturn:
    raise where.error(field, problem)


def a_list(value: object, where: Where, field: str) -> list[object]:
    if not isinstance(value, list):
        raise where.error(field, f"is {_shown(value)}, not a list")
    return value


def a_dict(value: object, where: Where, field: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise where.error(field, f"is {_shown(value)}, not an object")
    return value


def a_string(value: object, where: Where, field: str) -> str:
    """Text: a string that is valid Unicode. JSON may spell a lone surrogate (``"\\ud800"``), which no UTF-8
    file can hold: kept, it ended the run with a UnicodeEncodeError when the answer was stored."""
    if not isinstance(value, str):
        raise where.error(field, f"is {_shown(value)}, not text")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise where.error(
            field,
            f"holds a lone surrogate (U+{ord(value[exc.start]):04X}) at character {exc.start}: not Unicode text "
            "(a character split by the server's detokenizer, or a broken escape)",
        ) from None
    return value


def check_usage(reply: object, where: Where) -> dict[str, int]:
    """``usage`` counts, where a server sends them, are whole numbers at least 0 (null: not counted), and agree:
    ``total_tokens`` is ``prompt_tokens + completion_tokens`` (the API's definition, and vLLM's, llama.cpp's).
    Counts that contradict the reply would be summed into results.json's usage and cost as if true. The counts
    sent, by name (``check_prompt_count`` compares them with what the reply echoed)."""
    usage = reply.get("usage") if isinstance(reply, dict) else None  # not an object: ordered_choices says so
    if usage is None:
        return {}
    a_dict(usage, where, "usage")
    counts: dict[str, int] = {}
    for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = usage.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise where.error(f"usage.{name}", f"is {_shown(value)}, not a count (a whole number at least 0)")
        counts[name] = value
    if len(counts) == 3 and counts["total_tokens"] != counts["prompt_tokens"] + counts["completion_tokens"]:
        raise where.error(
            "usage.total_tokens",
            f"is {counts['total_tokens']}, not prompt_tokens + completion_tokens ({counts['prompt_tokens']} + "
            f"{counts['completion_tokens']}): the counts contradict each other",
        )
    return counts


def check_prompt_count(counts: dict[str, int], echoed: int | None, where: Where) -> None:
    """``usage.prompt_tokens`` (``counts``, from ``check_usage``) is at least the prompt tokens the reply itself
    echoed (``echoed``; None: nothing to compare): a count below them describes another request."""
    if echoed is not None and counts.get("prompt_tokens", echoed) < echoed:
        raise where.error(
            "usage.prompt_tokens",
            f"is {counts['prompt_tokens']}, fewer than the {echoed} prompt tokens the reply echoed: the count "
            "describes another request",
        )


# ------------------------------------------------------------------ choices
def ordered_choices(reply: object, count: int, where: Where) -> list[dict[str, object]]:
    """A completion reply's ``choices``, one per prompt sent, in the order the prompts were sent.

    With ``index`` on every choice the server may list them in any order (the API allows it); the indices
    must then be 0..count-1, each once. Without ``index`` the order is taken as sent (the echoed text, checked
    later, must spell each prompt); ``index`` on some choices only is an error."""
    if not isinstance(reply, dict):
        raise where.error("(the reply)", f"is {_shown(reply)}, not a JSON object")
    check_no_error(reply, where)
    choices = reply.get("choices")
    if not isinstance(choices, list):
        raise where.error("choices", f"is {_shown(choices)}, not a list (expected {{'choices': [{{...}}]}})")
    if not choices:
        raise where.error("choices", "is empty (expected one choice per prompt)")
    for i, choice in enumerate(choices):
        a_dict(choice, where, f"choices[{i}]")
    if len(choices) != count:
        raise where.error("choices", f"holds {len(choices)} choices for {count} prompt(s) sent")
    indices = [c.get("index") for c in choices]
    if all(i is None for i in indices):
        return list(choices)
    if any(i is None for i in indices):
        missing = [k for k, i in enumerate(indices) if i is None]
        raise where.error(f"choices[{missing[0]}].index", "is missing while other choices have one")
    for k, i in enumerate(indices):
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < count:
            raise where.error(f"choices[{k}].index", f"is {_shown(i)}, not a prompt number 0..{count - 1}")
    if len(set(indices)) != count:
        twice = next(i for i in indices if indices.count(i) > 1)
        raise where.error("choices[].index", f"names prompt {twice} more than once")
    return sorted(choices, key=lambda c: cast(int, c["index"]))  # each checked above


def check_no_error(reply: dict[str, object], where: Where) -> None:
    """A top-level ``error`` (beside ``choices`` or alone, with HTTP 200) is the server's own word that the
    request failed, even where choices came with it: quoted, never read past."""
    error = reply.get("error")
    if error is None:
        return
    message = error.get("message") if isinstance(error, dict) else error
    shown = message if isinstance(message, str) else _shown(error)
    shown = shown if len(shown) <= 300 else shown[:297] + "..."
    beside = " beside 'choices'" if reply.get("choices") is not None else ""
    raise where.error("error", f"is the server's error{beside}: {shown!r} (a reply that reports an error is no answer)")


def choice_text(choice: dict[str, object], chat: bool, where: Where, field: str) -> tuple[str, str | None]:
    """(text, finish_reason) of a generation choice: ``message.content`` (chat) or ``text``."""
    if chat:
        message = a_dict(choice.get("message"), where, f"{field}.message")
        content = message.get("content")
        text = "" if content is None else a_string(content, where, f"{field}.message.content")
    else:
        if "text" not in choice:  # read as null, every answer was empty and scored as wrong
            shape = " (it is shaped as a chat reply, with 'message')" if "message" in choice else ""
            raise where.error(f"{field}.text", f"is missing from a /completions choice{shape}")
        value = choice.get("text")
        text = "" if value is None else a_string(value, where, f"{field}.text")
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise where.error(f"{field}.finish_reason", f"is {_shown(finish)}, not text")
    return text, finish


def choice_reasoning(choice: dict[str, object], chat: bool, where: Where, field: str) -> str | None:
    """A chat choice's reasoning text, which servers of reasoning models return beside the answer
    (``message.reasoning_content``: vLLM's reasoning parsers, DeepSeek; ``message.reasoning``: newer vLLM,
    OpenRouter); None when there is none."""
    message = choice.get("message")
    if not chat or not isinstance(message, dict):
        return None
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if value is not None:
            return a_string(value, where, f"{field}.message.{key}")
    return None


def check_generated(text: str, finish: str | None, max_tokens: int, where: Where, field: str) -> None:
    """A reply that says it stopped at the token limit has generated tokens, so it has text (its reasoning text
    counts: pass it when the reply has one)."""
    if finish == "length" and max_tokens > 0 and text == "":
        raise where.error(
            f"{field}.finish_reason",
            f"is 'length' with no text: {max_tokens} token(s) were asked for and none came back (a reasoning "
            "model may spend them all on reasoning the API does not return: raise the task's max_tokens)",
        )


# ------------------------------------------------------------------ prompt tokens
def spelled_prefix(tokens: Sequence[str], prompt: str, where: Where, field: str) -> int:
    """How many of ``tokens`` spell ``prompt`` exactly (those after it are generated). Tokens that stop short
    of the prompt, run past its end mid-token, or differ from it are an error naming the first bad token."""
    position = 0
    for i, token in enumerate(tokens):
        if position == len(prompt):
            return i
        end = position + len(token)
        if prompt[position:end] != token:
            expected = prompt[position : position + max(len(token), 1) + 10]
            raise where.error(
                f"{field}[{i}]",
                f"is {_shown(token)} where the prompt has {_shown(expected)} at character {position}: the tokens "
                "do not spell the prompt that was sent (a token left out, added or changed)",
            )
        position = end
    if position != len(prompt):
        raise where.error(
            field,
            f"spells only the first {position} of the prompt's {len(prompt)} characters (a token left out)",
        )
    return len(tokens)


def check_offsets(offsets: Sequence[object], tokens: Sequence[str], where: Where, field: str) -> list[int]:
    """``text_offset``: one start per token, 0 first, each the previous start plus that token's length."""
    if len(offsets) != len(tokens):
        raise where.error(field, f"has {len(offsets)} offsets for {len(tokens)} tokens")
    expected = 0
    out = []
    for i, (value, token) in enumerate(zip(offsets, tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or value != expected:
            raise where.error(
                f"{field}[{i}]",
                f"is {_shown(value)}, but token {i} starts at character {expected} (the tokens before it)",
            )
        out.append(value)
        expected += len(token)
    return out


# ------------------------------------------------------------------ an engine's outputs (vLLM)
def engine_outputs(outputs: object, count: int, where: Where) -> list[object]:
    """An engine's outputs for ``count`` inputs: a list of exactly that many (zip would drop the rest)."""
    listed = list(outputs) if isinstance(outputs, (list, tuple)) else None
    if listed is None:
        raise where.error("outputs", f"is {_shown(outputs)}, not a list")
    if len(listed) != count:
        raise where.error("outputs", f"holds {len(listed)} outputs for {count} inputs")
    return listed


def token_positions(values: object, count: int, where: Where) -> list[object]:
    """``prompt_logprobs`` of an engine's output: a list with one entry per prompt token."""
    if not isinstance(values, list):
        raise where.error("prompt_logprobs", f"is {_shown(values)}, not a list (one entry per prompt token)")
    if len(values) != count:
        raise where.error("prompt_logprobs", f"has {len(values)} entries for {count} prompt tokens")
    return values
