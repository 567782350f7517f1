"""A model behind an OpenAI-compatible HTTP API (vLLM, SGLang, llama.cpp, TGI, transformers serve, hosted).

``--model openai:<name> --base-url http://127.0.0.1:8000/v1``; the API key is read from the
environment variable named by ``api_key_env`` (default ``OPENAI_API_KEY``) and sent only in the
``Authorization`` header: it appears in no fingerprint, result, log or error message.

- text prompts go to ``/completions`` (or, with ``endpoint="chat"``, to ``/chat/completions`` as
  one user message); chat prompts (tasks using the chat template) always go to ``/chat/completions``
  and the server applies its own template.
- images (vision tasks) go to ``/chat/completions`` as ``image_url`` content parts (base64 data URIs);
  image multiple-choice tasks run through their generation formulation.
- log-likelihoods: ``echo`` + ``logprobs`` or vLLM's ``prompt_logprobs``, each trusted only after a
  self-check (see ``openai_logprobs``); or, when asked, ``top_logprobs`` of the next generated
  token, which scores single-token continuations (MMLU-style letters) only. A backend that cannot
  score says so (``supports_loglikelihood`` is False) and multiple-choice tasks switch to their
  generation formulation.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Sequence

from proctor.core.errors import ProctorError
from proctor.core.redact import mask_url_credentials
from proctor.models.base import Model, Progress
from proctor.models.openai_http import ApiClient, ApiError
from proctor.models.openai_logprobs import (
    PromptTokens,
    continuation_scores,
    parse_echo,
    parse_prompt_logprobs,
    self_check,
)
from proctor.core.model_requests import (
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    RollingLoglikelihoodRequest,
    RollingLoglikelihoodResult,
)

log = logging.getLogger(__name__)

CHAT_PREFIX = "<|proctor:chat|>"  # a rendered chat prompt: this prefix + the messages as JSON
LOGLIKELIHOOD_MODES = ("auto", "echo", "prompt_logprobs", "top_logprobs", "none")
ENDPOINTS = ("completions", "chat")


def encode_chat(messages: Sequence[dict]) -> str:
    return CHAT_PREFIX + json.dumps([{"role": m["role"], "content": m["content"]} for m in messages], ensure_ascii=False)


def decode_chat(prompt: str) -> list[dict] | None:
    return json.loads(prompt[len(CHAT_PREFIX) :]) if prompt.startswith(CHAT_PREFIX) else None


def with_image_parts(messages: Sequence[dict], images: Sequence[Any]) -> list[dict]:
    """Messages with each ``{"type": "image"}`` placeholder replaced by the next image as an OpenAI
    ``image_url`` content part (a base64 data URI); images left over (a plain-text prompt) go ahead of
    the last user message's text."""
    queue = [{"type": "image_url", "image_url": {"url": image.data_uri()}} for image in images]
    used, out = 0, []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                if isinstance(part, dict) and part.get("type") == "image" and used < len(queue):
                    parts.append(queue[used])
                    used += 1
                else:
                    parts.append(part)
            message = {**message, "content": parts}
        out.append(message)
    if used < len(queue):
        last = max((i for i, m in enumerate(out) if m.get("role") == "user"), default=len(out) - 1)
        content = out[last].get("content")
        text = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        out[last] = {**out[last], "content": queue[used:] + text}
    return out


