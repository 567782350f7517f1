"""A task's entry in results.json, typed: ``TaskResult`` and the records it holds (metrics, data, requests,
settings, epochs, audit findings), and the base records and ``Number`` the whole schema shares.

The engine builds a task's result as a ``TaskResult`` while its task runs (engine/runner.py), each listed field
checked as it is set, and writes it through ``TaskResult.as_dict``; runs/results_schema.py holds the rest of
results.json (its top level, groups, roll-up), and docs/results.md documents each field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

# a number as it was computed: an int stays an int (a float field would write 3 as 3.0)
Number = Union[int, float]


class ClosedRecord(BaseModel):
    """A fixed record of results.json (timing, a count, the environment): no field beyond those listed."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class OpenRecord(BaseModel):
    """A record a dialect may add fields to (a metric entry, a roll-up node): those listed are typed."""

    model_config = ConfigDict(frozen=True, extra="allow")


# ------------------------------------------------------------------ metrics
class MetricEntry(OpenRecord):
    """One metric of a task (or of a breakdown part): its value and standard error, and what a dialect adds."""

    value: Optional[Number] = Field(
        description="The aggregate (mean for per-sample metrics); null when nothing was scored or it is not a number."
    )
    stderr: Optional[Number] = Field(
        description="Standard error of the value; null when none is defined (one sample, corpus metrics)."
    )
    stderr_clustered: Optional[Number] = Field(
        None,
        description="Tasks with a 'cluster' field, mean metrics: the cluster-robust (CR1) standard error of the value; "
        "null with fewer than two clusters.",
    )
    n_clusters: Optional[int] = Field(None, description="Tasks with a 'cluster' field: the clusters the samples form.")
    n_scored: Optional[int] = Field(None, description="Samples with a value, when some had none (unscored).")
    n_unscored: Optional[int] = Field(None, description="Samples without a value (no ground truth).")
    bootstrap: Optional[list[Number]] = Field(
        None, description="SEA-HELM, several seeded runs: the bootstrap values of the primary metric."
    )
    n_runs: Optional[int] = Field(None, description="SEA-HELM: seeded runs the bootstrap drew from.")
    primary: Optional[bool] = Field(None, description="SEA-HELM: this is the task's primary (leaderboard) metric.")
    detail: Any = Field(
        None, description="SEA-HELM and GLM-130B: a metric's nested result (per category, per phenomenon), kept whole."
    )
    error: Optional[str] = Field(None, description="SEA-HELM: why a metric has no value (e.g. metricx_error).")


class BreakdownStat(ClosedRecord):
    max: Number
    median: Number
    average: Number = Field(description="Mean over the parts, weighted by each part's samples.")
    n_parts: int


class BreakdownPart(OpenRecord):
    n_samples: int
    metrics: dict[str, MetricEntry]
    detail: Any = Field(None, description="GLM-130B task classes: the class's own metrics for this file.")


# ------------------------------------------------------------------ per task
class LocalFiles(ClosedRecord):
    paths: list[str] = Field(description="The files read, in reading order (a save_to_disk split: its folder).")
    sha256: str = Field(description="sha256 of those files' bytes, in that order.")


class TaskData(OpenRecord):
    source: Optional[str] = Field(None, description="The data file, glob or hub id read.")
    n_rows: Optional[int] = Field(None, description="Rows read.")
    n_filtered: Optional[int] = Field(None, description="Rows the task's filter dropped.")
    fallback: Optional[str] = Field(None, description="Set when a fallback source was read, saying why.")
    files: Optional[dict[str, LocalFiles]] = Field(
        None, description="lm-eval tasks on local copies (--lmeval-data): per split read, its files and their sha256."
    )


class Requests(ClosedRecord):
    total: Optional[int] = Field(None, description="Requests the task made, duplicates included.")
    unique: int = Field(description="Distinct requests.")
    type: Optional[str] = Field(
        None, description="loglikelihood, generate, rolling_loglikelihood, or custom (a handler's own)."
    )
    computed: Optional[int] = Field(
        None, description="Use cases: requests the model answered in this run (the rest came from the store)."
    )


class TaskTiming(ClosedRecord):
    model_seconds: Optional[Number] = None
    total_seconds: Number


class Unparsed(ClosedRecord):
    count: int = Field(description="Replies from which no option letter could be read (scored as wrong).")
    n: int = Field(description="Lettered replies.")
    rate: Number


class OutcomeCount(ClosedRecord):
    count: int
    n: int
    example: Optional[str] = None


class Truncated(ClosedRecord):
    count: int = Field(
        description="Requests whose prompt the model cut on the left to fit its window (scored without its start)."
    )
    n: int = Field(description="Requests the task sent.")


