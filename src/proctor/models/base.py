"""The model backend contract: three batched calls and a fingerprint."""

from __future__ import annotations

import abc
from typing import Callable, Sequence

from proctor.core.model_requests import (
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    RollingLoglikelihoodRequest,
    RollingLoglikelihoodResult,
)

Progress = Callable[[int], None]  # called with the number of requests just finished


class Model(abc.ABC):
    """A language model as proctor sees it.

    Backends answer batches in any internal order but return results in request order.
    """

    name: str = "model"

    @property
    @abc.abstractmethod
    def fingerprint(self) -> dict:
        """Model identity, revision, dtype and every setting that changes outputs."""

    @abc.abstractmethod
    def loglikelihood(
        self, requests: Sequence[LoglikelihoodRequest], progress: Progress | None = None
    ) -> list[LoglikelihoodResult]: ...

    @abc.abstractmethod
    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[GenerateResult]: ...

    @abc.abstractmethod
    def rolling_loglikelihood(
        self, requests: Sequence[RollingLoglikelihoodRequest], progress: Progress | None = None
    ) -> list[RollingLoglikelihoodResult]: ...

    def apply_chat_template(self, messages: Sequence[dict]) -> str:
        """Render chat messages to the prompt text the model expects (generation prompt added)."""
        raise NotImplementedError(f"{type(self).__name__} has no chat template")

    @property
    def has_chat_template(self) -> bool:
        return False

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

    def usage(self) -> dict | None:
        """Counters of work sent to a paid/remote service (requests, tokens), or None."""
        return None

    def estimated_cost(self, usage: dict) -> float | None:
        """Estimated cost of ``usage`` (a difference of two ``usage()`` snapshots), or None."""
        return None

    def close(self) -> None:
        """Free resources (GPU memory, servers)."""
