"""What a task handler may provide beyond the kind-handler protocol, and the executor it is handed.

A handler is the object a task runs through: a built-in kind (``kinds/base.KindHandler``: requests
per sample, an outcome from the results), a dialect's handler named by ``TaskSpec.handler`` or a
task class named by ``TaskSpec.task_class``
(``kinds/custom.py`` and the dialects' handlers). The engine asks for each optional capability
with ``isinstance`` against these runtime-checkable protocols; nothing else about a handler is
probed. A handler imports no engine module: the engine hands it an :class:`Executor`.

| protocol | called by | when |
| --- | --- | --- |
| ``LoadsSamples`` | ``engine/prepare.prepare_task`` | phase one, instead of reading ``spec.data`` |
| ``ReadsLocalFiles`` | ``engine/prepare.prepare_task`` | phase one, after ``load_samples``: ``data.files`` |
| ``ScoresItself`` | ``engine/prepare.prepare_task`` | phase one: no per-sample metrics are looked up |
| ``PredictsSamples`` | ``engine/runner.run_built`` | phase two, instead of per-sample kind requests |
| ``SkipsScoring`` | ``engine/predict_only.unscored`` | phase one, ``--predict-only``: before prediction |
| ``UsesChoiceFormulation`` | ``engine/task_requests.build_requests`` | before prediction, once the model is known |
| ``ReportsMcFormat`` | ``engine/runner.run_built`` | after prediction: ``mc_format`` in the result |
| ``ReportsJudgeUsage`` | ``engine/runner.run_built`` | after prediction: ``judge_usage`` in the result |
| ``ReportsJudgeSettings`` | ``engine/task_settings.task_settings`` | after prediction: ``settings.judges`` |
| ``CorpusMetrics`` | ``engine/runner.score_outcomes`` | after per-sample aggregation: merged into ``metrics`` |
| ``ResultExtras`` | ``engine/runner.score_outcomes`` | last: merged into the task's result |
"""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Mapping,
    Protocol,
    Sequence,
    runtime_checkable,
)

if TYPE_CHECKING:
    from proctor.core.model_requests import Request
    from proctor.data.sources import Sample
    from proctor.kinds.base import SampleDetails
    from proctor.kinds.mc_generate import MultipleChoiceGenerateKind
    from proctor.models.base import Model
    from proctor.prompts.builder import PreparedSample
    from proctor.scoring.aggregate import MetricEntry, TaskEntry


@runtime_checkable
class Executor(Protocol):
    """Runs requests on a model for a handler or a use case: through the run store and the shared
    cache when the run has them (looked up first, the rest sent in fixed chunks, each committed as
    it returns), else straight to the model. ``proctor.runs.executor.ModelExecutor`` implements it."""

    @property
    def model(self) -> Any:
        """The model requests go to (a ``proctor.models.base.Model``): for its tokenizer, chat template,
        capabilities."""
        ...

    @property
    def stored(self) -> bool:
        """True when answers go through a run store (cached, resumable)."""
        ...

    def run(
        self, request_type: str, requests: Sequence[Request], progress: Callable[[int], None] | None = None
    ) -> list[Any]:
        """Results of ``request_type`` ("loglikelihood", "generate", "rolling_loglikelihood") in request
        order; ``progress(n)`` as requests are answered (from the store or the model)."""
        ...

    def progress(self, n: int) -> None:
        """Report ``n`` more units of the task finished (samples, for a handler's ``predict_samples``)."""
        ...

    def for_model(self, model: Model) -> Executor:
        """An executor for another model (a judge) on the same store and cache, under its own fingerprint."""
        ...


@runtime_checkable
class LoadsSamples(Protocol):
    """The task class reads its own data (SEA-HELM dataloaders, lm-eval task objects, GLM data folders).

    Called once in phase one, before any model loads, with the row cap (``--limit`` count or the
    spec's ``limit``; a fraction is resolved by calling again with the count) and the run's
    ``${VAR}`` variables. The samples replace ``spec.data``; prompts are still built from the spec (or from
    each sample's ``given`` texts). A handler may give more samples than the cap (all its rows: results.json's
    ``n_rows`` then counts them all); the engine keeps the first ones.
    """

    def load_samples(self, limit: int | None = None, variables: Mapping[str, str] | None = None) -> list[Sample]: ...


