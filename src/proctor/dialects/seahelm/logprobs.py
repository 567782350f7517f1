"""SEA-HELM's log-prob strategy (``LogprobsInferenceStrategy``) and its ``LogProbMetric``.

The strategy: generate with the answer tag as the stop string (the tag kept in the text); a row whose
generation did not finish with "stop" (it ran out of ``max_tokens``) is skipped — its cumulative
log-prob is null; every other row scores ``answer_tag_separator + label`` (its own gold label only)
after the conversation plus the model's own generated text. An end-of-sequence stop also counts as
"stop" (vLLM's finish reason), so such a row is scored after its text without the tag, as in SEA-HELM.

The metric: probabilities 100·exp(cumulative log-prob), a null row counting 0; the log-prob mean and
its standard error over the non-null rows (both 0 when fewer than two), the probability mean and its
standard error over every row; ``null_count``. Standard errors are ``sqrt(statistics.variance / n)``.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass
from typing import Any, Sequence

from proctor.core.model_requests import LoglikelihoodRequest
from proctor.dialects.seahelm.metrics import SeaHelmMetric, calculate_stderr


def answer_tag_separator(template: dict) -> str:
    """The text between ``{answer_tag}`` and ``{label}`` in ``answer_template`` (TaskConfig.get_generation_kwargs),
    else the template's ``answer_tag_separator``, else one space."""
    try:
        found = re.search("(?<={answer_tag})(.*)(?={label})", template["answer_template"])
    except Exception:  # no answer_template: SEA-HELM's fallback (below)
        found = None
    if found is None:  # or no {answer_tag}...{label} in it
        return template.get("answer_tag_separator", " ")
    return found.group(1)


def _is_null(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


@dataclass(frozen=True)
class Intermediate:
    """One row after the generation up to the answer tag."""

    response: str  # the generated text, the tag included when the generation stopped there
    scored: bool  # False: the generation did not stop (length), the row is null


def intermediate(text: str, finish_reason: str, tag: str) -> Intermediate:
    """The generation as SEA-HELM's stop-at-tag call returns it. proctor generates without the stop
    string and cuts after the tag's first occurrence, which gives the same text (decoding up to the tag is
    unchanged) and tells a tag stop from an end-of-sequence stop (backends drop the stop string)."""
    if tag and tag in text:
        return Intermediate(text[: text.index(tag) + len(tag)], True)
    return Intermediate(text, finish_reason == "stop")


def label_requests(
    prompts: Sequence[str],
    steps: Sequence[Intermediate],
    labels: Sequence[object],
    separator: str,
    images: Sequence[tuple] | None = None,
) -> tuple[list[int], list]:
    """(rows scored, their requests): log P(separator + label | prompt + generated text) for each scored row
    (with the row's images, for image tasks)."""
    rows, requests = [], []
    for i, (prompt, step, label) in enumerate(zip(prompts, steps, labels)):
        if step.scored:
            rows.append(i)
            requests.append(
                LoglikelihoodRequest(
                    prompt + step.response,
                    separator + str(label),
                    move_whitespace=False,
                    images=images[i] if images else (),
                )
            )
    return rows, requests


def probabilities(cumulative: Sequence[Any]) -> list[float]:
    """100·exp(log-prob) per row, 0 for a null row."""
    return [0.0 if _is_null(x) else math.exp(x) * 100 for x in cumulative]


def logprob_summary(cumulative: Sequence[Any]) -> dict:
    """LogProbMetric.calculate_metrics' dictionary for per-row cumulative log-probs (None/NaN: null)."""
    valid = [float(x) for x in cumulative if not _is_null(x)]
    if len(valid) > 1:
        mean_logprob, se_logprob = statistics.mean(valid), calculate_stderr(valid)
    else:  # SEA-HELM: "Num valid cumulative logprobs < 2. Setting average and stderr to 0."
        mean_logprob, se_logprob = 0.0, 0.0
    probs = probabilities(cumulative)
    return {
        "null_count": sum(_is_null(x) for x in cumulative),
        "average_cumulative_logprobs": mean_logprob,
        "clt_se_cumulative_logprobs": se_logprob,
        "average_cumulative_probabilities": statistics.mean(probs) if probs else 0.0,
        "clt_se_cumulative_probabilities": calculate_stderr(probs),
    }


class LogProbMetric(SeaHelmMetric):
    """SEA-HELM's ``src/metrics/logprob_metric.py``: reads ``cumulative_logprobs`` (one list per row,
    its first item), reports :func:`logprob_summary` and per-row ``probabilities_accuracy`` (0-100)."""

    uses_logprobs = True

    def postprocess_responses(self) -> None:
        pass  # SEA-HELM's LogProbMetric extracts nothing from the responses

    def calculate_metrics(self):
        df = self.inference_df
        cumulative = [x[0] if isinstance(x, (list, tuple)) else x for x in df["cumulative_logprobs"]]
        out = logprob_summary(cumulative)
        if "mc_format" in df and (df["mc_format"] == "generate").any():
            # proctor's stand-in on a chat-only model (a lettered question): probability 1 or 0 per row, no
            # log-prob exists; a null is a reply with no letter
            out["average_cumulative_logprobs"] = out["clt_se_cumulative_logprobs"] = float("nan")
            out["null_count"] = sum(_is_null(x) for x in df["predicted_label"]) if "predicted_label" in df else 0
        self.update_individual_scores(probabilities(cumulative))
        return out, df
