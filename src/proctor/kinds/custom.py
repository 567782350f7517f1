"""User task classes: override the per-batch prediction, call the model directly.

A task's ``task_class`` (a GLM-130B ``module:`` written for proctor; classes written for GLM's own
``evaluation`` package run through ``proctor.dialects.glm``) names a subclass of :class:`MultipleChoiceTask` or
:class:`GenerationTask`. proctor prepares the samples as usual (data, prompts, targets), hands them to
``predict_single_batch`` in batches of ``micro_batch_size`` and scores the predictions with the task's
metrics. Inside, ``self.model`` is a :class:`TaskModel`: the model's own calls and attributes, plus
``cond_log_prob(contexts, choices)`` and ``generate_text(prompts, **params)`` (GLM-130B's names, for task
code written that way).
"""

from __future__ import annotations

import importlib
import inspect
import math
import numbers
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from pydantic import BaseModel

from proctor.core.errors import TaskDefinitionError
from proctor.core.model_requests import GenerateRequest, GenerateResult, LoglikelihoodRequest
from proctor.core.task_spec import TaskSpec
from proctor.core.user_code import (
    CODE_KEY,
    TRUST,
    check_installed_module,
    class_in_file,
    dotted_module_file,
    inside,
    located,
    refusal,
)
from proctor.core.user_errors import call_user, definition_site
from proctor.kinds.base import SampleDetails
from proctor.kinds.capabilities import Executor
from proctor.kinds.given_texts import GivenTextsTask
from proctor.prompts.builder import PreparedSample

if TYPE_CHECKING:
    from proctor.kinds.mc_generate import MultipleChoiceGenerateKind
    from proctor.models.base import Model

# one entry of the batch a task class's predict_single_batch receives (GLM-130B's shape): the rendered "inputs",
# the sample's "id" and "fields", and "choices"/"label" (multiple choice) or "targets" (generation)
BatchItem = dict[str, Any]


class TaskModel:
    """The model as a task class sees it: every attribute and call of the wrapped backend, plus two
    batch helpers. Kept off the backend contract (``models.base.Model``) since only task code uses them."""

    def __init__(self, backend: Model) -> None:
        self._backend = backend  # not "model": token-level code reads a backend's torch module as .model

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def cond_log_prob(
        self,
        contexts: Sequence[str],
        choices: Sequence[Sequence[str]],
        *,
        move_whitespace: bool = True,
        max_length: int | None = None,
    ) -> list[list[float]]:
        """Summed log-prob of each choice given its context."""
        flat = [
            LoglikelihoodRequest(ctx, choice, move_whitespace, max_length)
            for ctx, options in zip(contexts, choices)
            for choice in options
        ]
        results = iter(self._backend.loglikelihood(flat))
        return [[next(results).logprob for _ in options] for options in choices]

    def generate_text(self, prompts: Sequence[str], **params: Any) -> list[str]:
        """Generated texts; ``stop`` may be one string or several."""
        if "stop" in params and isinstance(params["stop"], str):
            params["stop"] = (params["stop"],)
        elif "stop" in params:
            params["stop"] = tuple(params["stop"])
        return [r.text for r in self._backend.generate([GenerateRequest(p, **params) for p in prompts])]


def task_model(model: Model | TaskModel) -> TaskModel:
    return model if isinstance(model, TaskModel) else TaskModel(model)


