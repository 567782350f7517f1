"""Metric definitions against hand-computed values."""

from __future__ import annotations

import math
import re

import pytest

from proctor.core.task_spec import ExtractionSpec
from proctor.kinds.multiple_choice import softmax
from proctor.scoring.extraction import AnswerExtractor
from proctor.scoring.metrics import METRICS, get_metric, mean_stderr
from proctor.scoring.outcomes import ChoiceOutcome, GenerationOutcome, PerplexityOutcome
from proctor.scoring.text import normalize_answer, token_f1

pytestmark = pytest.mark.fast


def choice(logprobs, n_tokens, lengths, gold):
    return ChoiceOutcome(
        tuple(logprobs), tuple(n_tokens), tuple(lengths), (gold,), (False,) * len(logprobs), tuple(softmax(logprobs))
    )


def compute(name, outcome, **kwargs):
    return METRICS[name].compute(outcome, **kwargs)


def test_acc_variants_disagree_as_defined():
    # raw: choice 0 wins; per character: choice 1 (-6/12 = -0.5 vs -4/2 = -2); per token: choice 2 (-5/10)
    outcome = choice([-4.0, -6.0, -5.0], [2, 3, 10], [2, 12, 3], gold=1)
    assert compute("acc", outcome) == 0.0
    assert compute("acc_norm", outcome) == 1.0
    assert compute("acc_per_token", outcome) == 0.0
    outcome = choice([-4.0, -6.0, -5.0], [2, 3, 10], [2, 12, 3], gold=2)
    assert compute("acc_per_token", outcome) == 1.0


def test_ties_go_to_the_first_choice_like_numpy():
    assert compute("acc", choice([-1.0, -1.0], [1, 1], [1, 1], gold=0)) == 1.0
    assert compute("acc", choice([-1.0, -1.0], [1, 1], [1, 1], gold=1)) == 0.0


def test_distribution_and_brier():
    outcome = choice([math.log(0.2), math.log(0.6), math.log(0.2)], [1, 1, 1], [1, 1, 1], gold=1)
    assert list(outcome.distribution) == pytest.approx([0.2, 0.6, 0.2])
    assert compute("brier_score", outcome) == pytest.approx(0.04 + 0.16 + 0.04)
    assert softmax([0.0, math.log(3)], temperature=2.0) == pytest.approx(
        [1 / (1 + math.sqrt(3)), math.sqrt(3) / (1 + math.sqrt(3))]
    )


def test_squad_normalisation_and_f1():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("An apple, a pear") == "apple pear"
    assert token_f1("the cat sat", "cat sat down") == pytest.approx(2 * (2 / 2) * (2 / 3) / (1 + 2 / 3))
    assert token_f1("dog", "cat") == 0.0


def test_exact_match_and_f1_take_the_best_reference():
    outcome = GenerationOutcome("Bob Scott", "Bob Scott", True, ("Bobby Scott", "bob scott."))
    assert compute("exact_match", outcome) == 1.0
    outcome = GenerationOutcome("Scott", "Scott", True, ("Bobby Scott", "Robert Scott Jr"))
    assert compute("exact_match", outcome) == 0.0
    assert compute("f1", outcome) == pytest.approx(2 / 3)


def test_unparsed_answers_score_zero_and_count_as_null():
    outcome = GenerationOutcome("no idea", None, False, ("Paris",))
    assert compute("exact_match", outcome) == 0.0 and compute("null_count", outcome) == 1.0
    value, stderr = METRICS["null_count"].aggregate([1.0, 0.0, 1.0])
    assert value == 2.0 and stderr is None


def test_mean_stderr_uses_sample_standard_deviation():
    value, stderr = mean_stderr([1.0, 0.0, 1.0, 1.0])
    assert value == 0.75
    assert stderr == pytest.approx(math.sqrt(0.25) / 2)  # sample std 0.5, n = 4
    assert mean_stderr([1.0])[1] is None


def test_perplexities_pool_log_likelihood_over_units():
    outcomes = [PerplexityOutcome(-10.0, 5, 2, 12), PerplexityOutcome(-20.0, 15, 8, 30)]
    values = {
        name: METRICS[name].aggregate([compute(name, o) for o in outcomes])[0]
        for name in ("word_perplexity", "token_perplexity", "bits_per_byte", "byte_perplexity")
    }
    assert values["word_perplexity"] == pytest.approx(math.exp(30 / 10))
    assert values["token_perplexity"] == pytest.approx(math.exp(30 / 20))
    assert values["byte_perplexity"] == pytest.approx(math.exp(30 / 42))
    assert values["bits_per_byte"] == pytest.approx(30 / 42 / math.log(2))


def test_unknown_metric_suggests_the_close_name():
    with pytest.raises(KeyError, match="Did you mean 'acc_norm'"):
        get_metric("acc_nrom", "multiple_choice")


@pytest.mark.parametrize(
    "spec, text, expected",
    [
        (ExtractionSpec(), "  Paris \n", ("Paris", True)),
        (ExtractionSpec(regex=r"#### (-?\d+)"), "so 3+4 = 7\n#### 7", ("7", True)),
        (ExtractionSpec(regex=r"#### (\d+)", fallback="none"), "I think 7", (None, False)),
        (ExtractionSpec(regex=r"#### (\d+)"), "I think 7", ("I think 7", False)),
        (ExtractionSpec(answer_tag="Answer:"), "Reasoning...\nAnswer: B\nmore", ("B", True)),
        (ExtractionSpec(answer_tag="answer:", ignore_case=True, regex=r"\b([A-D])\b"), "ANSWER: option C", ("C", True)),
        (ExtractionSpec(answer_tag="Answer:", fallback="none"), "no tag here", (None, False)),
    ],
)
def test_answer_extraction(spec, text, expected):
    assert AnswerExtractor(spec).extract(text) == expected


def test_a_runaway_extraction_regex_on_an_answer_names_the_row(monkeypatch):
    """The scorer searches each answer with the time bound too: an answer that sets a nested repeat backtracking
    is an error naming the task's ``extraction.regex`` and the row whose answer met it, not a run that stalls."""
    from proctor.core import bounded_regex
    from proctor.core.errors import TaskDefinitionError
    from proctor.core.model_requests import GenerateResult
    from proctor.core.task_spec import TaskSpec
    from proctor.data.sources import Sample
    from proctor.kinds.generate import GenerateKind
    from proctor.prompts.builder import PreparedSample, Prompt

    monkeypatch.setattr(bounded_regex, "SEARCH_SECONDS", 0.2)
    spec = TaskSpec.model_validate(
        {
            "name": "t",
            "kind": "generate",
            "data": "d.jsonl",
            "prompt": "Q",
            "target": "{{ a }}",
            "extraction": {"regex": "(a|aa)+$"},
        }
    )
    sample = PreparedSample(
        Sample(id="s7", fields={}, file="d.jsonl", row=7, index=6), Prompt(text="Q"), references=("aa",)
    )
    kind = GenerateKind()
    outcome, _ = kind.outcome(spec, sample, [GenerateResult(" aaaa", "stop", 1, 2)])
    expected = re.search("(a|aa)+$", " aaaa").group(1)  # a sane answer: the group as re reads it ('a')
    assert (outcome.answer, outcome.parsed) == (expected, True)
    with pytest.raises(TaskDefinitionError, match=r"d\.jsonl, row 7, field 'extraction\.regex'.*\(a\|aa\)\+\$"):
        kind.outcome(spec, sample, [GenerateResult("a" * 40 + "!", "stop", 1, 41)])