class TaskSettings(ClosedRecord):
    """What a task ran with that changes its numbers, recorded so that ``compare`` and the viewer can name every
    difference between two runs of it (runs/task_settings.py diffs them). null: none, or not applicable to the
    task (generation settings of a task scored by log-likelihoods); for ``fewshot`` and ``generation`` also a
    dialect's handler that decides them itself (lm-eval's count is its ``n_shot``)."""

    fewshot: Optional[int] = Field(description="Few-shot examples per prompt.")
    fewshot_source: Optional[str] = Field(
        description="Where the examples are drawn from: 'task data' (the task's own rows) or the file / hub id."
    )
    fewshot_seed: Optional[int] = Field(description="The seed the examples are drawn with.")
    chat: bool = Field(description="Whether prompts went through the model's chat template.")
    chat_template: Optional[str] = Field(description="sha256 of the chat template used (first 16 hex digits).")
    system_prompt: Optional[str] = Field(
        None,
        description="The system message the prompts began with: the task's or --system-prompt, else the one the "
        "model's chat template writes where the messages hold none (SmolLM2's 'You are a helpful AI assistant...').",
    )
    limit: Union[int, float, None] = Field(description="Rows run: --limit, else the task's own limit; null: all.")
    limit_per_part: bool = False
    sample_ids: Optional[list[str]] = Field(
        None, description="--sample-id: the ids (or globs) the task's samples were selected by; null: no selection."
    )
    generation: Optional[dict[str, Any]] = Field(
        description="Generation settings (max_tokens, temperature, top_p, stop, seed, ...) of a task that generates."
    )
    backend: Optional[str] = Field(description="The model backend (hf, vllm, openai, ...).")
    dtype: Optional[str] = None
    model_args: dict[str, Any] = Field(
        default_factory=dict,
        description="--model-arg values that can change a request or an answer (credentials left out: they change "
        "no number; the backend's inert options are in model_info).",
    )
    model_info: Optional[dict[str, Any]] = Field(
        None,
        description="--model-arg values the backend declares unable to change a request or an answer (server "
        "address, prices, pace): information, not a setting; compare names them apart.",
    )
    mc_format: Optional[Literal["loglikelihood", "generate"]] = None
    mc_shuffle: Optional[int] = Field(
        None, description="--mc-shuffle: the seed the lettered options were shuffled with; null: the task's order."
    )
    epochs: int = 1
    epoch_reducer: Optional[str] = Field(None, description="With epochs > 1: mean or pass@K.")
    think_end_token: Optional[str] = Field(
        None, description="--think-end-token: generations were scored on the text after its last occurrence."
    )
    think_budget: Optional[int] = Field(
        None, description="--max-thinking-tokens: tokens added to every generation's max_tokens for its thinking."
    )
    judges: Optional[list[dict[str, Any]]] = Field(
        None,
        description="The task's judges (AISteer360 judge metrics): per metric, the judge model, its generation "
        "settings (temperature, max_new_tokens, ...), scale and the sha256 of its rubric (first 16 hex digits).",
    )


class RollupPlace(ClosedRecord):
    metric: str
    levels: dict[str, str]
    group: Optional[str] = None
    group_type: Literal["macro", "micro"] = "macro"


class EpochVariance(ClosedRecord):
    """How much the epochs reduced a metric's variance (Miller 2024's resampling; scoring/stats.epoch_variance)."""

    n_questions: int = Field(description="Questions with a value in every epoch.")
    k: int = Field(description="Epochs per question.")
    within: Number = Field(description="Mean over questions of the variance across a question's epochs (ddof 1).")
    between: Number = Field(description="Variance of the questions' true means: var(question means) - within / k.")
    stderr: Number = Field(description="Standard error of the mean over questions (of the question means).")
    stderr_one_epoch: Number = Field(description="The standard error one epoch would give: sqrt((between+within)/n).")


class Epochs(ClosedRecord):
    n: int
    reducer: str = Field(description="mean or pass@K.")
    scores: dict[str, list[Optional[Number]]] = Field(description="Per metric, the task's value in each epoch.")
    pass_at_k: dict[str, dict[str, Number]] = Field(description="0/1 metrics: unbiased pass@k for k = 1..n.")
    variance: Optional[dict[str, EpochVariance]] = Field(
        None, description="Per numeric metric: within- and between-question variance, and the stderr they give."
    )


class AuditEntry(ClosedRecord):
    """A finding of the audit stage (docs/audit.md): one rule's first place in the task, and how many in all."""

    rule: str = Field(description="The rule's id, e.g. choices.duplicate (a task file silences a rule by it).")
    severity: Literal["error", "warning"]
    message: str
    file: Optional[str] = None
    row: Optional[int] = None
    line: Optional[int] = None
    field: Optional[str] = None
    sample: Optional[str] = Field(None, description="The first sample id it names, where the finding is a row's.")
    count: int = Field(ge=1, description="Rows or places the rule found; the first is named.")
    silenced: Optional[str] = Field(None, description="The task file's reason, where it silenced the rule.")