class CustomTask:
    """Common machinery; subclass :class:`MultipleChoiceTask` or :class:`GenerationTask`, not this."""

    kind: str = ""
    request_type = "custom"

    def __init__(self, spec: TaskSpec, options: Mapping[str, Any] | BaseModel | None = None) -> None:
        self.spec = spec
        # a task file's task_options (a mapping) for a user's class; a dialect handler's typed options model
        self.options: Any = options if isinstance(options, BaseModel) else dict(options or {})
        self.model: Any = None
        self.resources: dict[str, Any] = {}  # the loaded task's resources (core.task.Task.resources)
        batch = (
            getattr(options, "micro_batch_size", 1)
            if isinstance(options, BaseModel)
            else self.options.get("micro_batch_size", 1)
        )
        self.micro_batch_size = max(1, int(batch or 1))

    # ---------------------------------------------------------------- for subclasses
    def item(self, prepared: PreparedSample, prompt: str) -> BatchItem:
        """What one batch entry holds: the rendered ``inputs``, kind-specific fields, and the row."""
        return {"inputs": prompt, "id": prepared.sample.id, "fields": dict(prepared.sample.fields)}

    def predict_single_batch(self, batch: list[BatchItem]) -> Sequence[object]:
        raise NotImplementedError

    def outcome(self, prepared: PreparedSample, prediction: object) -> tuple[object, SampleDetails]:
        raise NotImplementedError

    # ---------------------------------------------------------------- called by the runner
    def predict_samples(
        self, samples: Sequence[PreparedSample], prompts: Sequence[str], executor: Executor
    ) -> list[tuple[object, SampleDetails]]:
        """``kinds/capabilities.PredictsSamples``: batches of ``micro_batch_size`` through ``predict_single_batch``
        (which calls ``self.model`` directly)."""
        self.model = task_model(executor.model)
        out: list[tuple[object, SampleDetails]] = []
        for start in range(0, len(samples), self.micro_batch_size):
            chunk = list(
                zip(samples[start : start + self.micro_batch_size], prompts[start : start + self.micro_batch_size])
            )
            batch = [self.item(sample, prompt) for sample, prompt in chunk]
            name = f"{type(self).__name__}.predict_single_batch"
            predictions = call_user(self.predict_single_batch, name, batch, field="task_class")
            if not isinstance(predictions, (list, tuple)):
                file, line = definition_site(type(self).predict_single_batch)
                raise TaskDefinitionError(
                    f"{name} returned {type(predictions).__name__} {predictions!r:.60}; it must return a list "
                    "with one prediction per item",
                    file=file,
                    line=line,
                    field="task_class",
                )
            predictions = list(predictions)
            if len(predictions) != len(batch):
                raise TaskDefinitionError(
                    f"{type(self).__name__}.predict_single_batch returned "
                    f"{len(predictions)} predictions for {len(batch)} items",
                    field="task_class",
                )
            out += [self.outcome(sample, prediction) for (sample, _), prediction in zip(chunk, predictions)]
            executor.progress(len(batch))
        return out


class MultipleChoiceTask(CustomTask):
    """Default prediction: the summed log-prob of each choice (``model.cond_log_prob``).

    ``predict_single_batch`` may return, per item, a list of choice scores or the chosen index.
    """

    kind = "multiple_choice"
    _choice_formulation: Callable[[], MultipleChoiceGenerateKind | None] | None = None
    mc_format: str | None = None  # "generate" once the lettered formulation answered (reported in results)

    def use_choice_formulation(self, resolve: Callable[[], MultipleChoiceGenerateKind | None]) -> None:
        """Called by the runner: ``resolve()`` gives the lettered generation formulation, or None."""
        self._choice_formulation = resolve

    def predict_samples(
        self, samples: Sequence[PreparedSample], prompts: Sequence[str], executor: Executor
    ) -> list[tuple[object, SampleDetails]]:
        # Only the default prediction (summed log-probs) has a generation twin; a subclass's own
        # predict_single_batch runs as written (its cond_log_prob calls fail clearly on a chat-only model).
        own = type(self).predict_single_batch is not MultipleChoiceTask.predict_single_batch
        generate = None if own or self._choice_formulation is None else self._choice_formulation()
        if generate is None:
            return super().predict_samples(samples, prompts, executor)
        self.model, self.mc_format = task_model(executor.model), "generate"
        requests = [generate.requests(self.spec, s, p)[0] for s, p in zip(samples, prompts)]
        results = executor.model.generate(requests, executor.progress)
        return [generate.outcome(self.spec, s, [r]) for s, r in zip(samples, results)]

    def item(self, prepared: PreparedSample, prompt: str) -> BatchItem:
        gold = prepared.gold
        return {**super().item(prepared, prompt), "choices": list(prepared.choices), "label": gold[0] if gold else None}

    def predict_single_batch(self, batch: list[BatchItem]) -> Sequence[object]:
        delimiter = self.spec.target_delimiter
        scores: list[list[float]] = self.model.cond_log_prob(
            [b["inputs"] for b in batch],
            [[delimiter + c for c in b["choices"]] for b in batch],
            move_whitespace=self.spec.move_whitespace,
            max_length=self.spec.max_length,
        )
        return scores

    def outcome(self, prepared: PreparedSample, prediction: object) -> tuple[object, SampleDetails]:
        from proctor.kinds.multiple_choice import choice_outcome

        n = len(prepared.choices)
        if isinstance(prediction, (list, tuple)):
            if len(prediction) != n:
                raise TaskDefinitionError(
                    f"a prediction has {len(prediction)} scores for {n} choices", field="task_class"
                )
            try:
                scores = [float(x) for x in prediction]
            except (TypeError, ValueError):
                raise TaskDefinitionError(
                    f"a prediction's choice scores must be numbers, got {list(prediction)!r:.80}", field="task_class"
                ) from None
        else:
            if (
                isinstance(prediction, bool)
                or not isinstance(prediction, numbers.Real)
                or not math.isfinite(prediction)
                # typeshed's numbers.Real declares no __int__; int() takes every Real
                or prediction != int(prediction)  # type: ignore[call-overload]
            ):
                raise TaskDefinitionError(
                    f"a prediction is a choice index or a list of choice scores, got {prediction!r:.80}",
                    field="task_class",
                )
            index = int(prediction)  # type: ignore[call-overload]  # as above: int() takes every Real
            if not 0 <= index < n:
                raise TaskDefinitionError(
                    f"predicted choice {index} is out of range for {n} choices", field="task_class"
                )
            scores = [0.0 if i == index else float("-inf") for i in range(n)]
        return choice_outcome(self.spec, prepared, scores, [0] * n, [False] * n)


