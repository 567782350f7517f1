"""A Python use case as a proctor task: its handler, and the ``Task`` the dialect builds for it.

A use case runs through ``api.evaluate`` like any other task. Its ``TaskSpec`` (built by ``usecase_spec``) is a
``generate`` task run by the ``aisteer.use_case`` handler (``UseCaseTask``); its options (``UseCaseTaskOptions``) carry
what identifies the run (the use case's fingerprint, ``gen_kwargs``, ``batch_size``, ``runtime_overrides``), so the
content hash, resume and ``--update`` see any change. How to build the use case object rides in the
task's ``resources`` (``Task.resources["use_case"]``, a ``UseCaseEntry``), which the engine hands the
handler; nothing is kept in module state.

- ``load_samples`` builds the use case (``--limit N`` keeps its first N rows): one sample per row;
- ``predict_samples`` seeds ``random`` with the use case's ``seed`` (files that shuffle with it build
  the same prompts on every run, so a rerun resumes), runs ``generate`` on the executor the engine
  hands it (``session.UseCaseExecutor`` around it: every request is looked up in the run store first,
  the rest committed chunk by chunk), then ``evaluate`` (LLM judges on the same store);
- on a steered model (``SteeredModel``: ``--model steer:``, a ``Benchmark`` configuration) the use
  case gets the pipeline itself, its executor set to that one: requests without per-example
  runtime arguments go through the run store as the steered model, those with them are generated
  by the pipeline with each row's arguments;
- each sample's record holds the generations of its row (by the generation's ``id`` /
  ``question_id`` when the rows have ids, else by position); the task's metrics are every numeric
  value of the evaluations (``Metric.value`` names), and ``evaluations`` holds them as returned.

A ``Benchmark`` trial (options ``benchmark_trial``, see ``benchmark.py``) differs in three
ways, so that its profile entry is rebuilt from the run folder exactly as the Benchmark built it
before: the global ``random`` is left as it is (the Benchmark never reseeded it), generations and
evaluations are stored as the profile holds them (JSON, unknown values as ``str``), and each
record's ``generation_index`` gives the position of each of its generations in the use case's list.
"""

from __future__ import annotations

import json
import logging
import math
import random
from typing import TYPE_CHECKING, Any, Mapping, Sequence, cast

from proctor.core.errors import TaskDefinitionError
from proctor.core.task_spec import TaskSpec
from proctor.core.user_errors import call_user, definition_site
from proctor.data.sources import GivenTexts, Sample
from proctor.dialects.aisteer.aisteer_names import aisteer360_names
from proctor.dialects.aisteer.base import UseCase
from proctor.dialects.aisteer.judge import judges_on
from proctor.dialects.aisteer.session import UseCaseExecutor
from proctor.dialects.aisteer.task_options import UseCaseTaskOptions
from proctor.dialects.aisteer.usecase_spec import UseCaseEntry
from proctor.dialects.aisteer.verdicts import judge_tallies, judges_settings
from proctor.kinds.base import SampleDetails
from proctor.kinds.custom import GenerationTask
from proctor.models.steering.steered_model import SteeredModel
from proctor.runs.executor import ModelExecutor
from proctor.runs.outcome_tally import OutcomeTally
from proctor.scoring.aggregate import MetricEntry

if TYPE_CHECKING:
    from proctor.audit.row_choices import RowChoices
    from proctor.kinds.capabilities import Executor
    from proctor.models.steering.pipeline import SteeringPipeline
    from proctor.prompts.builder import PreparedSample

# the use case builds its own prompts and scores its own generations: no prompt or reference answer to render
NO_TEXTS = GivenTexts(prompt="", target=())

log = logging.getLogger(__name__)


def _as_profile(value: object) -> Any:
    """``value`` as a Benchmark profile has always held it: through JSON, unknown values as ``str``."""
    return json.loads(json.dumps(value, default=str))


def _model_batch_size(model: object) -> int:
    size = getattr(model, "batch_size", None)
    return size if isinstance(size, int) and size > 0 else 8


def _flatten(prefix: str, value: object, out: dict[str, MetricEntry]) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        out[prefix] = {"value": float(value), "stderr": None}
    elif isinstance(value, dict):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}", inner, out)


