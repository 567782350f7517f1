"""GLM-130B's metrics, by GLM's names and on GLM's scale (x100), as GLM computes them.

- ``Accuracy``: multiple choice: the choice with the highest summed log-prob is the label;
  generation (GLM's LAMBADA rule): the stripped prediction equals a stripped target.
- ``Accuracy_norm`` / ``Accuracy_per_token``: the same, with log-probs divided by the choice's
  length in characters / tokens (not in GLM; offered as length-normalised variants).
- ``Precision``, ``Recall``, ``F1_mul``: micro-averaged over labels (as sklearn's ``average="micro"``,
  which for one label per sample equals accuracy).
- ``EM`` / ``F1``: SQuAD-normalised exact match and token F1, best over the targets, 0 when a sample
  has no targets (still counted).
- ``PPL``: word-level perplexity exp(min(20, total loss / len(text.strip().split(" ")))); ``BPB``: bits per UTF-8 byte.
"""

from __future__ import annotations

import math

from proctor.scoring.metrics import pooled_ratio, register_metric, unscored
from proctor.scoring.outcomes import ChoiceOutcome, GenerationOutcome, PerplexityOutcome
from proctor.scoring.text import SQUAD, exact_match, token_f1

_HUNDRED = 100.0


def _first_max(values) -> int:
    best = 0
    for i, value in enumerate(values):
        if value > values[best]:
            best = i
    return best


def _choice_correct(outcome: ChoiceOutcome, scores) -> float:
    return _HUNDRED * float(_first_max(list(scores)) in outcome.gold)


def glm_exact_match(prediction: str, target: str) -> float:
    return exact_match(prediction, target, SQUAD)


def glm_f1(prediction: str, target: str) -> float:
    """Token-multiset F1 of the SQuAD-normalised texts; 0 without overlap, also when both are empty
    (GLM's ``f1_score`` returns 0 whenever no token is shared)."""
    return token_f1(prediction, target, SQUAD, both_empty=0.0)


def _best(fn, outcome: GenerationOutcome) -> float:
    prediction = outcome.answer if outcome.answer is not None else ""
    if not outcome.references:
        return 0.0
    return _HUNDRED * max(fn(prediction, target) for target in outcome.references)


@register_metric("Accuracy", ["multiple_choice", "generate"])
def _accuracy(outcome) -> float | None:
    if isinstance(outcome, GenerationOutcome):
        return _best(lambda p, t: float(p.strip() == t.strip()), outcome)
    return None if not outcome.gold else _choice_correct(outcome, outcome.logprobs)


@register_metric("Accuracy_norm", ["multiple_choice"])
@unscored
def _accuracy_norm(outcome: ChoiceOutcome) -> float:
    return _choice_correct(outcome, [lp / max(n, 1) for lp, n in zip(outcome.logprobs, outcome.char_lengths)])


@register_metric("Accuracy_per_token", ["multiple_choice"])
@unscored
def _accuracy_per_token(outcome: ChoiceOutcome) -> float:
    return _choice_correct(outcome, [lp / max(n, 1) for lp, n in zip(outcome.logprobs, outcome.n_tokens)])


for _name in ("Precision", "Recall", "F1_mul"):
    register_metric(_name, ["multiple_choice"])(unscored(lambda outcome: _choice_correct(outcome, outcome.logprobs)))


@register_metric("EM", ["generate"])
def _em(outcome: GenerationOutcome) -> float:
    return _best(glm_exact_match, outcome)


@register_metric("F1", ["generate"])
def _f1(outcome: GenerationOutcome) -> float:
    return _best(glm_f1, outcome)


@register_metric(
    "PPL", ["perplexity"], aggregate=pooled_ratio(lambda lp, n: math.exp(min(20.0, -lp / n))), higher_is_better=False
)
def _ppl(outcome: PerplexityOutcome) -> tuple[float, int]:
    # GLM's LanguageModelTaskDataset: num_original_tokens = len(raw_text.strip().split(" ")), so runs of
    # spaces and newlines count as GLM counts them (not str.split()'s whitespace words)
    words = outcome.n_space_words if outcome.n_space_words is not None else outcome.n_words
    return outcome.logprob, words


@register_metric(
    "BPB", ["perplexity"], aggregate=pooled_ratio(lambda lp, n: -lp / n / math.log(2)), higher_is_better=False
)
def _bpb(outcome: PerplexityOutcome) -> tuple[float, int]:
    return outcome.logprob, outcome.n_bytes
