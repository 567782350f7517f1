"""Answer normalisation, exact match and token F1: one of each, the normalisation given as an argument.

Every token F1 in proctor is ``token_f1`` here; a system whose rule differs from SQuAD's passes its own
``Normalisation`` (SEA-HELM keeps articles and segments Thai and Chinese first) and says what two empty
answers score (``both_empty``: SQuAD v2's 1, GLM-130B's and SEA-HELM's 0, since they have no overlap).
"""

from __future__ import annotations

from collections import Counter
from typing import Callable

# the normalisation itself lives in core, where the audit reads it too
from proctor.core.answer_normalisation import SQUAD, SQUAD_KEEP_ARTICLES, Normalisation

__all__ = [
    "SQUAD",
    "SQUAD_KEEP_ARTICLES",
    "Normalisation",
    "best_over_references",
    "exact_match",
    "normalize_answer",
    "token_f1",
]


def normalize_answer(text: str, normalisation: Normalisation = SQUAD) -> str:
    """Lower-case, drop punctuation and English articles, collapse whitespace (SQuAD v1.1), unless
    ``normalisation`` says otherwise."""
    return normalisation(text)


def exact_match(prediction: str, reference: str, normalisation: Normalisation = SQUAD) -> float:
    return float(normalisation(prediction) == normalisation(reference))


def token_f1(
    prediction: str, reference: str, normalisation: Normalisation = SQUAD, *, both_empty: float = 1.0
) -> float:
    """Harmonic mean of precision and recall of the normalised answers' token multisets; 0 without a shared
    token, and ``both_empty`` where both have no token (SQuAD v2 scores that 1; a system that scores it 0,
    as SQuAD v1.1's script, GLM-130B and SEA-HELM do, passes 0.0)."""
    pred_tokens = normalisation(prediction).split()
    ref_tokens = normalisation(reference).split()
    if not pred_tokens and not ref_tokens:
        return both_empty
    common = Counter(pred_tokens) & Counter(ref_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred_tokens)
    recall = overlap / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def best_over_references(fn: Callable[[str, str], float], prediction: str | None, references: list[str]) -> float:
    if prediction is None or not references:
        return 0.0
    return max(fn(prediction, ref) for ref in references)
