"""The model backend contract: three batched calls and a fingerprint."""

from __future__ import annotations

import abc
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from proctor.core.chat_reply import ChatReplyEnd
from proctor.core.model_requests import (
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    Request,
    RollingLoglikelihoodRequest,
    RollingLoglikelihoodResult,
)

Progress = Callable[[int], None]  # called with the number of requests just finished
# what a model call answers, one per request: the result type of the request's own type
Result = LoglikelihoodResult | GenerateResult | RollingLoglikelihoodResult


class Model(abc.ABC):
    """A language model as proctor sees it.

    Backends answer batches in any internal order but return results in request order.
    """

    name: str = "model"
    # Optional sizing the engine reads when it cuts requests into store-committed chunks
    # (runs/executor.default_chunk_size): requests per model call, and whether that may exceed
    # the 64-request cap (vLLM batches within one call); or, per request type, exactly the
    # requests per call a backend sized for its device (``chunk_sizes``, e.g. the HF backend on a GPU).
    chunk_requests: int | None = None
    large_chunks: bool = False
    chunk_sizes: dict[str, int] | None = None

    @property
    @abc.abstractmethod
    def fingerprint(self) -> dict[str, object]:
        """Model identity, revision, dtype and every setting that changes outputs."""

    @abc.abstractmethod
    def loglikelihood(
        self, requests: Sequence[LoglikelihoodRequest], progress: Progress | None = None
    ) -> list[LoglikelihoodResult]: ...

    @abc.abstractmethod
    def generate(
        self, requests: Sequence[GenerateRequest], progress: Progress | None = None
    ) -> list[GenerateResult]: ...

    @abc.abstractmethod
    def rolling_loglikelihood(
        self, requests: Sequence[RollingLoglikelihoodRequest], progress: Progress | None = None
    ) -> list[RollingLoglikelihoodResult]: ...

    def apply_chat_template(self, messages: Sequence[dict[str, Any]]) -> str:
        """Render chat messages to the prompt text the model expects (generation prompt added)."""
        raise NotImplementedError(f"{type(self).__name__} has no chat template")

    @property
    def has_chat_template(self) -> bool:
        return False

    def special_tokens(self) -> tuple[str, ...]:
        """The texts the tokenizer reads as control tokens wherever they occur ('<|endoftext|>', '<|im_end|>'),
        for the audit's ``text.special-tokens``; () where the backend cannot tell (a server's model)."""
        return ()

    def chat_reply_end(self) -> ChatReplyEnd | None:
        """The token the chat template closes a reply with, beside the model's end-of-sequence tokens (the
        audit's ``chat.base-model``); None where the backend cannot tell (a server's model)."""
        return None

    @property
    def supports_images(self) -> bool:
        """True for a backend that takes images with a prompt (a vision-language model)."""
        return False

    @property
    def supports_image_loglikelihood(self) -> bool:
        """True when log-likelihoods can be scored with images in the context; otherwise image
        multiple-choice tasks use their generation formulation."""
        return False

    def image_prompt(self, text: str, n_images: int) -> str:
        """A plain-text prompt with the model's placeholders for ``n_images`` images."""
        raise NotImplementedError(f"{type(self).__name__} takes no images")

    @property
    def supports_loglikelihood(self) -> bool:
        """False for a backend that cannot score log-likelihoods (a chat-only API): multiple-choice
        tasks then use their generation formulation."""
        return True

    @property
    def loglikelihood_reason(self) -> str | None:
        """Why this backend can or cannot score log-likelihoods (a server's self-check verdict), for
        results.json's ``mc_format_reason``; None when there is nothing to say (a local model scores)."""
        return None

    # options the backend took and ignored (a local model's --dtype on a served model): each warned as having had
    # no effect
    ignored_options: Mapping[str, object] = {}

    @property
    def server_chat(self) -> str | None:
        """Why the server applies its own chat template to every generation prompt whatever proctor's chat setting
        (a chat endpoint: each prompt goes as a user message), or None where prompts reach the model as sent."""
        return None

    @property
    def loglikelihood_fallback(self) -> bool:
        """True when an automatic check, not a setting, found the backend unable to score: multiple-choice
        tasks then fall back to lettered generation, with a warning."""
        return False

    def usage(self) -> Mapping[str, float] | None:
        """Counters of work sent to a paid/remote service (requests, tokens), or None."""
        return None

    def estimated_cost(self, usage: Mapping[str, float]) -> float | None:
        """Estimated cost of ``usage`` (a difference of two ``usage()`` snapshots), or None."""
        return None

    def reply_origins(self) -> Mapping[str, Mapping[str, int]] | None:
        """A served model's replies counted by the model each names and its ``system_fingerprint``
        (``{"models": {...}, "system_fingerprints": {...}}``), or None where replies name no model."""
        return None

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        """How many tokens this model's tokenizer makes of each text (no special tokens), or None where the model
        has no tokenizer at hand (a remote server): what a reasoning model's thinking is counted in."""
        return None

    def close(self) -> None:  # noqa: B027 - optional: a backend holding nothing frees nothing
        """Free resources (GPU memory, servers)."""


@runtime_checkable
class MapsChunks(Protocol):
    """A model that runs many chunks at once (a pool of replicas, ``engine/distributed.py``).

    ``runs/executor.execute`` hands it every chunk of one request type; it calls
    ``done(index, results)`` in the caller's thread once per chunk, in any order.
    """

    def map_chunks(
        self, request_type: str, chunks: Sequence[Sequence[Request]], done: Callable[[int, Sequence[Result]], None]
    ) -> None: ...


@runtime_checkable
class ConvertsToModel(Protocol):
    """An object that runs as a proctor ``Model`` once converted (a steering pipeline):
    ``api.evaluate(model=...)`` calls ``as_model()``."""

    def as_model(self) -> Model: ...


def usage_delta(model: Model, before: Mapping[str, float] | None) -> dict[str, float] | None:
    """What ``model`` was sent since the ``usage()`` snapshot ``before`` (with its estimated cost), or None."""
    after = model.usage()
    if before is None or after is None:
        return None
    delta = {k: after[k] - before.get(k, 0) for k in after if isinstance(after[k], (int, float))}
    cost = model.estimated_cost(delta)
    if cost is not None:
        delta["estimated_cost"] = cost
    return delta