@runtime_checkable
class ReadsLocalFiles(Protocol):
    """A ``LoadsSamples`` handler that read local copies of its data (lm-eval's ``--lmeval-data``): per split,
    the paths read and the sha256 of their bytes (``{"test": {"paths": [...], "sha256": "..."}}``), asked
    right after ``load_samples``; results.json records it as the task's ``data.files``."""

    def local_files(self) -> dict[str, dict[str, Any]]: ...


@runtime_checkable
class ShowsAuditSamples(Protocol):
    """A handler whose prepared samples are not the rows as asked, and which shows the audit those (lm-eval's
    ``multiple_input`` tasks: each choice a context, one continuation scored after each; its recorded chat
    messages, read as their contents). It returns ``samples`` themselves where nothing needs rewriting;
    ``audit_choices_lead``, read after the call, tells the audit the choices it was shown lead the prompt."""

    audit_choices_lead: bool

    def audit_samples(self, samples: Sequence[Any]) -> Sequence[Any]: ...


@runtime_checkable
class ScoresItself(Protocol):
    """A task class whose own code scores whole files (GLM-130B's metrics): when ``scores_itself`` is
    true, phase one looks up no per-sample metrics and the result's metrics come from ``corpus_metrics``."""

    scores_itself: bool


@runtime_checkable
class PredictsSamples(Protocol):
    """The task class calls the model itself instead of handing the engine per-sample requests.

    Called once per task in phase two with every prepared sample, its rendered prompt, and an
    :class:`Executor` (the model, the run store, the chunk size, the progress callback counting
    samples). Returns one ``(outcome, details)`` per sample, in order: the outcome goes to the
    task's metrics, ``details`` into the sample's record.
    """

    def predict_samples(
        self, samples: Sequence[PreparedSample], prompts: Sequence[str], executor: Executor
    ) -> list[tuple[object, SampleDetails]]: ...


@runtime_checkable
class SkipsScoring(Protocol):
    """A predicting task class that can answer its requests without scoring them (``--predict-only``): after
    ``skip_scoring()``, ``predict_samples`` returns each sample's details with an outcome no metric reads, and
    ``corpus_metrics`` (where it has one) returns none. A predicting class without it is refused with
    ``--predict-only`` (its own code would score)."""

    def skip_scoring(self) -> None: ...


@runtime_checkable
class UsesChoiceFormulation(Protocol):
    """A predicting task class that can answer choices by lettered generation.

    Called by the engine once the model is known, before ``predict_samples``: ``resolve()`` gives
    the lettered generation formulation (``kinds/mc_generate.MultipleChoiceGenerateKind``) when
    ``--mc-format generate`` asks for it or the model cannot score log-likelihoods, else None. It is
    resolved lazily: only choice scoring needs the model's capability check.
    """

    def use_choice_formulation(self, resolve: Callable[[], MultipleChoiceGenerateKind | None]) -> None: ...


@runtime_checkable
class ReportsMcFormat(Protocol):
    """``mc_format`` is "generate" once the handler answered choices by lettered generation; read
    after prediction, it sets the result's ``mc_format`` and the unparsed-reply count."""

    mc_format: str | None


@runtime_checkable
class ReportsJudgeUsage(Protocol):
    """Tokens and requests a separate judge model was sent by this task (with its estimated cost),
    or None; read after prediction into the result's ``judge_usage``."""

    def judge_usage(self) -> dict[str, Any] | None: ...


@runtime_checkable
class ReportsJudgeSettings(Protocol):
    """What each judge of the task ran with (model, generation settings, scale, its rubric's sha256), or None;
    read after prediction into the task's ``settings.judges``, so ``compare`` names a changed judge."""

    def judge_settings(self) -> list[dict[str, Any]] | None: ...


@runtime_checkable
class CorpusMetrics(Protocol):
    """Corpus-level metrics (``{name: {"value", "stderr", ...}}``) computed by the task class during
    prediction (SEA-HELM's metric classes, lm-eval's aggregations, GLM's per-file metrics); merged
    over the per-sample aggregates when the task's result is built."""

    def corpus_metrics(self) -> dict[str, MetricEntry]: ...


@runtime_checkable
class ResultExtras(Protocol):
    """Extra top-level entries of the task's result (GLM-130B's per-file and per-group report),
    merged last when the result is built."""

    def result_extras(self) -> TaskEntry: ...
