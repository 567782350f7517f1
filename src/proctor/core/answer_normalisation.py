"""How an answer is normalised before it is compared: SQuAD's rule and its variants (``Normalisation``).

Kept in ``core`` so that both the metrics (``scoring/text.py``) and the audit, which asks before a model loads
whether a reference can be matched at all, read one definition.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Callable

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)  # ASCII only, as SQuAD's script: '，' or '。' stay


@dataclass(frozen=True)
class Normalisation:
    """What is done to an answer before it is compared, in this order; the tokens are then its
    whitespace-separated words (``str.split``)."""

    segment: Callable[[str], str] | None = None  # words joined by spaces, for scripts written without them
    lower: bool = True
    punctuation: bool = True  # drop ASCII punctuation characters (string.punctuation)
    articles: bool = True  # replace the English words a, an, the by a space

    def __call__(self, text: str) -> str:
        if self.segment is not None:
            text = self.segment(text)
        if self.lower:
            text = text.lower()
        if self.punctuation:
            text = "".join(ch for ch in text if ch not in _PUNCTUATION)
        if self.articles:
            text = _ARTICLES.sub(" ", text)
        return " ".join(text.split())


SQUAD = Normalisation()  # SQuAD v1.1's normalize_answer: lower, punctuation, articles, whitespace
SQUAD_KEEP_ARTICLES = Normalisation(articles=False)  # SEA-HELM's QuestionAnsweringMetric
