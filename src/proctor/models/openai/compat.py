"""A model behind an OpenAI-compatible HTTP API (vLLM, SGLang, llama.cpp, TGI, transformers serve, hosted).

``--model openai:<name> --base-url http://127.0.0.1:8000/v1``; the API key is read from the
environment variable named by ``api_key_env`` (default ``OPENAI_API_KEY``) and sent only in the
``Authorization`` header: it appears in no fingerprint, result, log or error message.

- text prompts go to ``/completions`` (or, with ``endpoint="chat"``, to ``/chat/completions`` as
  one user message); chat prompts (tasks using the chat template) always go to ``/chat/completions``
  and the server applies its own template.
- images (vision tasks) go to ``/chat/completions`` as ``image_url`` content parts (base64 data URIs);
  image multiple-choice tasks run through their generation formulation.

Here: ``OpenAIModel`` (settings, identity, usage and cost, generation requests and replies) and
``BatchedOpenAIModel`` (its generation through the Batch API). Log-likelihoods are the ``OpenAIScoring``
mixin (``openai_scoring.py``); chat prompts and image parts are ``openai_messages.py``; HTTP (retries,
concurrency, usage) is ``openai_http.py``.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence, cast

from proctor.core.errors import ProctorError
from proctor.core.model_requests import GenerateRequest, GenerateResult, Request
from proctor.core.redact import mask_url_credentials
from proctor.models.base import Model, Progress, Result
from proctor.models.openai.http import ApiClient, RequestBody, ServerReply, map_progress
from proctor.models.openai.messages import decode_chat, encode_chat, with_image_parts
from proctor.models.openai.reply_tallies import token_count
from proctor.models.openai.scoring import OpenAIScoring
from proctor.models.reply_checks import (
    check_generated,
    check_usage,
    choice_reasoning,
    choice_text,
    ordered_choices,
)

LOGLIKELIHOOD_MODES = ("auto", "echo", "prompt_logprobs", "top_logprobs", "none")
ENDPOINTS = ("completions", "chat")


def trim_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut at the first stop string (servers such as transformers serve keep it or ignore ``stop``)."""
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


ANSWERED = frozenset({"stop", "length", "eos", "end_turn", "stop_sequence", "max_tokens", "eos_token"})


def withheld(choice: Mapping[str, object], reason: str | None) -> str | None:
    """Why a choice holds no answer, in the server's words: a refusal, tool calls in place of content, a finish
    reason other than a stop or the token limit (content_filter); None for an answer. Not an error: the reply is
    well formed, and runs/outcome_tally.py counts these per task."""
    message = choice.get("message")
    if isinstance(message, Mapping):
        if message.get("refusal"):
            return "refusal " + str(message["refusal"])[:40]
        if message.get("tool_calls") and not message.get("content"):
            return "tool_calls"
    if reason is not None and reason not in ANSWERED:
        return f"finish_reason {reason}"
    return None


