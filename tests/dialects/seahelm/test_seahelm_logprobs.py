"""SEA-HELM ``-logprobs`` tasks as SEA-HELM's LogprobsInferenceStrategy + LogProbMetric compute them.

Expected values use SEA-HELM's own formulas, written out here from src/metrics/logprob_metric.py and
src/metrics/seahelm_metric.py (@ 6844e6c): probability = exp(cum)·100 (null -> 0), log-prob mean/stderr over
non-null rows (0, 0 when fewer than two), stderr = sqrt(statistics.variance(v) / len(v)).
"""

from __future__ import annotations

import hashlib
import math
import statistics
from typing import Sequence

import pytest

from proctor.api import evaluate
from proctor.core.model_requests import GenerateResult, LoglikelihoodResult
from proctor.dialects.seahelm.logprobs import answer_tag_separator, logprob_summary
from proctor.models.base import Model
from tests.support.seahelm_fixtures import NLI_ROWS, seahelm_tree


def _seahelm_logprob_metric(cumulative_logprobs: list) -> dict:
    """SEA-HELM's LogProbMetric.calculate_metrics, line by line."""

    def isna(x):
        return x is None or (isinstance(x, float) and math.isnan(x))

    def stderr(values):
        return 0.0 if len(values) <= 1 else math.sqrt(statistics.variance(values) / len(values))

    null_count = sum(isna(x) for x in cumulative_logprobs)
    wo_nulls = [x for x in cumulative_logprobs if not isna(x)]
    if len(wo_nulls) > 1:
        avg_lp, se_lp = statistics.mean(wo_nulls), stderr(wo_nulls)
    else:
        avg_lp, se_lp = 0.0, 0.0
    probs = [0 if isna(x) else math.exp(x) * 100 for x in cumulative_logprobs]
    return {
        "null_count": null_count,
        "average_cumulative_logprobs": avg_lp,
        "clt_se_cumulative_logprobs": se_lp,
        "average_cumulative_probabilities": statistics.mean(probs),
        "clt_se_cumulative_probabilities": stderr(probs),
    }


@pytest.mark.fast
@pytest.mark.parametrize("values", [[-0.1, None, -2.3, float("nan"), -0.7], [None, -0.4], [None, None, None]])
def test_logprob_summary_is_seahelms_formula(values):
    got, want = logprob_summary(values), _seahelm_logprob_metric(values)
    assert set(got) == set(want)
    for key in want:
        assert got[key] == pytest.approx(want[key], abs=1e-12), key


def test_answer_tag_separator_as_task_config_reads_it():
    assert answer_tag_separator({"answer_template": "{answer_tag} {label}", "answer_tag": "Jawaban:"}) == " "
    assert (
        answer_tag_separator({"answer_template": "{answer_tag}\n{label}"}) == " "
    )  # "." stops at the newline: the fallback
    assert answer_tag_separator({"answer_template": None, "answer_tag_separator": "\n"}) == "\n"
    assert answer_tag_separator({"answer_template": None}) == " "


def _unit(*parts) -> float:
    return int.from_bytes(hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()[:8], "big") / 2**64


class ScriptedModel(Model):
    """Chat model whose generation per prompt is scripted by the sentence it contains; log-probs are a
    function of (context, continuation). Records every request."""

    name = "scripted"
    has_chat_template = True

    def __init__(self, script: dict[str, tuple[str, str]]) -> None:
        self.script = script
        self.generated: list = []
        self.scored: list = []

    @property
    def fingerprint(self) -> dict:
        return {"backend": "scripted", "script": sorted(self.script.items())}

    def apply_chat_template(self, messages) -> str:
        return "".join(f"<{m['role']}>{m['content']}</{m['role']}>" for m in messages) + "<assistant>"

    def generate(self, requests, progress=None):
        out = []
        for r in requests:
            self.generated.append(r)
            text, reason = next(v for k, v in self.script.items() if k in r.prompt)
            out.append(GenerateResult(text, reason, 10, 5))
        return out

    @staticmethod
    def logprob(context: str, continuation: str) -> float:
        return -3.0 * _unit(context, continuation)

    def loglikelihood(self, requests, progress=None):
        self.scored += list(requests)
        return [
            LoglikelihoodResult(
                self.logprob(r.context, r.continuation), (self.logprob(r.context, r.continuation),), False
            )
            for r in requests
        ]

    def rolling_loglikelihood(self, requests: Sequence, progress=None):
        raise NotImplementedError


