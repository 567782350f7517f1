"""A task's requests for the loaded model (phase two's first step, no model call): the audit's model stage, each
prompt rendered, the kind's handler chosen (a choice by lettered generation when asked for, or when the model
cannot score log-likelihoods), and every sample's requests built, images attached, seeded per epoch and
deduplicated. ``engine/runner.py`` runs them.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from proctor.audit import ModelSubject, audit_with_model
from proctor.core.errors import ProctorError
from proctor.core.images import ImageInput
from proctor.core.model_requests import GenerateRequest, LoglikelihoodRequest, Request
from proctor.engine.epochs import seeded
from proctor.engine.prepare import PreparedTask
from proctor.kinds.base import KindHandler
from proctor.kinds.capabilities import (
    PredictsSamples,
    UsesChoiceFormulation,
)
from proctor.kinds.generate import check_window
from proctor.kinds.handlers import kind_handler
from proctor.models.base import Model
from proctor.runs.executor import dedupe

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from proctor.kinds.mc_generate import MultipleChoiceGenerateKind

log = logging.getLogger("proctor.engine.runner")  # the name the console's log lines have always shown


@dataclass
class TaskRequests:
    """A task's requests: per sample, flattened, deduplicated (``mapping``: flat index -> unique index)."""

    prepared: PreparedTask
    handler: KindHandler | PredictsSamples  # a task class (PredictsSamples) makes no requests: the lists are empty
    per_sample: list[list[Request]]
    prompts: list[str]
    flat: list[Request]
    unique: list[Request]
    mapping: list[int]

    @property
    def name(self) -> str:
        return self.prepared.task.spec.name


def _audited_with(model: Model, prepared: PreparedTask) -> PreparedTask:
    """The audit's "model" stage (what only the loaded model tells): its findings join the task's, and are
    printed now, as the stage before the model loaded printed its own."""
    subject = ModelSubject(prepared.task, prepared.use_chat, model, prepared.samples)
    found = audit_with_model(subject, strict=prepared.strict_audit)
    for finding in found:
        if finding.silenced is None:
            log.warning("%s: audit %s", prepared.task.name, finding.text())
    return dataclasses.replace(prepared, findings=prepared.findings + found) if found else prepared


def build_requests(model: Model, prepared: PreparedTask) -> TaskRequests:
    """Render every prompt for this model and turn each sample into its requests (no model call)."""
    spec = prepared.task.spec
    # a handler that only gives the samples' texts (kinds/given_texts) leaves the requests to the kind
    handler: KindHandler | PredictsSamples = (
        prepared.handler if is_custom(prepared.handler) else _kind_handler(model, prepared)
    )
    if prepared.use_chat and not model.has_chat_template:
        raise ProctorError(f"task '{spec.name}' asks for the chat template, but model '{model.name}' has none")
    prepared = _audited_with(model, prepared)
    if has_images(prepared) and not model.supports_images:
        raise ProctorError(
            f"task '{spec.name}' shows images, and model '{model.name}' takes none: run it on a vision-language "
            "model (a local Hugging Face image-text-to-text folder, hf-vision:<folder>, or openai:<name> on a "
            "server that takes images)"
        )
    prompts = [sample.prompt.render(model) if spec.kind != "perplexity" else "" for sample in prepared.samples]
    if is_custom(handler):  # a custom task class calls the model itself: no requests to plan
        if isinstance(
            handler, UsesChoiceFormulation
        ):  # resolved lazily: only choice scoring needs the capability check
            handler.use_choice_formulation(lambda: choice_formulation(model, prepared))
        return TaskRequests(prepared, handler, [], prompts, [], [], [])
    epochs = prepared.epochs
    per_sample = [  # sampled generation: a seed per sample and epoch (engine/epochs.py)
        [
            r
            for e in range(epochs)
            for r in seeded(
                _with_images(handler.requests(spec, sample, text), sample.prompt.images), sample.sample.id, e
            )
        ]
        for sample, text in zip(prepared.samples, prompts)
    ]
    if spec.kind == "generate" and handler.request_type == "generate":
        window = getattr(model, "max_length", None)
        task = prepared.task
        check_window(
            spec,
            window if isinstance(window, int) else None,
            model.name,
            str(task.file) if task.file else None,
            task.lines.get("generation"),
        )
    flat = [r for requests in per_sample for r in requests]
    unique, mapping = dedupe(flat)
    return TaskRequests(prepared, handler, per_sample, prompts, flat, unique, mapping)


def has_images(prepared: PreparedTask) -> bool:
    return any(sample.prompt.images for sample in prepared.samples)


def _with_images(requests: list[Request], images: tuple[ImageInput, ...]) -> list[Request]:
    """The sample's images on each of its requests (they enter the request's identity by digest)."""
    if not images:
        return requests
    return [
        dataclasses.replace(r, images=images) if isinstance(r, (GenerateRequest, LoglikelihoodRequest)) else r
        for r in requests
    ]


def choice_formulation(model: Model, prepared: PreparedTask) -> MultipleChoiceGenerateKind | None:
    """The lettered generation formulation of a choice (``tasks/mc_generate.py``) when it is asked
    for, or when the model cannot score log-likelihoods (a chat-only API); else None."""
    fmt = prepared.mc_format
    if fmt == "auto":
        scores = model.supports_loglikelihood and (model.supports_image_loglikelihood or not has_images(prepared))
        fmt = "loglikelihood" if scores else "generate"
    elif fmt == "loglikelihood" and not has_images(prepared) and not model.supports_loglikelihood:
        # asked for by name: an error, never the fallback the flag is there to rule out (with images the
        # backend refuses first, before any request)
        why = getattr(model, "loglikelihood_reason", None) or "it has no log-likelihoods"
        raise ProctorError(
            f"task '{prepared.task.spec.name}': --mc-format loglikelihood, but model '{model.name}' cannot score "
            f"log-likelihoods ({why}); run it with --mc-format generate, or fix the server"
        )
    if fmt != "generate":
        return None
    from proctor.kinds.mc_generate import MultipleChoiceGenerateKind

    return MultipleChoiceGenerateKind(
        lambda prompt: prompt.render(model), prepared.mc_shuffle_seed, prepared.lettered_max_tokens
    )


def _kind_handler(model: Model, prepared: PreparedTask) -> KindHandler:
    """The kind's handler; multiple choice by generation when asked, or when the model cannot score."""
    spec = prepared.task.spec
    if spec.kind == "multiple_choice":
        generate = choice_formulation(model, prepared)
        if generate is not None:
            return generate
    if spec.kind == "perplexity" and not model.supports_loglikelihood:
        # no generation formulation gives a perplexity: refuse rather than report a wrong number
        raise ProctorError(
            f"task '{spec.name}' is a perplexity task and needs log-likelihoods, which model '{model.name}' cannot "
            "score (a chat-only or log-prob-less server); run it on a backend with prompt log-probs"
        )
    return kind_handler(spec.kind)


def is_custom(handler: object) -> TypeIs[PredictsSamples]:
    """A task class that calls the model itself (``kinds/capabilities.PredictsSamples``)."""
    return isinstance(handler, PredictsSamples)
