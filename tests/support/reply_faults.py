"""A loopback OpenAI-compatible server whose replies are well formed but wrong, one fault at a time, and one
that trickles its reply a byte a second.

- ``ToyLogprobServer``: a stand-in server (NOT a model). It splits text into words (each with the spaces before
  it) and gives each word a fixed log-prob (``word_logprob``), whatever comes before it: its generation path and
  its prompt path (``echo``, vLLM's ``prompt_logprobs``) agree, so the backend's self-check passes, and the
  log-likelihood of any request is known (``toy_loglikelihood``). It answers lists of prompts, chat and text
  generation (always the letter ``A``).
- ``fault``: the name of one entry of ``FAULTS``, applied to every reply but those of the self-check (so a run
  gets past it), or to the self-check only with ``fault_on="self_check"``. Every request is recorded
  (``requests``), so a test can count what the server saw: a wrong reply is never sent again.
- ``TrickleServer``: answers every POST with a valid reply, one byte per second.
- ``toy_model``: the backend that asks such a server, and ``REQUESTS`` whose log-likelihoods it knows.
"""

from __future__ import annotations

import json
import re
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler
from typing import Callable

from proctor.core.model_requests import LoglikelihoodRequest
from proctor.models.openai.compat import OpenAIModel
from tests.support.openai_fakes import _json_handler, _Server

SELF_CHECK_MARK = "The quick brown fox"  # in the backend's self-check prompt (models/openai/logprobs.py)
CANDIDATES = [" Rome", " Paris", " Milan", " Venice", " Turin"]


def words(text: str) -> list[str]:
    """The toy tokenizer: each word with the whitespace before it; trailing whitespace is a token of its own."""
    return re.findall(r"\s*\S+|\s+", text)


def word_logprob(token: str) -> float:
    """A word's fixed log-prob, in [-5.5, -0.5]."""
    return -(0.5 + (zlib.crc32(token.encode()) % 1000) / 200)


def toy_loglikelihood(context: str, continuation: str) -> float:
    """What the server's log-probs give the continuation (the words that end after the context)."""
    total, position = 0.0, 0
    for token in words(context + continuation):
        position += len(token)
        if position > len(context):
            total += word_logprob(token)
    return total


# log-likelihood requests the tests send the toy server: two choices of one quiz prompt and a sentence's end
REQUESTS = [
    LoglikelihoodRequest("Q: Which animal barks?\nA:", " dog"),
    LoglikelihoodRequest("Q: Which animal barks?\nA:", " cat"),
    LoglikelihoodRequest("The sky is", " blue today"),
]


def toy_model(url: str, **options) -> OpenAIModel:
    """The OpenAI-compatible backend as model 'toy' of the server at ``url``: one request at a time, two quick
    retries, no API key (``options`` add to these or override them)."""
    options = {"concurrency": 1, "backoff": 0.01, "max_retries": 2, "api_key_env": None, **options}
    return OpenAIModel("toy", url, **options)


