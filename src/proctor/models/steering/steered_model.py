"""A ``SteeringPipeline`` as a proctor ``Model``: ordinary tasks run on the steered model.

The pipeline's base must be a proctor ``HFModel``. Every call runs that backend's own code
(packed log-likelihoods, its greedy decoder, transformers' sampling) on the pipeline's model — the
base model, or a structural control's patched copy — inside ``pipeline.forward_steered()``, so
state hooks and output biases apply to log-likelihoods and generation alike, and a pipeline whose
controls do nothing gives exactly the base backend's numbers. Input controls act on chat
messages: they apply where a task renders a chat template (``apply_chat_template``); plain-text
prompts reach the model as written. Controls take no per-example arguments here (each uses its
own settings). The fingerprint adds the pipeline's configuration, so the run store and the cache
never mix steered and unsteered answers.
``--model steer:FILE.py:NAME`` loads one (``proctor.dialects.aisteer.steer_backend``).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Protocol, Sequence, TypeVar, cast

from proctor.core.chat_reply import ChatReplyEnd
from proctor.core.errors import ModelLoadError
from proctor.core.model_requests import (
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    RollingLoglikelihoodRequest,
    RollingLoglikelihoodResult,
)
from proctor.models.base import Model, Progress

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from proctor.models.hf.model import HFModel
    from proctor.models.steering.controls import Messages
    from proctor.models.steering.generation import Prompt

Request = TypeVar("Request", LoglikelihoodRequest, GenerateRequest, RollingLoglikelihoodRequest)


class StoreExecutor(Protocol):
    """What a pipeline's ``executor`` offers: ``proctor.runs.executor.ModelExecutor`` (or the aisteer
    dialect's ``UseCaseExecutor`` around one), which this layer does not import."""

    @property
    def stored(self) -> bool: ...

    def for_model(self, model: Model) -> StoreExecutor: ...


class Steering(Protocol):
    """What this module uses of a ``SteeringPipeline`` (``pipeline.py``, which imports this module: named
    here, not imported, so the two modules form no import cycle)."""

    base: HFModel | PreTrainedModel
    name: str
    steered: bool
    executor: StoreExecutor | None

    def config(self) -> dict[str, object]: ...

    def adapt(self, prompt: Prompt) -> Messages: ...

    def forward_steered(self) -> AbstractContextManager[PreTrainedModel]: ...

    def cleanup(self) -> None: ...


class SteeredModel(Model):
    """``pipeline`` as a ``Model``; ``owns``: ``close()`` cleans the pipeline up (and closes its base)."""

    def __init__(self, pipeline: Steering, owns: bool = False) -> None:
        from proctor.models.hf.model import HFModel

        if not isinstance(pipeline.base, HFModel):
            raise ModelLoadError(
                "a steering pipeline runs as a proctor model only on a proctor HFModel base "
                f"(a --model string or HFModel), not a {type(pipeline.base).__name__}"
            )
        self.pipeline, self.owns = pipeline, owns
        self.base: HFModel = pipeline.base
        self.name = f"{self.base.name}+{pipeline.name}"

    # ------------------------------------------------------------------ identity
    @property
    def fingerprint(self) -> dict[str, object]:
        return {**self.base.fingerprint, "model": self.name, "steering": self.pipeline.config()}

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        return self.base.tokenizer

    @property
    def batch_size(self) -> int | str:
        return self.base.batch_size

    @property
    def chunk_requests(self) -> int | None:
        return self.base.chunk_requests

    @chunk_requests.setter
    def chunk_requests(
        self, value: int | None
    ) -> None:  # Model's is an attribute: refused, as a property without setter is
        raise AttributeError("chunk_requests is the base model's (read only)")

    @property
    def has_chat_template(self) -> bool:
        return self.base.has_chat_template

    def apply_chat_template(self, messages: Sequence[dict[str, str]]) -> str:
        return self.base.apply_chat_template(self.pipeline.adapt(list(messages)))

    def chat_reply_end(self) -> ChatReplyEnd | None:
        return self.base.chat_reply_end()

    def special_tokens(self) -> tuple[str, ...]:
        return self.base.special_tokens()

    # ------------------------------------------------------------------ the three calls
    def _run(self, call: str, requests: Sequence[Request], progress: Progress | None) -> list[object]:
        with self.pipeline.forward_steered() as model:
            backend = copy.copy(self.base)  # the base backend's code, on the pipeline's model
            backend.model = model
            results: list[object] = getattr(backend, call)(requests, progress)
            return results

    def loglikelihood(
        self, requests: Sequence[LoglikelihoodRequest], progress: Progress | None = None
    ) -> list[LoglikelihoodResult]:
        return cast("list[LoglikelihoodResult]", self._run("loglikelihood", requests, progress))

    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[GenerateResult]:
        return cast("list[GenerateResult]", self._run("generate", requests, progress))

    def rolling_loglikelihood(
        self, requests: Sequence[RollingLoglikelihoodRequest], progress: Progress | None = None
    ) -> list[RollingLoglikelihoodResult]:
        return cast("list[RollingLoglikelihoodResult]", self._run("rolling_loglikelihood", requests, progress))

    def close(self) -> None:
        if self.owns:
            self.pipeline.cleanup()
            self.base.close()


def engine_model(pipeline: Steering, runtime: Sequence[object] | None) -> StoreExecutor | None:
    """The pipeline as a proctor model on the executor it was given, when its requests should go
    through a run store: ``pipeline.executor`` set with a store (a use case run on this pipeline's
    ``SteeredModel``, as a ``Benchmark`` configuration is), an ``HFModel`` base, no per-example
    runtime arguments (which a ``Model`` cannot take). Otherwise None, and the pipeline generates
    directly. An executor already on this pipeline's steered model is used as it is."""
    from proctor.models.hf.model import HFModel

    executor = pipeline.executor
    if executor is None or not executor.stored or not isinstance(pipeline.base, HFModel) or not pipeline.steered:
        return None
    if runtime is not None and any(runtime):
        return None
    model = getattr(executor, "model", None)
    if isinstance(model, SteeredModel) and model.pipeline is pipeline:
        return executor
    return executor.for_model(SteeredModel(pipeline))