class GenerationTask(CustomTask):
    """Default prediction: ``model.generate_text`` with the task's generation settings."""

    kind = "generate"

    def item(self, prepared: PreparedSample, prompt: str) -> BatchItem:
        return {**super().item(prepared, prompt), "targets": list(prepared.references)}

    def generation_params(self) -> dict[str, Any]:
        g = self.spec.generation
        return {
            "max_tokens": g.max_tokens,
            "stop": tuple(g.stop),
            "temperature": g.temperature,
            "top_p": g.top_p,
            "seed": g.seed,
            "num_beams": g.num_beams,
            "length_penalty": g.length_penalty,
            "no_repeat_ngram_size": g.no_repeat_ngram_size,
            "min_tokens": g.min_tokens,
            "max_length": self.spec.max_length,
        }

    def predict_single_batch(self, batch: list[BatchItem]) -> Sequence[object]:
        texts: list[str] = self.model.generate_text([b["inputs"] for b in batch], **self.generation_params())
        return texts

    def outcome(self, prepared: PreparedSample, prediction: object) -> tuple[object, SampleDetails]:
        from proctor.kinds.generate import GenerateKind

        if not hasattr(self, "_kind"):
            self._kind = GenerateKind()
        outcome, record = self._kind.outcome(self.spec, prepared, [GenerateResult(str(prediction), "custom", 0, 0)])
        record.pop("completion_tokens", None)
        return outcome, record


# -------------------------------------------------------------------- loading
BUILTIN = "proctor."  # classes of proctor's own modules (the dialects' handlers) need no consent


def class_from_file(reference: str, base_dir: Path, field: str) -> type:
    """``file.py:Class``, the file in ``base_dir`` (the task file's folder): a path that climbs out of
    it (``..``, an absolute path elsewhere, a symlink) is refused."""
    path_text, _, class_name = reference.rpartition(":")
    file = Path(path_text).expanduser()
    file = file if file.is_absolute() else base_dir / file
    if not file.is_file():
        raise TaskDefinitionError(f"task class file not found: {file}", field=field)
    if not inside(file, base_dir):
        raise TaskDefinitionError(
            f"{file} is outside the task's folder {base_dir.resolve()}; task code is read from the task's folder only",
            field=field,
        )
    return class_in_file(file, class_name, field=field)


