"""What a task's result says besides its numbers: the warnings and notes that change how to read them
(prompts cut to fit the window, NaN metrics, degenerate replies counted by runs/outcome_tally.py, upper-bound
log-likelihoods, why a multiple-choice task ran as it did), each recorded in results.json and, where it is news,
logged."""

from __future__ import annotations

import logging
import math
from typing import Any, Sequence

from proctor.engine.outcomes import TaskOutcome
from proctor.engine.prepare import PreparedTask
from proctor.models.base import Model
from proctor.runs.label_alignment import misaligned_labels
from proctor.runs.outcome_tally import OutcomeTally
from proctor.runs.task_result import OutcomeCount, Truncated, Unparsed

log = logging.getLogger("proctor.engine.runner")  # the name the console's log lines have always shown


def warn(outcome: TaskOutcome, message: str) -> None:
    """A warning in the task's result (results.json, the report) and on the console."""
    outcome.result.add_warning(message)
    log.warning("%s: %s", outcome.name, message)


def record_choice(outcome: TaskOutcome, model: Model, prepared: PreparedTask, images: bool) -> None:
    """Why a multiple-choice task ran as it did (``mc_format_reason``); a fallback to lettered generation that
    an automatic check chose (a server's failed log-likelihood self-check) is also a warning."""
    chosen = outcome.result.mc_format
    if prepared.mc_format != "auto":
        outcome.result.mc_format_reason = f"--mc-format {prepared.mc_format}"
        return
    found = getattr(model, "loglikelihood_reason", None)
    if chosen == "generate" and model.supports_loglikelihood and images:
        outcome.result.mc_format_reason = f"model '{model.name}' cannot score log-likelihoods with images"
    elif found:
        outcome.result.mc_format_reason = found
    if chosen == "generate" and getattr(model, "loglikelihood_fallback", False):
        message = (
            f"multiple choice ran by lettered generation, not log-likelihoods: model '{model.name}' failed its "
            f"log-likelihood check ({found}). The two give different numbers; --mc-format loglikelihood or "
            "--mc-format generate fixes the choice"
        )
        warn(outcome, message)


def warn_bounded(outcome: TaskOutcome, results: Sequence[Any]) -> None:
    """Log-likelihoods that are upper bounds (a continuation not among a server's top next tokens, in its
    ``top_logprobs`` mode): an approximation the backend fell back to, so a warning."""
    bounded = sum(1 for r in results if getattr(r, "bounded", False))
    if bounded:
        message = (
            f"{bounded} of {len(results)} continuations were not among the server's top next tokens and were "
            "scored with an upper bound (the lowest listed log-prob), not their log-prob: raise "
            "--model-arg top_logprobs=..., or use a server with prompt log-probs"
        )
        warn(outcome, message)


def warn_truncated(outcome: TaskOutcome, model: Model, count: int, total: int) -> None:
    """Prompts cut to fit the model's window are scored on their end only: counted, and a warning."""
    window = getattr(model, "max_length", None)
    outcome.result.truncated = Truncated(count=count, n=total)
    limit = f" ({window} tokens for this model, or the task's max_length)" if isinstance(window, int) else ""
    message = (
        f"{count} of {total} requests were longer than the context window{limit} and were cut on the left: "
        "they were scored without the start of their prompt (fewer few-shot examples, shorter prompts or a "
        "longer context avoid it)"
    )
    warn(outcome, message)


def warn_not_numbers(outcome: TaskOutcome) -> None:
    """A metric whose value is NaN or infinite is not a result (results.json writes it as null): say why."""
    for name, entry in outcome.result.metrics.items():
        value = entry.value
        if isinstance(value, float) and math.isnan(value):
            unscored = entry.n_unscored
            why = f": none of the samples gave it a value ({unscored} unscored)" if unscored else ""
            message = f"metric '{name}' is not a number (NaN){why}"
            if not any(f"'{name}'" in w for w in outcome.result.warnings or []):  # a dialect may have said why already
                outcome.result.add_warning(message)
        elif isinstance(value, float) and math.isinf(value):  # results.json writes it as null: say what it was
            outcome.result.add_warning(
                f"metric '{name}' is infinite (too large for a number): the log-probs it is computed from average "
                "hundreds of nats per unit, which no working model gives; check the model or server "
                "(samples.jsonl holds each sample's log-prob)"
            )


def report_outcomes(outcome: TaskOutcome, tally: OutcomeTally) -> None:
    """What the task's replies held besides answers (runs/outcome_tally.py): every count in results.json's
    ``outcomes``, lettered generation's in ``unparsed``, and a warning for each outcome above its share."""
    tally.add_records(outcome.records)
    tally.one_letter(outcome.records)
    tally.finish()
    lettered = tally.lettered()
    if lettered is not None:
        outcome.result.unparsed = Unparsed(count=lettered.count, n=lettered.n, rate=lettered.count / lettered.n)
    counts = tally.as_json()
    if counts:
        outcome.result.outcomes = {key: OutcomeCount.model_validate(count) for key, count in counts.items()}
    for _, _, message in tally.warned():
        warn(outcome, message)
    misaligned = misaligned_labels(outcome.records)
    if misaligned is not None:
        warn(outcome, misaligned)