class OpenAIModel(OpenAIScoring, Model):
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
        deadline: float = 600.0,
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
        # options that had no effect here (a local model's --dtype, --device, --batch-size, --max-length): the run
        # warns of each (Model.ignored_options)
        self.ignored_options = {k: v for k, v in ignored.items() if v is not None}
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
            self.base_url,
            api_key_env=api_key_env,
            timeout=timeout,
            deadline=deadline,
            max_retries=max_retries,
            backoff=backoff,
            concurrency=concurrency,
        )
        self.chunk_requests = max(64, 4 * self.client.concurrency * self.batch)
        # the Batch API (models/openai/batch.py): used by the BatchedOpenAIModel that load_model / batched() give
        self.batch_api = bool(batch_api)
        self.batch_poll = float(batch_poll)
        self.batch_dir = batch_dir
        if not isinstance(batch_api, bool):
            raise ProctorError(f"batch_api must be true or false, got {batch_api!r}")
        if self.batch_poll < 0:
            raise ProctorError(f"batch_poll must be >= 0 seconds, got {batch_poll}")
        self._mode: str | None = None
        self._mode_reason = ""
        self._fallback = False  # the self-check (not a setting) found the server unable to score
        self._lists_ok = True
        self._batch_checked = False  # a batch's numbers compared with the same prompts sent alone (scoring.py)
        self._min_tokens_ok = True  # "min_tokens": 1 keeps end-of-sequence from swallowing the one token asked for

    # ------------------------------------------------------------------ identity
    @property
    def fingerprint(self) -> dict[str, object]:
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
    def server_chat(self) -> str | None:
        if self.endpoint != "chat":
            return None
        return (
            "--model-arg endpoint=chat sends each prompt as a user message, to which the server applies its own chat "
            "template"
        )

    @property
    def has_chat_template(self) -> bool:
        return True  # the server applies its own

    def apply_chat_template(self, messages: Sequence[Mapping[str, object]]) -> str:
        return encode_chat(messages)

    @property
    def supports_images(self) -> bool:
        return True  # sent as image_url content parts; a server without a vision model refuses them

    def image_prompt(self, text: str, n_images: int) -> str:
        return text  # the images go ahead of the text as content parts of one user message

    # ------------------------------------------------------------------ usage and cost
    def usage(self) -> dict[str, int] | None:
        return self.client.usage.snapshot()

    def reply_origins(self) -> dict[str, dict[str, int]] | None:
        return self.client.origins.snapshot()

    def estimated_cost(self, usage: Mapping[str, float]) -> float | None:
        price_in, price_out = self.prices
        if price_in is None and price_out is None:
            return None
        return round(
            (usage.get("prompt_tokens", 0) * (price_in or 0.0) + usage.get("completion_tokens", 0) * (price_out or 0.0))
            / 1e6,
            6,
        )

    # ------------------------------------------------------------------ generation
    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[GenerateResult]:
        self.check_generation(requests)
        return self.client.map(self._generate_one, list(requests), map_progress(progress))

    def check_generation(self, requests: Sequence[GenerateRequest]) -> None:
        """Refuse what the API cannot do, before anything is sent."""
        for r in requests:
            if r.num_beams > 1 or r.no_repeat_ngram_size:
                raise ProctorError(
                    f"model '{self.name}' (OpenAI-compatible API) cannot do beam search or no_repeat_ngram_size"
                )
            if r.top_k is not None or r.repetition_penalty != 1.0:
                raise ProctorError(
                    f"model '{self.name}' (OpenAI-compatible API) takes neither top_k nor "
                    "repetition_penalty; use the hf or vllm backend"
                )

    def _generate_one(self, r: GenerateRequest) -> GenerateResult:
        call = self.generation_call(r)
        if isinstance(call, GenerateResult):
            return call
        path, body = call
        return self.generation_result(r, path, self.client.post(path, body))

    def generation_call(self, r: GenerateRequest) -> tuple[str, RequestBody] | GenerateResult:
        """The endpoint path and JSON body that answer ``r`` (a result straight away when nothing is to be sent)."""
        if r.max_tokens <= 0:
            return GenerateResult("", "length", 0, 0)
        params: dict[str, object] = {
            "model": self.model,
            "max_tokens": r.max_tokens,
            "temperature": r.temperature,
            "seed": r.seed,
        }
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

    def generation_result(self, r: GenerateRequest, path: str, data: ServerReply) -> GenerateResult:
        """``r``'s result from the server's reply ``data`` to ``generation_call(r)``."""
        where = self._where(path, r.prompt)
        choice = ordered_choices(data, 1, where)[0]
        text, reason = choice_text(choice, path == "/chat/completions", where, "choices[0]")
        reasoning = choice_reasoning(choice, path == "/chat/completions", where, "choices[0]")
        check_generated(text or reasoning or "", reason, r.max_tokens, where, "choices[0]")
        check_usage(data, where)
        text, stopped = trim_at_stop(text, r.stop)
        finish = "length" if reason == "length" and not stopped else "stop"
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        tokens_in, tokens_out = token_count(usage.get("prompt_tokens")), token_count(usage.get("completion_tokens"))
        return GenerateResult(
            text, finish, tokens_in, tokens_out, reasoning=reasoning, withheld=withheld(choice, reason)
        )

    def batched(self) -> "BatchedOpenAIModel":
        """This model with its generation sent through the server's Batch API (``models/openai/batch.py``):
        the same fingerprint, client and usage; log-likelihoods still go one request at a time."""
        if isinstance(self, BatchedOpenAIModel):
            return self
        return BatchedOpenAIModel.around(self)

    def chat(
        self,
        messages: Sequence[Mapping[str, object]],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> str:
        """One chat reply (for judges)."""
        return self.generate([GenerateRequest(encode_chat(messages), max_tokens, (), temperature, 1.0, seed)])[0].text

    def close(self) -> None:
        self.client.close()


class BatchedOpenAIModel(OpenAIModel):
    """``OpenAIModel`` whose generation goes through the server's Batch API (``models/openai/batch.py``): every
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
        from proctor.models.openai.batch import BatchRunner

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
        from proctor.models.openai.batch import BATCH_CHUNK

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
        out: list[Sequence[Result]] = [[]]
        self.map_chunks("generate", [list(requests)], lambda k, results: out.__setitem__(0, results))
        if progress:
            progress(len(requests))
        return cast("list[GenerateResult]", out[0])  # the results of a "generate" chunk, as a list

    def map_chunks(
        self, request_type: str, chunks: Sequence[Sequence[Request]], done: Callable[[int, Sequence[Result]], None]
    ) -> None:
        """``runs/executor.execute``'s entry point (``models.base.MapsChunks``): all chunks at once."""
        if request_type != "generate" or not self.batch_available():
            online = super().generate if request_type == "generate" else getattr(self, request_type)
            for k, chunk in enumerate(chunks):
                done(k, list(online(list(chunk))))
            return
        generations = cast("Sequence[Sequence[GenerateRequest]]", chunks)  # the chunks of a "generate" call
        for chunk in generations:
            self.check_generation(chunk)
        self.batches.run(generations, done)
