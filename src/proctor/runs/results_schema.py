"""results.json, typed: the models every results.json is validated against before it is written.

docs/results.md documents each field (type, meaning, which dialects fill it). Known fields are typed;
per-task results, metric entries and roll-up nodes also accept fields a dialect adds (``extra="allow"``),
while the top level and the small fixed records (environment, timing, ...) accept nothing unknown.
A task's entry is ``TaskResult`` (runs/task_result.py, with the records it holds), built while its task runs;
the rest of the file is built by ``runs/run_results.RunResults``. Numbers keep the type
they were computed with (``Number``), so the file writes them as Python computed them.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import Field, ValidationError

from proctor.runs.task_result import ClosedRecord, Number, OpenRecord, TaskResult


# ------------------------------------------------------------------ run level
class GroupMetric(ClosedRecord):
    value: Optional[Number] = Field(
        description="Macro mean: every task weighs the same; a group whose definition says how it averages "
        "(lm-eval's aggregate_metric_list, see weight_by_size): the mean it says."
    )
    stderr: Optional[Number] = Field(
        description="sqrt(sum of the tasks' stderr^2) / number of tasks; null if any is null (a weight_by_size "
        "group: micro_stderr)."
    )
    micro: Optional[Number] = Field(description="Mean weighted by each task's samples.")
    micro_stderr: Optional[Number] = Field(
        None,
        description="Stderr of the micro mean: the pooled sample variance of the tasks (lm-eval's "
        "pooled_sample_stderr); null if any is null.",
    )
    stderr_clustered: Optional[Number] = Field(
        None,
        description="Where every task names a cluster field: the macro mean's cluster-robust stderr, "
        "sqrt(sum of the tasks' CR1 stderr^2) / number of tasks (clusters lie within tasks).",
    )
    micro_stderr_clustered: Optional[Number] = Field(
        None,
        description="Where every task names a cluster field: the micro mean's cluster-robust stderr, "
        "sqrt(sum of (task samples * task CR1 stderr)^2) / group samples.",
    )
    n_clusters: Optional[int] = Field(None, description="Clusters over the group's tasks (with stderr_clustered).")
    weight_by_size: Optional[bool] = Field(
        None,
        description="lm-eval groups: the aggregate_metric_list entry's weight_by_size: true, value and stderr are "
        "the size-weighted mean (micro) and its stderr; false, the equal-weight mean.",
    )
    note: Optional[str] = Field(
        None,
        description="Proctor's own groups: a count (value: the members' total) or a pooled ratio such as a "
        "perplexity (no micro: a size-weighted mean of ratios is not the pooled ratio).",
    )


class GroupResult(ClosedRecord):
    tasks: list[str]
    n_samples: int
    metrics: dict[str, GroupMetric]
    left_out: Optional[dict[str, str]] = Field(
        None, description="Metrics the members share but compute differently (other arguments), each with why."
    )


class RollupNode(OpenRecord):
    """A node of the score hierarchy (the top, a level, a group) or a task leaf."""

    value: Optional[Number]
    stderr: Optional[Number]
    children: Optional[dict[str, RollupNode]] = None
    bootstrap: Optional[list[Number]] = None
    type: Optional[Literal["macro", "micro"]] = Field(None, description="Group nodes: how their tasks were averaged.")
    levels: Optional[list[str]] = Field(
        None, description="Top node: the level names, outermost first, then group and task."
    )
    n_samples: Optional[int] = Field(None, description="Task leaves.")
    metric: Optional[str] = Field(None, description="Task leaves: the metric rolled up.")
    aggregation: Optional[Literal["lindsea"]] = Field(
        None, description="SEA-HELM linguistic diagnostics: scored by LINDSEA."
    )
    lindsea: Optional[dict[str, Any]] = None
    notes: Optional[list[str]] = None


class Environment(ClosedRecord):
    python: str
    platform: str
    git_hash: Optional[str]
    cpu: Optional[str] = Field(None, description="The CPU's model name (absent in runs of earlier versions).")
    gpus: list[str] = Field(default_factory=list, description="The GPUs' model names (none: an empty list).")
    packages: dict[str, str] = Field(
        default_factory=dict,
        description="Versions of the installed packages that can change numbers (torch, transformers, tokenizers, "
        "numpy, lm_eval, vllm, datasets, ...), by distribution name.",
    )


class RunTiming(ClosedRecord):
    model_load_seconds: Optional[float] = None
    total_seconds: Optional[float] = None


class Skipped(ClosedRecord):
    task: Optional[str] = None
    file: str
    error: str
    stage: Optional[Literal["load", "prepare", "run"]] = Field(
        None, description="Where it failed: loading the file, preparing the task (data, prompts), or running it."
    )


class RoleModel(ClosedRecord):
    """A model a run used in a role besides the evaluated one (a judge, a metric's model, a steering base)."""

    model: str = Field(description="The model as named (a --model string; a model object: its name).")
    source: Literal["--model-role", "task"] = Field(
        description="--model-role: given for the run (evaluate's model_roles); task: named by the task files or "
        "the dialect's options (e.g. --seahelm-judge, an LLMJudgeMetric's model_or_id)."
    )
    fingerprint: Optional[dict[str, Any]] = Field(None, description="The model's fingerprint, as 'model' is.")


class Results(ClosedRecord):
    """The top level of results.json."""

    proctor_version: str
    created: str = Field(description="When the run folder was started (ISO 8601, UTC).")
    run_id: Optional[str] = Field(
        None,
        description="A random id given when the run folder is started and kept on resume: a copy of the folder "
        "has the same one, a rerun of the same command another (absent in folders of older versions).",
    )
    command: Optional[list[str]] = Field(description="The command line, or null from Python.")
    model: dict[str, Any] = Field(
        description="The model's fingerprint (backend, path, revision, dtype, ...): "
        "what the response store is keyed by."
    )
    model_info: Optional[dict[str, Any]] = Field(
        None, description="Parameters, batch size, device, special tokens, chat template (as lm-eval reports them)."
    )
    roles: Optional[dict[str, RoleModel]] = Field(
        None, description="Role (judge, metric, steer_base) -> the model the run used in it; absent: none was used."
    )
    chat_applied: Optional[bool] = None
    environment: Optional[Environment] = None
    status: Literal["running", "complete", "partial"] = Field(
        description="running; complete; partial: finished, but tasks in 'skipped' could not load, prepare or run."
    )
    limit: Union[int, float, None] = Field(
        None, description="--limit: a count, a fraction of each task's rows, or null."
    )
    limit_per_part: Optional[bool] = Field(
        None, description="--limit-per-part: the limit applied to each part of a task's breakdown."
    )
    sample_ids: Optional[list[str]] = Field(
        None, description="--sample-id: the ids (or globs) of the samples each task ran; absent: all its rows."
    )
    predict_only: Optional[bool] = Field(
        None,
        description="--predict-only: the answers are in samples.jsonl and no metric was computed (each task's "
        "metrics are empty); absent: a scored run.",
    )
    overrides: Optional[dict[str, Any]] = Field(None, description="Run-time overrides in force (defaults left out).")
    tasks: dict[str, TaskResult]
    groups: dict[str, GroupResult]
    rollup: Optional[RollupNode] = None
    timing: Optional[RunTiming] = None
    skipped: Optional[list[Skipped]] = Field(
        None, description="Files and tasks found in folders that could not be loaded, prepared or run."
    )
    warnings: Optional[list[str]] = Field(None, description="Every task's warnings, as 'task: warning'.")
    samples_bytes: Optional[int] = Field(
        ge=0,
        description="samples.jsonl's first samples_bytes bytes are the samples this file describes "
        "(null in folders from before it was recorded: all of samples.jsonl).",
    )
    samples_digest: Optional[str] = Field(
        None, description="sha256 of samples.jsonl's first samples_bytes bytes: a hand edit of them is refused."
    )
    numbers_digest: Optional[str] = Field(
        None,
        description="sha256 of the tasks' metrics and n_samples, groups and rollup as written: a hand edit of a "
        "number is refused (runs/run_digests.py).",
    )


class ResultsSchemaError(RuntimeError):
    """results.json would not match its schema: a bug in proctor (or a dialect), never the user's input."""


def check_results_json(text: str) -> Results:
    """The results.json text, validated; a mismatch names the fields that are wrong (the first ten)."""
    try:
        return Results.model_validate_json(text)
    except ValidationError as exc:
        errors = sorted(
            exc.errors(), key=lambda e: e["type"] == "missing"
        )  # a wrong value says more than a missing one
        problems = "; ".join(f"{_where(e['loc'])}: {e['msg']}" for e in errors[:10])
        raise ResultsSchemaError(f"does not match the results.json schema: {problems}") from None


def _where(loc: tuple[int | str, ...]) -> str:
    return f"field '{'.'.join(str(p) for p in loc)}'" if loc else "the whole file"
