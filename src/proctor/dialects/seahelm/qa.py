"""SEA-HELM's ``QuestionAnsweringMetric``: SQuAD-style F1 / exact match without article removal.

Thai and Chinese are written without spaces between words, so SEA-HELM first segments them (Thai:
pythainlp's newmm, Chinese: jieba), joins the words with spaces, and only then normalises and splits;
for these two languages it scores against the first reference only. Both tokenisers are optional
extras (``proctor[seahelm-th]``, ``proctor[seahelm-zh]``).
"""

from __future__ import annotations

import functools

import numpy as np

from proctor.core.errors import ProctorError
from proctor.dialects.seahelm.metrics import _FreeTextMetric, references
from proctor.scoring.text import SQUAD_KEEP_ARTICLES, Normalisation, exact_match, token_f1

SEGMENTED = {"th": ("pythainlp", "seahelm-th", "Thai"), "zh": ("jieba", "seahelm-zh", "Chinese")}


def _missing(lang: str) -> ProctorError:
    package, extra, name = SEGMENTED[lang]
    return ProctorError(
        f"{name} QA F1 ({lang}) needs {package}, as SEA-HELM uses it to split words: pip install 'proctor[{extra}]'"
    )


def require_segmenter(lang: str) -> None:
    """Fail before any generation when the metric will need a tokeniser that is not installed."""
    if lang in SEGMENTED:
        segment("", lang)


def segment(text: str, lang: str) -> str:
    """Words joined by spaces, as SEA-HELM tokenises Thai and Chinese before scoring; other languages unchanged."""
    if lang == "th":
        try:
            from pythainlp.tokenize import word_tokenize
        except ImportError:
            raise _missing(lang) from None
        return " ".join(word_tokenize(text, engine="newmm"))
    if lang == "zh":
        try:
            import jieba
        except ImportError:
            raise _missing(lang) from None
        return " ".join(jieba.cut(text))
    return text


def normalisation(lang: str) -> Normalisation:
    """SEA-HELM's: SQuAD's without removing articles (lower case, ASCII punctuation gone, single spaces),
    after splitting Thai or Chinese into words."""
    if lang in SEGMENTED:
        return Normalisation(segment=functools.partial(segment, lang=lang), articles=False)
    return SQUAD_KEEP_ARTICLES


def normalize(text: str) -> str:
    """SQuAD's normalisation without removing articles: lower case, ASCII punctuation gone, single spaces."""
    return SQUAD_KEEP_ARTICLES(str(text))


def qa_f1(prediction: str, reference: str, rule: Normalisation = SQUAD_KEEP_ARTICLES) -> float:
    """Token F1 (0 without overlap, also when both are empty) of two strings normalised by ``rule``."""
    return token_f1(str(prediction), str(reference), rule, both_empty=0.0)


def qa_exact(prediction: str, reference: str, rule: Normalisation = SQUAD_KEEP_ARTICLES) -> float:
    return exact_match(str(prediction), str(reference), rule)


class QuestionAnsweringMetric(_FreeTextMetric):
    def calculate_metrics(self):
        df = self.inference_df
        preds = self._predictions()
        refs = [references(r) for r in df[self.label_column]]
        rule = normalisation(self.lang)
        scored_refs = [r[:1] for r in refs] if self.lang in SEGMENTED else refs  # Thai, Chinese: the first only
        f1s = [max(qa_f1(p, r, rule) for r in rs) for p, rs in zip(preds, scored_refs)]
        ems = [max(qa_exact(p, r, rule) for r in rs) for p, rs in zip(preds, scored_refs)]
        # SEA-HELM's "found": the first reference, lower-cased and stripped of dots, inside the prediction
        found = [r[0].lower().strip(".") in p.lower().strip(".") for p, r in zip(preds, refs)]
        f1 = 100 * float(np.mean(f1s)) if f1s else 0.0
        self.update_individual_scores(f1s)
        return {
            "exact_match": 100 * float(np.mean(ems)) if ems else 0.0,
            "f1": f1,
            "normalized_f1": f1,
            "found_in_prediction": 100 * float(np.mean(found)) if found else 0.0,
            "null_count": sum(p == "" for p in preds),
        }, df


def score(prediction: str, reference: object, lang: str = "") -> float:
    """One row's F1 as SEA-HELM computes it for ``lang`` (for checks and plug-ins)."""
    refs = references(reference)
    rule = normalisation(lang)
    return max(qa_f1(prediction, r, rule) for r in (refs[:1] if lang in SEGMENTED else refs))
