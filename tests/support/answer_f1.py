"""Token F1 and exact match as the original systems write them, copied out independently of proctor (the
expected values of the token-F1 tests), and ``PAIRS``: (prediction, reference) pairs that tell the rules apart
(punctuation, articles, Chinese characters and punctuation, empty answers, repeated tokens).

- ``squad_v1``: SQuAD v1.1's ``evaluate-v1.1.py`` (``normalize_answer``, ``f1_score``, ``exact_match_score``):
  0 when no token is shared, two empty answers included. GLM-130B's ``evaluation/metrics.py`` is this script.
- ``squad_v2``: SQuAD v2.0's ``evaluate-v2.0.py`` (``compute_f1``): an empty answer scores 1 against an empty
  one, 0 against any other. AISteer360's ``ShortAnswerMatch`` (``_token_f1``) and proctor's ``f1`` use this rule.
- ``seahelm``: SEA-HELM's ``QuestionAnsweringMetric``: v1.1's rule without removing articles, after Thai or
  Chinese text is split into words (pythainlp ``newmm``, jieba) and joined by spaces.
"""

from __future__ import annotations

import collections
import re
import string
from typing import Callable

PAIRS = [
    ("The cat sat.", "a cat sat"),
    ("the the cat", "The cat, the cat!"),
    ("An apple", "apple"),
    ("", ""),
    ("", "the"),
    ("the", "a an"),
    ("...", ""),
    ("Paris, France", "paris france"),
    ("theater another", "the ater"),
    ("can't", "cant"),
    ("U.S.A.", "usa"),
    ("Éclair au café", "éclair"),
    ("  spaced\tout\nanswer ", "spaced out"),
    ("cat cat cat", "cat"),
    ("1,000 km", "1000 km"),
    ("北京是中国的首都", "北京"),
    ("北京 是 首都。", "北京 首都"),
    ("中国，北京", "中国 北京"),
    ("“quoted” answer", '"quoted" answer'),
    ("dog", "cat"),
]


def _white_space_fix(text: str) -> str:
    return " ".join(text.split())


def _remove_punc(text: str) -> str:
    exclude = set(string.punctuation)
    return "".join(ch for ch in text if ch not in exclude)


def _remove_articles(text: str) -> str:
    return re.sub(r"\b(a|an|the)\b", " ", text)


def squad_normalize(s: str) -> str:
    """SQuAD's normalize_answer: lower, remove punctuation, remove articles, fix white space."""
    return _white_space_fix(_remove_articles(_remove_punc(s.lower())))


def seahelm_normalize(s: str) -> str:
    """SEA-HELM's: lower, remove punctuation, fix white space (articles kept)."""
    return _white_space_fix(_remove_punc(s.lower()))


def _f1_v1(normalize: Callable[[str], str], prediction: str, ground_truth: str) -> float:
    prediction_tokens = normalize(prediction).split()
    ground_truth_tokens = normalize(ground_truth).split()
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def squad_v1_f1(prediction: str, ground_truth: str) -> float:
    return _f1_v1(squad_normalize, prediction, ground_truth)


def squad_v1_em(prediction: str, ground_truth: str) -> bool:
    return squad_normalize(prediction) == squad_normalize(ground_truth)


def squad_v2_f1(a_gold: str, a_pred: str) -> float:
    """evaluate-v2.0.py's compute_f1 (note its argument order: gold first)."""

    def get_tokens(s: str) -> list[str]:
        if not s:
            return []
        return squad_normalize(s).split()

    gold_toks = get_tokens(a_gold)
    pred_toks = get_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def seahelm_f1(prediction: str, ground_truth: str, split_words: Callable[[str], str] = lambda s: s) -> float:
    return _f1_v1(seahelm_normalize, split_words(prediction), split_words(ground_truth))


def seahelm_em(prediction: str, ground_truth: str, split_words: Callable[[str], str] = lambda s: s) -> bool:
    return seahelm_normalize(split_words(prediction)) == seahelm_normalize(split_words(ground_truth))