def row_positions(generations: Sequence[object], rows: Sequence[Mapping[str, object]]) -> list[list[int]]:
    """For each row, the positions (in ``generations``) of its generations: by a generation's ``id`` /
    ``question_id`` matching a row's ``id``, else by position (generation i of n goes to row i * rows // n)."""
    groups: list[list[int]] = [[] for _ in rows]
    if not rows:
        return groups
    ids = {json.dumps(r["id"], default=str): k for k, r in enumerate(rows) if isinstance(r, Mapping) and "id" in r}
    for i, generation in enumerate(generations):
        row = None
        if ids and isinstance(generation, Mapping):
            for key in ("id", "question_id"):
                if key in generation:
                    row = ids.get(json.dumps(generation[key], default=str))
                    if row is not None:
                        break
        if row is None:
            row = min(i * len(rows) // max(len(generations), 1), len(rows) - 1)
        groups[row].append(i)
    return groups


def _returned(case: UseCase, method: str, value: object, kind: type, wanted: str) -> Any:
    """What ``generate`` / ``evaluate`` returned, or an error at the method's definition when it is not ``kind``."""
    if isinstance(value, kind) and not (kind is list and isinstance(value, str)):
        return value
    if kind is list and isinstance(value, tuple):
        return list(value)
    file, line = definition_site(getattr(type(case), method))
    raise TaskDefinitionError(
        f"{type(case).__name__}.{method} returned {type(value).__name__} {value!r:.80}; it must return {wanted}",
        file=file,
        line=line,
        field=method,
    )


def _missing_rows(generations: Sequence[object], rows: Sequence[Mapping[str, object]]) -> list[str]:
    """A warning when ``generate`` left rows without a generation: the metrics then cover fewer rows than the data."""
    empty = [k for k, group in enumerate(row_positions(generations, rows)) if not group]
    if not empty:
        return []
    by_id = all(isinstance(rows[k], Mapping) and "id" in rows[k] for k in empty)
    names = [str(rows[k]["id"]) if by_id else str(k + 1) for k in empty]
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    return [
        f"generate() returned {len(generations)} generation(s) for {len(rows)} rows: {len(empty)} row(s) got none "
        f"({'ids' if by_id else 'rows'} {shown}); the metrics cover only the generations returned"
    ]


def _not_numbers(evaluations: Mapping[str, object]) -> list[str]:
    """A warning for each metric value that is NaN or infinite (written as null in results.json)."""
    flat: dict[str, MetricEntry] = {}
    for metric, values in evaluations.items():
        _flatten(str(metric), values, flat)
    return [
        f"metric '{name}' is {entry['value']} (not a number): the use case's metric returned it"
        for name, entry in flat.items()
        if not math.isfinite(entry["value"])
    ]


def _one_position(evaluations: Mapping[str, object]) -> list[str]:
    """A positional-bias metric over replies that all name one position: AISteer360's formula (K = the positions
    observed) then gives 0.0, "no bias", for the most biased model there is. The number stays (parity); a warning."""
    out = []
    for metric, values in evaluations.items():
        if not isinstance(values, Mapping):
            continue
        shares = values.get("position_shares")
        if isinstance(shares, Mapping) and len(shares) == 1:
            letter = next(iter(shares))
            out.append(
                f"metric '{metric}': every valid reply named position {letter}, so the positions observed are one "
                f"and its mean is {values.get('mean')} by AISteer360's formula: constant replies, not an unbiased model"
            )
    return out


VALID_SHARE = 0.5  # of a metric's attempts, the valid ones (a reply naming an option) below this share are named


def _few_valid(evaluations: Mapping[str, object]) -> list[str]:
    """A metric whose replies were mostly not valid (no option named): AISteer360 averages over the valid ones and
    gives 0.0 over none, so the number says nothing of the model's answers. The number stays (parity); a warning."""
    out = []
    for metric, values in evaluations.items():
        if not isinstance(values, Mapping):
            continue
        valid, attempts = values.get("num_valid"), values.get("num_attempts")
        if not isinstance(valid, int) or isinstance(valid, bool):
            continue
        if isinstance(attempts, int) and attempts > 0 and valid < VALID_SHARE * attempts:
            out.append(
                f"metric '{metric}': only {valid} of {attempts} replies were valid (named an option the use case "
                "reads); its means are over those alone (0.0 over none, as AISteer360 gives it): look at the replies"
            )
        elif attempts is None and valid == 0:
            out.append(f"metric '{metric}': no reply was valid (none named an option the use case reads)")
    return out


class UseCaseTask(GenerationTask):
    """Runs one use case: its rows are the samples, its ``generate`` / ``evaluate`` the predictions and scores."""

    scores_itself = True  # no per-sample metrics: the use case's evaluations are the task's metrics

    def __init__(self, spec: TaskSpec, options: UseCaseTaskOptions) -> None:
        super().__init__(spec, options)
        self.options: UseCaseTaskOptions
        self.case: UseCase | None = None
        self._corpus: dict[str, MetricEntry] = {}
        self._extras: dict[str, object] = {}
        self._judges: list[dict[str, object]] | None = None

    def load_samples(self, limit: int | None = None, variables: Mapping[str, str] | None = None) -> list[Sample]:
        entry = self.resources.get("use_case")  # set by load_handler after construction
        if not isinstance(entry, UseCaseEntry):
            raise TaskDefinitionError(
                f"use case task '{self.spec.name}' was not loaded by the use case dialect", field="handler"
            )
        self.case, self.gen_kwargs, self.call = entry.build(limit)
        rows = self.case.evaluation_data
        source = str(self.spec.data[0].path)
        return [
            Sample(
                id=str(row["id"]) if isinstance(row, Mapping) and "id" in row else str(index),
                fields=dict(row) if isinstance(row, Mapping) else {"row": row},
                file=source,
                row=index,
                index=index,
                given=NO_TEXTS,
            )
            for index, row in enumerate(rows)
        ]

    def audit_choices(self, samples: Sequence[PreparedSample]) -> list[RowChoices]:
        """The choices the rows list, for the audit's choice rules (the samples carry none: ``audit_rows``)."""
        from proctor.dialects.aisteer.audit_rows import row_choices

        label = getattr(self.case, "_data_label", None)  # base.load_rows: the data file's path, when read from one
        return row_choices(samples, label if isinstance(label, str) and label != "evaluation_data" else None)

    def predict_samples(
        self, samples: Sequence[PreparedSample], prompts: Sequence[str], executor: Executor
    ) -> list[tuple[object, SampleDetails]]:
        case = self.case
        assert case is not None, "load_samples runs first"
        model = executor.model
        self.model = model
        trial = self.options.benchmark_trial is not None
        # the use case gets it in place of the model (the engine's executor is a ModelExecutor)
        session = UseCaseExecutor(cast(ModelExecutor, executor), None, self.spec.name)
        target: UseCaseExecutor | SteeringPipeline  # what the use case's generate gets as model_or_pipeline
        target, tokenizer = session, getattr(model, "tokenizer", None)
        # a SteeredModel's pipeline is a SteeringPipeline (steered_model.py names only what it uses of one)
        pipeline = cast("SteeringPipeline", model.pipeline) if isinstance(model, SteeredModel) else None
        if pipeline is not None:  # the pipeline itself, so per-example runtime arguments still apply
            pipeline.steer()
            target, tokenizer = pipeline, pipeline.tokenizer
            held, pipeline.executor = pipeline.executor, session
        if not trial:
            random.seed(getattr(case, "seed", 555))  # files that shuffle with the global random build the same prompts
        source = self.spec.data[0].path
        try:
            with aisteer360_names():
                generations = call_user(
                    case.generate,
                    f"{type(case).__name__}.generate",
                    target,
                    tokenizer,
                    gen_kwargs=dict(self.gen_kwargs),
                    runtime_overrides=self.call.get("runtime_overrides"),
                    batch_size=self.call.get("batch_size") or _model_batch_size(model),
                    field="generate",
                    file=source,
                )
        finally:
            if pipeline is not None:
                pipeline.executor = held
        generations = _returned(case, "generate", generations, list, "a list of generations (one dict per prompt)")
        tallies = judge_tallies(case)
        for tally in tallies:  # this task's verdicts only (a Benchmark evaluates the same metrics once per trial)
            tally.clear()
        with aisteer360_names(), judges_on(case, getattr(executor, "lookup", None)):
            evaluations = call_user(
                case.evaluate, f"{type(case).__name__}.evaluate", generations, field="evaluate", file=source
            )
        self._judges = judges_settings(case) or None  # results.json's settings.judges
        outcomes = getattr(executor, "outcomes", None)
        if isinstance(
            outcomes, OutcomeTally
        ):  # the judges' unreadable, clamped, constant verdicts: warned with the rest
            for tally in tallies:
                outcomes.merge(tally.counts)
        evaluations = _returned(case, "evaluate", evaluations, Mapping, "a mapping {metric name: {value name: number}}")
        warnings = (
            _missing_rows(generations, case.evaluation_data)
            + _not_numbers(evaluations)
            + _one_position(evaluations)
            + _few_valid(evaluations)
        )
        for warning in warnings:  # results.json has them (result_extras); the console too
            log.warning("%s: %s", self.spec.name, warning)
        metrics: dict[str, MetricEntry] = {}
        for metric, values in evaluations.items():
            _flatten(metric, values, metrics)
        self._corpus = metrics
        if trial:  # as a Benchmark profile holds them
            generations, evaluations = _as_profile(generations), _as_profile(evaluations)
        self._extras = {
            "n_samples": len(generations),
            "n_rows": len(case.evaluation_data),
            "evaluations": evaluations,
            "requests": {
                "total": session.tally.total,
                "unique": session.tally.total,
                "computed": session.tally.model_calls,
                "type": "custom",
            },
            **({"warnings": warnings} if warnings else {}),
        }
        executor.progress(len(samples))
        rows = [s.sample.fields for s in samples]
        out: list[tuple[object, SampleDetails]] = []
        for group in row_positions(generations, rows):
            details: SampleDetails = {"generations": [generations[i] for i in group]}
            if trial:
                details["generation_index"] = group
            out.append((None, details))
        return out

    def corpus_metrics(self) -> dict[str, MetricEntry]:
        return dict(self._corpus)

    def result_extras(self) -> dict[str, object]:
        return dict(self._extras)

    def judge_settings(self) -> list[dict[str, object]] | None:
        """What the use case's judge metrics ran with (``kinds/capabilities.ReportsJudgeSettings``)."""
        return self._judges