class TaskResult(BaseModel):
    """One task's result, as the run builds it and results.json holds it. Dialects may add fields (kept after the
    listed ones, in the order they were set); those listed here are typed, and checked when they are set.

    The fields are listed in the order the file shows them; a field is written once it has been set (None
    included), so optional fields a task never set are left out (``as_dict``)."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    kind: Literal["multiple_choice", "generate", "perplexity"]
    dialect: str = Field(
        description="native, probsem, glm, seahelm, lm-eval or aisteer "
        "(glm130b and usecase in runs of earlier versions)."
    )
    source: Optional[str] = Field(description="The task file (null for tasks built in Python).")
    version: str
    changes: Optional[dict[str, str]] = Field(None, description="The task's change log: version -> what changed.")
    hash: str = Field(
        description="Content hash of the prepared task (spec, samples, prompts); a use case's fingerprint."
    )
    group: Optional[list[str]] = Field(None, description="Groups the task belongs to (see the top-level groups).")
    n_samples: int
    n_rows: Optional[int] = Field(
        None, description="Use cases: rows of evaluation data (n_samples counts generations)."
    )
    data: Optional[TaskData] = None
    metrics: dict[str, MetricEntry]
    higher_is_better: Optional[dict[str, bool]] = None
    requests: Requests
    timing: TaskTiming
    rollup: Optional[RollupPlace] = None
    breakdown: Optional[dict[str, dict[str, BreakdownPart]]] = Field(
        None, description="Per field (e.g. _source), per value: metrics."
    )
    breakdown_stats: Optional[dict[str, dict[str, BreakdownStat]]] = None
    glm_class: Optional[str] = Field(None, description="GLM-130B module: the task class that ran.")
    glm_report: Any = Field(None, description="GLM-130B module: what the class's report hook printed.")
    evaluations: Optional[dict[str, Any]] = Field(None, description="Use cases: each metric's raw result.")
    n_shot: Optional[int] = Field(
        None,
        description="lm-eval tasks: the few-shot examples per prompt lm-eval's task used (its YAML or --num-fewshot).",
    )
    bootstrap_iters: Optional[int] = Field(
        None, description="lm-eval tasks: the bootstrap resamples for standard errors (--bootstrap-iters; 0: none)."
    )
    epochs: Optional[Epochs] = None
    truncated: Optional[Truncated] = None
    usage: Optional[dict[str, Number]] = Field(
        None, description="Remote models: tokens and requests sent (and estimated_cost)."
    )
    judge_usage: Optional[dict[str, Number]] = Field(None, description="SEA-HELM: the same for a separate judge model.")
    thinking: Optional[dict[str, Number]] = Field(
        None,
        description="--think-end-token: generations split (samples), those whose thinking never closed (unclosed), "
        "the thinking's mean length in characters (mean_chars), the tokens each reply generated, thinking and "
        "answer (mean_generated_tokens, max_generated_tokens), replies that reached max_tokens "
        "(stopped_at_max_tokens), and, where the model's tokenizer is at hand, the thinking's own tokens "
        "(mean_thinking_tokens, max_thinking_tokens).",
    )
    mc_format: Optional[Literal["loglikelihood", "generate"]] = Field(
        None, description="How a multiple-choice task ran."
    )
    settings: Optional[TaskSettings] = Field(
        None, description="What the task ran with that changes its numbers (absent in runs of earlier versions)."
    )
    mc_format_reason: Optional[str] = Field(
        None, description="Why it ran so: --mc-format, or what the model's log-likelihood check found."
    )
    unparsed: Optional[Unparsed] = None
    outcomes: Optional[dict[str, OutcomeCount]] = Field(
        None,
        description="Replies that held no scoreable answer, per outcome (runs/outcome_tally.py: withheld, empty, "
        "echo, stray_characters, not_nfc, think_marker, unread, zero_logprobs, flat_logprobs, one_logprob, "
        "tied_choices, ambiguous_letter, one_letter, near_miss, holds_reference, digits_joined, at_limit, cut_wrong, "
        "judge_errors, judge_flips, judge_clamped, judge_not_yes_no, judge_constant): count, n and one example; those "
        "above their share are warnings.",
    )
    warnings: Optional[list[str]] = None
    audit: Optional[list[AuditEntry]] = Field(
        None, description="The audit stage's findings (docs/audit.md), silenced ones with their reason."
    )
    exports: Optional[list[str]] = Field(None, description="Files the task's exporters wrote into the run folder.")

    def add_warning(self, text: str) -> None:
        self.warnings = [*(self.warnings or []), text]

    def add_finding(self, entry: Mapping[str, Any], text: str) -> None:
        """An audit finding: listed under ``audit``, and (``text``, its one line) a warning unless the task file
        silenced its rule."""
        self.audit = [*(self.audit or []), AuditEntry.model_validate(entry)]
        if entry.get("silenced") is None:
            self.add_warning(f"audit {text}")

    def add_metrics(self, entries: Mapping[str, Any]) -> None:
        """Metrics computed apart from the per-sample ones (a task class's corpus metrics): added, or replacing."""
        self.metrics = {**self.metrics, **entries}

    def set_fields(self, fields: Mapping[str, Any]) -> None:
        """Fields a task class reports of its own (``ResultExtras``), each checked as it is set."""
        for name, value in fields.items():
            setattr(self, name, value)

    def as_dict(self) -> dict[str, Any]:
        """The entry results.json holds: every field that was set, in the listed order, then a dialect's own."""
        return self.model_dump(exclude_unset=True)