def trim_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut at the first stop string (servers such as transformers serve keep it or ignore ``stop``)."""
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


class OpenAIModel(Model):
    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        endpoint: str = "completions",
        loglikelihood: str = "auto",
        top_logprobs: int = 20,
        concurrency: int = 8,
        batch: int = 8,
        timeout: float = 120.0,
        max_retries: int = 6,
        backoff: float = 0.5,
        price_prompt: float | None = None,
        price_completion: float | None = None,
        name: str | None = None,
        revision: str | None = None,
        batch_api: bool = False,
        batch_poll: float = 10.0,
        batch_dir: str | None = None,
        **ignored: Any,  # local-model options (dtype, device, batch_size, max_length) do not apply
    ) -> None:
        if not base_url:
            raise ProctorError(f"model 'openai:{model}' needs --base-url (for example http://127.0.0.1:8000/v1)")
        if endpoint not in ENDPOINTS:
            raise ProctorError(f"endpoint must be one of {ENDPOINTS}, got '{endpoint}'")
        if loglikelihood not in LOGLIKELIHOOD_MODES:
            raise ProctorError(f"loglikelihood must be one of {LOGLIKELIHOOD_MODES}, got '{loglikelihood}'")
        self.model = model
        self.revision = revision  # the server's weights are not visible: name them here to tell two apart
        self.name = name or model.rstrip("/").rsplit("/", 1)[-1]
        self.base_url = base_url.rstrip("/")
        self.shown_url = mask_url_credentials(self.base_url)  # in messages: never a password written in the URL
        self.endpoint = endpoint
        self.loglikelihood_option = loglikelihood
        self.top_k = int(top_logprobs)
        self.batch = max(1, int(batch))
        self.prices = (price_prompt, price_completion)  # per million tokens
        self.client = ApiClient(
            self.base_url, api_key_env=api_key_env, timeout=timeout, max_retries=max_retries, backoff=backoff,
            concurrency=concurrency,
        )
        self.chunk_requests = max(64, 4 * self.client.concurrency * self.batch)
        # the Batch API (models/openai_batch.py): used by the BatchedOpenAIModel that load_model / batched() give
        self.batch_api = bool(batch_api)
        self.batch_poll = float(batch_poll)
        self.batch_dir = batch_dir
        if not isinstance(batch_api, bool):
            raise ProctorError(f"batch_api must be true or false, got {batch_api!r}")
        if self.batch_poll < 0:
            raise ProctorError(f"batch_poll must be >= 0 seconds, got {batch_poll}")
        self._mode: str | None = None
        self._mode_reason = ""
        self._lists_ok = True
        self._min_tokens_ok = True  # "min_tokens": 1 keeps end-of-sequence from swallowing the one token asked for

    # ------------------------------------------------------------------ identity
    @property
    def fingerprint(self) -> dict:
        # The server address is left out: the same model served on another port (a restarted
        # server) keeps its cache and lets an interrupted run resume. ``revision`` tells apart
        # different weights served under one name.
        return {
            "backend": "openai",
            "model": self.model,
            "revision": self.revision,
            "endpoint": self.endpoint,
            "loglikelihood": self.loglikelihood_option,
        }

    @property
    def has_chat_template(self) -> bool:
        return True  # the server applies its own

    def apply_chat_template(self, messages: Sequence[dict]) -> str:
        return encode_chat(messages)

    @property
    def supports_images(self) -> bool:
        return True  # sent as image_url content parts; a server without a vision model refuses them

    def image_prompt(self, text: str, n_images: int) -> str:
        return text  # the images go ahead of the text as content parts of one user message

    # ------------------------------------------------------------------ usage and cost
    def usage(self) -> dict | None:
        return self.client.usage.snapshot()

    def estimated_cost(self, usage: dict) -> float | None:
        price_in, price_out = self.prices
        if price_in is None and price_out is None:
            return None
        return round(
            (usage.get("prompt_tokens", 0) * (price_in or 0.0) + usage.get("completion_tokens", 0) * (price_out or 0.0)) / 1e6,
            6,
        )

    # ------------------------------------------------------------------ generation
    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[GenerateResult]:
        self.check_generation(requests)
        return self.client.map(self._generate_one, list(requests), _tick(progress))

    def check_generation(self, requests: Sequence[GenerateRequest]) -> None:
        """Refuse what the API cannot do, before anything is sent."""
        for r in requests:
            if r.num_beams > 1 or r.no_repeat_ngram_size:
                raise ProctorError(
                    f"model '{self.name}' (OpenAI-compatible API) cannot do beam search or no_repeat_ngram_size"
                )
            if r.top_k is not None or r.repetition_penalty != 1.0:
                raise ProctorError(
                    f"model '{self.name}' (OpenAI-compatible API) takes neither top_k nor repetition_penalty; use the hf or vllm backend"
                )

    def _generate_one(self, r: GenerateRequest) -> GenerateResult:
        call = self.generation_call(r)
        if isinstance(call, GenerateResult):
            return call
        path, body = call
        return self.generation_result(r, path, self.client.post(path, body))

    def generation_call(self, r: GenerateRequest) -> tuple[str, dict] | GenerateResult:
        """The endpoint path and JSON body that answer ``r`` (a result straight away when nothing is to be sent)."""
        if r.max_tokens <= 0:
            return GenerateResult("", "length", 0, 0)
        params: dict[str, Any] = {"model": self.model, "max_tokens": r.max_tokens, "temperature": r.temperature, "seed": r.seed}
        if r.top_p != 1.0:
            params["top_p"] = r.top_p
        if r.stop:
            params["stop"] = list(r.stop[:4])  # the API takes at most four; all are applied below
        if r.min_tokens:
            params["min_tokens"] = r.min_tokens  # a vLLM extension
        messages = decode_chat(r.prompt)
        if messages is None and (self.endpoint == "chat" or r.images):  # images travel only on the chat endpoint
            messages = [{"role": "user", "content": r.prompt}]
        if r.images and messages is not None:  # (it is: set above for images)
            messages = with_image_parts(messages, r.images)
        if messages is not None:
            return "/chat/completions", {**params, "messages": messages}
        if not r.prompt:
            raise ProctorError(f"an empty prompt cannot be sent to '{self.name}' (servers reject it)")
        return "/completions", {**params, "prompt": r.prompt}

    def generation_result(self, r: GenerateRequest, path: str, data: dict) -> GenerateResult:
        """``r``'s result from the server's reply ``data`` to ``generation_call(r)``."""
        choice = data["choices"][0]
        if path == "/chat/completions":
            text = (choice.get("message") or {}).get("content") or ""
        else:
            text = choice.get("text") or ""
        text, stopped = trim_at_stop(text, r.stop)
        finish = "length" if choice.get("finish_reason") == "length" and not stopped else "stop"
        usage = data.get("usage") or {}
        return GenerateResult(text, finish, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))

    def batched(self) -> "BatchedOpenAIModel":
        """This model with its generation sent through the server's Batch API (``models/openai_batch.py``):
        the same fingerprint, client and usage; log-likelihoods still go one request at a time."""
        if isinstance(self, BatchedOpenAIModel):
            return self
        return BatchedOpenAIModel.around(self)

    def chat(self, messages: Sequence[dict], *, max_tokens: int = 512, temperature: float = 0.0, seed: int = 0) -> str:
        """One chat reply (for judges)."""
        return self.generate([GenerateRequest(encode_chat(messages), max_tokens, (), temperature, 1.0, seed)])[0].text

    # ------------------------------------------------------------------ log-likelihood: capability
    @property
    def supports_loglikelihood(self) -> bool:
        return self.loglikelihood_mode != "none"

    @property
    def loglikelihood_mode(self) -> str:
        if self._mode is None:
            self._mode, self._mode_reason = self._resolve_mode()
            log.info("model '%s': log-likelihood mode '%s' (%s)", self.name, self._mode, self._mode_reason)
        return self._mode

    def _resolve_mode(self) -> tuple[str, str]:
        option = self.loglikelihood_option
        if option == "none":
            return "none", "disabled by option"
        if option == "top_logprobs":
            if not self._next_tokens(SELF_CHECK_TEXT):
                raise ProctorError(f"'{self.shown_url}' returns no top_logprobs for generated tokens: cannot score choices")
            return "top_logprobs", "top log-probs of the next token (single-token continuations only)"
        if self.endpoint == "chat" and option == "auto":
            return "none", "chat endpoint: no prompt log-probs"
        reasons = []
        for mode in ("echo", "prompt_logprobs") if option == "auto" else (option,):
            def score_one(text: str, m: str = mode):  # this mode, not the loop's last
                return self._score_prompts([text], m)[0]

            result = self_check(score_one, self._next_tokens)
            if result.ok:
                return mode, f"self-check passed: {result.reason}"
            reasons.append(f"{mode}: {result.reason}")
        why = "; ".join(reasons)
        if option != "auto":
            raise ProctorError(f"refusing log-likelihoods from '{self.shown_url}' by '{option}': {why}")
        log.warning("model '%s' cannot score log-likelihoods (%s)", self.name, why)
        return "none", why

    def _next_tokens(self, prompt: str, k: int = 5, max_retries: int | None = 2) -> dict[str, float] | None:
        """Top log-probs of the next token (the generation path), or None if the server gives none.

        Asks for at least one token (``min_tokens``, understood by vLLM and llama.cpp): a server that
        stops at end-of-sequence otherwise returns no token and no log-probs.
        """
        payload = {"model": self.model, "prompt": prompt, "max_tokens": 1, "temperature": 0.0, "logprobs": k}
        if self._min_tokens_ok:
            try:
                data = self.client.post("/completions", {**payload, "min_tokens": 1}, max_retries=max_retries)
            except ApiError as exc:
                if exc.status not in (400, 422):
                    raise
                self._min_tokens_ok = False
        if not self._min_tokens_ok:
            data = self.client.post("/completions", payload, max_retries=max_retries)
        lp = data["choices"][0].get("logprobs") or {}
        top = (lp.get("top_logprobs") or [None])[0]
        return {str(k): float(v) for k, v in top.items()} if isinstance(top, dict) and top else None

    # ------------------------------------------------------------------ log-likelihood: scoring
    def _score_prompts(self, prompts: list[str], mode: str) -> list[PromptTokens | None]:
        """Per-token prompt log-probs, ``batch`` prompts per request where the server takes lists."""
        extra = {"echo": True, "logprobs": 1} if mode == "echo" else {"prompt_logprobs": 1}
        payload = {"model": self.model, "max_tokens": 1, "temperature": 0.0, **extra}
        parse = parse_echo if mode == "echo" else parse_prompt_logprobs
        if len(prompts) > 1 and self._lists_ok:
            try:
                data = self.client.post("/completions", {**payload, "prompt": prompts})
                choices = sorted(data["choices"], key=lambda c: c.get("index", 0))
                if len(choices) == len(prompts):
                    return [parse(c, p) for c, p in zip(choices, prompts)]
            except ApiError as exc:
                if exc.status not in (400, 422):
                    raise
            log.info("'%s' does not take lists of prompts: sending them one by one", self.shown_url)
            self._lists_ok = False
        return [parse(self.client.post("/completions", {**payload, "prompt": p})["choices"][0], p) for p in prompts]

    def _cannot(self) -> ProctorError:
        return ProctorError(
            f"model '{self.name}' at {self.shown_url} cannot score log-likelihoods ({self._mode_reason}). "
            "Multiple-choice tasks run on it through --mc-format generate (the default when a backend cannot score); "
            "perplexity and custom log-likelihood tasks need a server with trustworthy prompt log-probs (vLLM)."
        )

    def loglikelihood(
        self, requests: Sequence[LoglikelihoodRequest], progress: Progress | None = None
    ) -> list[LoglikelihoodResult]:
        if any(r.images for r in requests):
            raise ProctorError(
                f"model '{self.name}' (OpenAI-compatible API) cannot score log-likelihoods with images: prompt log-probs "
                "come from the text-only /completions endpoint. Run image multiple-choice tasks with --mc-format generate "
                "(the default for this backend)."
            )
        mode = self.loglikelihood_mode
        if mode == "none":
            raise self._cannot()
        split = [_split(r) for r in requests]
        if mode == "top_logprobs":
            return self.client.map(self._top_one, split, _tick(progress))
        batches = [split[i : i + self.batch] for i in range(0, len(split), self.batch)]

        def run(batch: list[tuple[str, str]]) -> list[LoglikelihoodResult]:
            parsed = self._score_prompts([c + x for c, x in batch], mode)
            out = []
            for (context, continuation), tokens in zip(batch, parsed):
                if tokens is None:
                    raise ProctorError(f"'{self.shown_url}' stopped returning prompt log-probs")
                if not context:
                    raise ProctorError("an empty context cannot be scored over the API: its first token has no log-prob")
                lps, greedy = continuation_scores(tokens, len(context))
                out.append(LoglikelihoodResult(float(sum(lps)), lps, greedy))
            return out

        done = _tick(progress, lambda batch: len(batch))
        return [r for batch in self.client.map(run, batches, done) for r in batch]

    def _top_one(self, pair: tuple[str, str]) -> LoglikelihoodResult:
        context, continuation = pair
        top = self._next_tokens(context, self.top_k, max_retries=None)
        if not top:
            raise ProctorError(f"'{self.shown_url}' returned no top_logprobs")
        best = max(top, key=top.__getitem__)
        if continuation in top:
            lp = float(top[continuation])
            return LoglikelihoodResult(lp, (lp,), continuation == best)
        # not among the top k: its log-prob is at most the k-th one (an upper bound, never the greedy token)
        lp = float(min(top.values()))
        log.warning("continuation %r is not among the top %d next tokens: scored with the upper bound %.3f", continuation, len(top), lp)
        return LoglikelihoodResult(lp, (lp,), False)

    def rolling_loglikelihood(
        self, requests: Sequence[RollingLoglikelihoodRequest], progress: Progress | None = None
    ) -> list[RollingLoglikelihoodResult]:
        mode = self.loglikelihood_mode
        if mode not in ("echo", "prompt_logprobs"):
            raise self._cannot()

        def one(r: RollingLoglikelihoodRequest) -> RollingLoglikelihoodResult:
            tokens = self._score_prompts([r.text], mode)[0]
            lps = tuple(lp for lp in (tokens.logprobs if tokens else ()) if lp is not None)
            return RollingLoglikelihoodResult(float(sum(lps)), len(lps), lps)

        return self.client.map(one, list(requests), _tick(progress))

    def close(self) -> None:
        self.client.close()


class BatchedOpenAIModel(OpenAIModel):
    """``OpenAIModel`` whose generation goes through the server's Batch API (``models/openai_batch.py``): every
    chunk of a call is submitted at once (``map_chunks``), each handed back as its batches complete. The same
    fingerprint as online (the same requests get the same answers), so stored answers serve both; on a server
    without the endpoints, and for log-likelihoods, requests go one at a time."""

    def __init__(self, model: str, base_url: str | None = None, **options: Any) -> None:
        super().__init__(model, base_url, **options)
        self._batch_mode()

    @classmethod
    def around(cls, model: OpenAIModel) -> "BatchedOpenAIModel":
        """``model`` in batch mode: the same settings, client and usage counters."""
        batched = cls.__new__(cls)
        batched.__dict__.update(model.__dict__)
        batched._batch_mode()
        return batched

    def _batch_mode(self) -> None:
        from proctor.models.openai_batch import BatchRunner

        if "chunk_requests" in self.__dict__:  # copied from the online model by around()
            self._online_chunk = self.__dict__.pop("chunk_requests")
        self.batch_api = True
        self.batches = BatchRunner(self)

    def batch_available(self) -> bool:
        return self.batches.available()

    # a chunk is a batch: a kill loses nothing of it (the journal keeps the batch id), so chunks are large;
    # on a server without the Batch API, the online model's chunks
    @property
    def chunk_requests(self) -> int | None:
        from proctor.models.openai_batch import BATCH_CHUNK

        return BATCH_CHUNK if self.batch_available() else self._online_chunk

    @chunk_requests.setter
    def chunk_requests(self, value: int | None) -> None:
        self._online_chunk = value

    @property
    def large_chunks(self) -> bool:
        return self.batch_available()

    @large_chunks.setter
    def large_chunks(self, value: bool) -> None:  # Model's is an attribute: refused, as a property without setter is
        raise AttributeError("large_chunks follows the Batch API (read only)")

    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[GenerateResult]:
        out: list[list[GenerateResult]] = [[]]
        self.map_chunks("generate", [list(requests)], lambda k, results: out.__setitem__(0, results))
        if progress:
            progress(len(requests))
        return out[0]

    def map_chunks(self, request_type: str, chunks: Sequence[Sequence[Any]], done) -> None:
        """``runs/executor.execute``'s entry point (``models.base.MapsChunks``): all chunks at once."""
        if request_type != "generate" or not self.batch_available():
            online = super().generate if request_type == "generate" else getattr(self, request_type)
            for k, chunk in enumerate(chunks):
                done(k, list(online(list(chunk))))
            return
        for chunk in chunks:
            self.check_generation(chunk)
        self.batches.run(chunks, done)


SELF_CHECK_TEXT = "The capital of France is"


def _split(r: LoglikelihoodRequest) -> tuple[str, str]:
    """(context, continuation) with the context's trailing whitespace moved if the request says so."""
    context, continuation = r.context, r.continuation
    if r.move_whitespace:
        stripped = context.rstrip()
        context, continuation = stripped, context[len(stripped) :] + continuation
    return context, continuation


def _tick(progress: Progress | None, count=lambda item: 1):
    if progress is None:
        return None
    return lambda index, item: progress(count(item))