def resolve_task_class(reference: str, base_dir: Path, field: str = "task_class") -> type:
    """``file.py:Class`` (relative to the task file), or a dotted ``pkg.mod.Class``: proctor's own
    classes by import; others first as a file below the task file's folder (the dotted path may start
    at a parent, as GLM's module paths do, but the file must lie in the task's folder), then as an
    installed module."""
    if ":" in reference:
        return class_from_file(reference, base_dir, field)
    module_path, _, class_name = reference.rpartition(".")
    if not module_path:
        raise TaskDefinitionError(f"'{reference}' is not 'package.module.Class' or 'file.py:Class'", field=field)
    if not reference.startswith(BUILTIN):
        found = dotted_module_file(module_path, base_dir, field=field)
        if found is not None:
            return class_in_file(found[1], class_name, field=field)
        check_installed_module(module_path, base_dir, field=field)
    try:
        module = importlib.import_module(module_path)
    except ImportError as exc:
        raise TaskDefinitionError(
            f"cannot find the task class '{reference}': no {Path(*module_path.split('.')).with_suffix('.py')} in the "
            f"task's folder, and importing '{module_path}' failed ({exc})",
            field=field,
        ) from None
    if not hasattr(module, class_name):
        raise TaskDefinitionError(f"module '{module_path}' defines no '{class_name}'", field=field)
    task_class: type = getattr(module, class_name)
    return task_class


def load_task_class(
    spec: TaskSpec, base_dir: Path, file: str | None, resources: Any = None, line: int | None = None
) -> CustomTask:
    """The handler of a task with a ``task_class``. A class a task file names (not one of proctor's own)
    runs only with consent: ``resources[TRUST]``, set by the dialect from ``--trust-task-code``;
    ``resources[CODE_KEY]`` is the file's own name for the key (GLM's ``module``)."""
    assert spec.task_class is not None
    resources = dict(resources or {})
    key = resources.get(CODE_KEY, "task_class")
    if file is not None and not spec.task_class.startswith(BUILTIN) and not resources.get(TRUST):
        raise refusal(f"{key} '{spec.task_class}'", file=file, line=line, field=key)
    try:
        cls = resolve_task_class(spec.task_class, base_dir, key)
    except TaskDefinitionError as exc:  # the task file is where the class is named; keep the class file's place too
        raise TaskDefinitionError(located(exc), file=file, line=line, field=key) from None
    if not (inspect.isclass(cls) and issubclass(cls, CustomTask)) or cls.kind != spec.kind:
        wanted = {"multiple_choice": "MultipleChoiceTask", "generate": "GenerationTask"}.get(spec.kind)
        if wanted is None:
            raise TaskDefinitionError(
                f"custom task classes are not supported for '{spec.kind}' tasks", file=file, line=line, field=key
            )
        raise TaskDefinitionError(
            f"'{spec.task_class}' must subclass proctor.tasks.custom.{wanted} (a '{spec.kind}' task)",
            file=file,
            line=line,
            field=key,
        )
    handler = cls(spec, spec.task_options)
    handler.resources = resources
    return handler


def load_handler(spec: TaskSpec, resources: Any = None) -> CustomTask | GivenTextsTask:
    """The handler of a dialect's task (``spec.handler``), a class its plug-in registered, given the
    typed options: a task class (it makes its own requests) or a ``GivenTextsTask`` (it gives the samples' texts,
    the kind makes the requests). No consent is asked here: the plug-in is installed code; code a task file names
    is the handler's to refuse without ``--trust-task-code`` (``core.user_code``)."""
    from proctor.core.registry import registry

    assert spec.handler is not None
    try:
        entry = registry().task_handler(spec.handler.name)
    except ValueError as exc:
        raise TaskDefinitionError(str(exc), field="handler") from None
    cls, model = entry.handler_class(), entry.options_model()
    if not issubclass(cls, (CustomTask, GivenTextsTask)):
        raise TaskDefinitionError(
            f"task handler '{spec.handler.name}' is not a proctor.tasks.custom class nor a GivenTextsTask",
            field="handler",
        )
    if not isinstance(spec.handler.options, model):
        raise TaskDefinitionError(
            f"task handler '{spec.handler.name}' takes {model.__name__} options, "
            f"got {type(spec.handler.options).__name__}",
            field="handler.options",
        )
    handler: CustomTask | GivenTextsTask = cls(spec, spec.handler.options)
    handler.resources = dict(resources or {})
    return handler