def _echo_choice(prompt: str, generated: str, index: int) -> dict:
    tokens = words(prompt) + [generated]
    offsets, position = [], 0
    for token in tokens:
        offsets.append(position)
        position += len(token)
    lps = [None] + [word_logprob(t) for t in tokens[1:]]
    tops = [None] + [{t: word_logprob(t)} for t in tokens[1:]]
    logprobs = {"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offsets}
    return {"index": index, "text": prompt + generated, "logprobs": logprobs, "finish_reason": "length"}


def _prompt_logprobs_choice(prompt: str, generated: str, index: int) -> dict:
    entries: list = [None]
    for token in words(prompt)[1:]:
        entries.append(
            {str(zlib.crc32(token.encode())): {"logprob": word_logprob(token), "rank": 1, "decoded_token": token}}
        )
    return {"index": index, "text": generated, "prompt_logprobs": entries, "finish_reason": "length"}


# ------------------------------------------------------------------ the faults: reply -> wrong reply
def _each(change: Callable[[dict], None]) -> Callable[[dict], dict]:
    def apply(reply: dict) -> dict:
        for choice in reply["choices"]:
            change(choice)
        return reply

    return apply


def _cut(choice: dict, at: int, insert: str | None = None) -> None:
    """Leave out (or, with ``insert``, add before) the token at ``at`` of an echo, the offsets kept consistent."""
    lp = choice["logprobs"]
    if insert is None:
        for key in ("tokens", "token_logprobs", "top_logprobs"):
            del lp[key][at]
    else:
        lp["tokens"].insert(at, insert)
        lp["token_logprobs"].insert(at, word_logprob(insert))
        lp["top_logprobs"].insert(at, {insert: word_logprob(insert)})
    lp["text_offset"] = [sum(len(t) for t in lp["tokens"][:i]) for i in range(len(lp["tokens"]))]


def _last_prompt_token(choice: dict) -> int:
    return len(choice["logprobs"]["tokens"]) - 2  # the last is the generated one


def _set_lp(value) -> Callable[[dict], dict]:
    """The last prompt token's log-prob set to ``value``, in an echo or in ``prompt_logprobs``."""

    def change(choice: dict) -> None:
        if "prompt_logprobs" in choice:
            next(iter(choice["prompt_logprobs"][-1].values()))["logprob"] = value
        elif "logprobs" in choice and len(choice["logprobs"]["tokens"]) > 1:
            choice["logprobs"]["token_logprobs"][_last_prompt_token(choice)] = value

    return _each(change)


def _reorder(keep_index: bool) -> Callable[[dict], dict]:
    def apply(reply: dict) -> dict:
        reply["choices"].reverse()
        if not keep_index:
            for choice in reply["choices"]:
                del choice["index"]
        return reply

    return apply


def _set_field(path: tuple, value) -> Callable[[dict], dict]:
    def change(choice: dict) -> None:
        target = choice
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return _each(change)


def _pl(change: Callable[[list], None]) -> Callable[[dict], dict]:
    return _each(lambda c: change(c["prompt_logprobs"]))


def _wrong_pl_token(entries: list) -> None:
    own = next(iter(entries[1].values()))
    own["decoded_token"] = own["decoded_token"].upper() + "x"


def _more_generated(choice: dict) -> None:
    """Two more tokens after the one generated token asked for."""
    lp = choice["logprobs"]
    lp["tokens"] += [" x", " y"]
    lp["token_logprobs"] += [-1.0, -1.0]
    lp["top_logprobs"] += [None, None]
    lp.pop("text_offset")


def _length_with_no_text(choice: dict) -> None:
    choice["finish_reason"] = "length"
    if "message" in choice:
        choice["message"]["content"] = ""
    else:
        choice["text"] = ""


FAULTS: dict[str, Callable[[dict], dict]] = {
    # echo + logprobs
    "echo_missing_last_token": _each(lambda c: _cut(c, _last_prompt_token(c))),
    "echo_extra_token": _each(lambda c: _cut(c, _last_prompt_token(c), insert=" extra")),
    "echo_wrong_tokens": _each(lambda c: c["logprobs"]["tokens"].__setitem__(1, c["logprobs"]["tokens"][1].upper())),
    "logprob_nan": _set_lp(float("nan")),
    "logprob_inf": _set_lp(float("inf")),
    "logprob_positive": _set_lp(0.7),
    "logprob_null": _set_lp(None),
    "logprob_text": _set_lp("-1.5"),
    "choices_reordered_with_index": _reorder(keep_index=True),  # allowed: the right numbers
    "choices_reordered_without_index": _reorder(keep_index=False),
    "choices_duplicate_index": _each(lambda c: c.__setitem__("index", 0)),
    "choices_missing_one_index": lambda r: (r["choices"][0].pop("index"), r)[1],
    "choices_fewer": lambda r: {**r, "choices": r["choices"][:-1]},
    "choices_more": lambda r: {**r, "choices": r["choices"] + [dict(r["choices"][0], index=len(r["choices"]))]},
    "choices_empty": lambda r: {**r, "choices": []},
    "choice_not_an_object": lambda r: {**r, "choices": ["A"] * len(r["choices"])},
    "text_offset_inconsistent": _each(
        lambda c: c["logprobs"].__setitem__("text_offset", [0] * len(c["logprobs"]["tokens"]))
    ),
    "logprobs_missing": _each(lambda c: c.pop("logprobs")),
    "logprobs_a_list": _set_field(("logprobs",), []),
    "token_logprobs_a_string": _set_field(("logprobs", "token_logprobs"), "-1.0 -2.0"),
    "tokens_a_string": _each(lambda c: c["logprobs"].__setitem__("tokens", "".join(c["logprobs"]["tokens"]))),
    "logprobs_too_few": _each(lambda c: c["logprobs"]["token_logprobs"].pop()),
    "echo_more_generated": _each(_more_generated),
    "usage_negative": lambda r: {**r, "usage": {"prompt_tokens": -5, "completion_tokens": 1}},
    # counts that contradict each other, or the reply (red team 11, probes 010 and 011)
    "usage_total_wrong": lambda r: {**r, "usage": {**r["usage"], "total_tokens": sum(r["usage"].values()) + 7}},
    "usage_prompt_below_echo": lambda r: {**r, "usage": {"prompt_tokens": 3, "completion_tokens": 1}},
    # vLLM's prompt_logprobs
    "prompt_logprobs_nan": _pl(lambda e: next(iter(e[-1].values())).__setitem__("logprob", float("nan"))),
    "prompt_logprobs_wrong_token": _pl(_wrong_pl_token),
    "prompt_logprobs_empty_entry": _pl(lambda e: e.__setitem__(2, {})),
    "prompt_logprobs_null_entry": _pl(lambda e: e.__setitem__(2, None)),
    # generation
    "chat_without_message": _each(lambda c: c.pop("message", None)),
    "length_with_no_text": _each(_length_with_no_text),
    # 'length' after the one token the toy counts (usage), whatever max_tokens asked: cut by something else
    "length_cut_short": _each(lambda c: c.__setitem__("finish_reason", "length")),
    "content_a_list": _each(lambda c: c.get("message", {}).update(content=["A"])),
}


class ToyLogprobServer(_Server):
    """See the module's docstring. ``lists=False``: a list of prompts is refused (400), as some servers do."""

    faults: dict[str, Callable] = FAULTS  # what ``fault`` names (a subclass brings its own, and its ``spoil``)

    def __init__(self, fault: str | None = None, fault_on: str = "scoring", lists: bool = True) -> None:
        if fault is not None and fault not in self.faults:
            raise ValueError(f"no fault {fault!r}")
        self.fault, self.fault_on, self.lists = fault, fault_on, lists
        self.requests: list[tuple[str, dict]] = []
        self.lock = threading.Lock()
        super().__init__(_json_handler(self.respond))

    def scoring_requests(self) -> list[dict]:
        """The requests after the self-check: the bodies the fault applies to."""
        return [b for _, b in self.requests if SELF_CHECK_MARK not in json.dumps(b)]

    def respond(self, path: str, body: dict, headers: dict) -> tuple[int, object]:
        with self.lock:
            self.requests.append((path, body))
        reply = self.reply(path, body)
        if isinstance(reply, tuple):
            return reply
        in_check = SELF_CHECK_MARK in json.dumps(body)
        if self.fault and in_check == (self.fault_on == "self_check"):
            spoilt = self.spoil(reply, body)  # a fault may answer with a status of its own (a refused option)
            return spoilt if isinstance(spoilt, tuple) else (200, spoilt)
        return 200, reply

    def spoil(self, reply: dict, body: dict) -> object:
        """``reply`` with the fault applied (``FAULTS``' entries read the reply alone)."""
        return self.faults[self.fault](reply)

    def reply(self, path: str, body: dict):
        if path.endswith("/chat/completions"):
            choice = {"index": 0, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}
            return {
                "object": "chat.completion",
                "choices": [choice],
                "usage": {"prompt_tokens": 9, "completion_tokens": 1},
            }
        prompts = body["prompt"]
        if isinstance(prompts, list) and not self.lists:
            return 400, {"error": {"message": "prompt must be a string"}}
        prompts = prompts if isinstance(prompts, list) else [prompts]
        choices = []
        for index, prompt in enumerate(prompts):
            if body.get("echo"):
                choices.append(_echo_choice(prompt, " A", index))
            elif body.get("prompt_logprobs") is not None:
                choices.append(_prompt_logprobs_choice(prompt, " A", index))
            elif body.get("logprobs"):  # the next token's top log-probs (the self-check's generation path)
                top = dict(sorted(((t, word_logprob(t)) for t in CANDIDATES), key=lambda kv: -kv[1]))
                best = next(iter(top))
                logprobs = {
                    "tokens": [best],
                    "token_logprobs": [top[best]],
                    "top_logprobs": [top],
                    "text_offset": [len(prompt)],
                }
                choices.append({"index": index, "text": best, "logprobs": logprobs, "finish_reason": "length"})
            else:
                choices.append({"index": index, "text": " A", "finish_reason": "stop"})
        usage = {"prompt_tokens": sum(len(words(p)) for p in prompts), "completion_tokens": len(prompts)}
        return {"object": "text_completion", "choices": choices, "usage": usage}


class TrickleServer(_Server):
    """Answers every POST with ``{"choices": [{"index": 0, "text": " A"}]}`` one byte a second: the body only
    (``headers_too=False``: the status line and headers at once) or the whole response; counts the requests it
    saw (``requests``)."""

    def __init__(self, interval: float = 1.0, headers_too: bool = False) -> None:
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                server.requests += 1
                data = json.dumps({"choices": [{"index": 0, "text": " A", "finish_reason": "stop"}]}).encode()
                head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n"
                if not headers_too:
                    self.wfile.write(head.encode())
                    self.wfile.flush()
                try:
                    for byte in (head.encode() if headers_too else b"") + data:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(interval)
                except OSError:  # the client gave up: what the test wants
                    pass

        super().__init__(Handler)