def test_logprob_task_generates_to_the_tag_and_skips_rows_that_ran_out(tmp_path):
    tasks, options = seahelm_tree(tmp_path, nli_langs=("id",))
    script = {  # by SENTENCE_1 of each NLI row
        NLI_ROWS[0][1]: (
            "Saya pikir ini benar. Jawaban: entailment",
            "stop",
        ),  # stopped at the tag (text goes on after it)
        NLI_ROWS[1][1]: ("bla bla bla bla", "length"),  # ran out of max_tokens: skipped, null
        NLI_ROWS[2][1]: ("Tidak tahu.", "stop"),  # end of sequence without the tag: still scored (vLLM's "stop")
        NLI_ROWS[3][1]: ("Jawaban:", "stop"),
    }
    model = ScriptedModel(script)
    result = evaluate(
        [tasks],
        model,
        select=["nli-logprobs/id"],
        output_dir=tmp_path / "run",
        export=False,
        dialect_options={**options, "seahelm_tasks": "seahelm_logprobs"},
    )
    assert all(r.stop == () for r in model.generated)  # the tag is found in the text; no "\n\n" stop either
    prompts = {next(k for k in script if k in r.prompt): r.prompt for r in model.generated}
    expected_ctx = {
        NLI_ROWS[0][1]: prompts[NLI_ROWS[0][1]] + "Saya pikir ini benar. Jawaban:",
        NLI_ROWS[2][1]: prompts[NLI_ROWS[2][1]] + "Tidak tahu.",
        NLI_ROWS[3][1]: prompts[NLI_ROWS[3][1]] + "Jawaban:",
    }
    labels = {a: label for label, a, _ in NLI_ROWS}
    got = {(r.context, r.continuation) for r in model.scored}
    assert got == {
        (ctx, " " + labels[key]) for key, ctx in expected_ctx.items()
    }  # only the gold label, after the separator
    cumulative = [
        ScriptedModel.logprob(expected_ctx[a], " " + label) if a in expected_ctx else None for label, a, _ in NLI_ROWS
    ]
    want = _seahelm_logprob_metric(cumulative)
    metrics = result.tasks["nli-logprobs/id"]["metrics"]
    assert "accuracy" not in metrics
    for key, value in want.items():
        assert metrics[key]["value"] == pytest.approx(value), key
    assert want["null_count"] == 1
    # the task's standard error is SEA-HELM's clt_se, on the value's own scale
    assert metrics["average_cumulative_probabilities"]["stderr"] == pytest.approx(
        want["clt_se_cumulative_probabilities"]
    )
    assert metrics["average_cumulative_logprobs"]["stderr"] == pytest.approx(want["clt_se_cumulative_logprobs"])
    # per-row scores are SEA-HELM's probabilities_accuracy (0-100), as MinimalPairsLogProbMetric's
    from proctor.runs.run_exports import iter_samples

    records = sorted(
        (r for r in iter_samples(result.run_dir) if r["task"] == "nli-logprobs/id"), key=lambda r: str(r["id"])
    )
    scores = [r["metrics"]["seahelm_row_score"] for r in records]
    assert scores == pytest.approx([0 if c is None else 100 * math.exp(c) for c in cumulative])


def test_logprob_task_on_tiny_model_nulls_rows_without_the_tag(tiny_model, tmp_path):
    """The tiny random model never writes 'Jawaban:' within 8 tokens: by SEA-HELM's rule every row that ran out
    of tokens is null (probability 0), instead of scoring the labels after an appended tag."""
    from proctor.core.model_requests import GenerateRequest
    from proctor.dialects.seahelm import prompts as P

    tasks, options = seahelm_tree(tmp_path, max_tokens=8, nli_langs=("id",))
    result = evaluate(
        [tasks],
        tiny_model,
        select=["nli-logprobs/id"],
        output_dir=tmp_path / "run",
        export=False,
        dialect_options={**options, "seahelm_tasks": "seahelm_logprobs"},
    )
    metrics = result.tasks["nli-logprobs/id"]["metrics"]
    template = {
        "preamble": "Tentukan hubungan SENTENCE_1 dan SENTENCE_2. Jawablah hanya dengan format berikut ini:\n"
        '"{answer_tag} ANSWER"',
        "task_template": "SENTENCE_1: {sentence1}\nSENTENCE_2: {sentence2}",
        "answer_template": "{answer_tag} {label}",
        "answer_tag": "Jawaban:",
    }
    expected_null = 0
    for label, a, b in NLI_ROWS:
        messages = P.conversation(template, {"prompts": [{"sentence1": a, "sentence2": b}], "label": label}, 1, [], [])
        out = tiny_model.generate([GenerateRequest(P.render(tiny_model, messages, False), max_tokens=8)])[0]
        expected_null += "Jawaban:" not in out.text and out.finish_reason == "length"
    assert metrics["null_count"]["value"] == expected_null
    if expected_null == len(NLI_ROWS):
        assert metrics["average_cumulative_probabilities"]["value"] == 0.0
