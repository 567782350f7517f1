"""SEA-HELM's QuestionAnsweringMetric F1 and exact match (SQuAD's rule without removing articles; Thai and
Chinese split into words first, the first reference only) through proctor's functions, against the rule
written out independently: equal floats on pairs with punctuation, articles, Chinese text and empty answers."""

from __future__ import annotations

import pytest

from proctor.dialects.seahelm import qa as QA
from tests.support.answer_f1 import PAIRS, seahelm_em, seahelm_f1

BOTH_WAYS = PAIRS + [(b, a) for a, b in PAIRS]


@pytest.mark.parametrize("prediction, reference", BOTH_WAYS)
def test_qa_f1_and_exact_are_seahelms(prediction, reference):
    assert QA.qa_f1(prediction, reference) == seahelm_f1(prediction, reference)
    assert QA.qa_exact(prediction, reference) == float(seahelm_em(prediction, reference))
    assert QA.score(prediction, [reference, "unrelated words"]) == max(
        seahelm_f1(prediction, reference), seahelm_f1(prediction, "unrelated words")
    )


def test_chinese_is_split_by_jieba_and_scored_on_the_first_reference():
    jieba = pytest.importorskip("jieba")

    def words(text: str) -> str:
        return " ".join(jieba.cut(text))

    for prediction, reference in BOTH_WAYS:
        want = seahelm_f1(prediction, reference, words)
        assert QA.score(prediction, [reference, prediction], "zh") == want  # the second reference is not read
        assert QA.qa_exact(prediction, reference, QA.normalisation("zh")) == float(
            seahelm_em(prediction, reference, words)
        )
    assert 0.0 < QA.score("北京是中国的首都", ["北京"], "zh") < 1.0  # words, not one token per answer
    assert QA.score("北京是中国的首都", ["北京"], "") == 0.0


def test_thai_is_split_by_pythainlp_newmm():
    tokenize = pytest.importorskip("pythainlp.tokenize")

    def words(text: str) -> str:
        return " ".join(tokenize.word_tokenize(text, engine="newmm"))

    for prediction, reference in [("แมวนั่งบนเสื่อ", "แมวนั่ง"), ("แมว", "สุนัข"), ("", ""), ("แมว!", "แมว")]:
        assert QA.score(prediction, [reference], "th") == seahelm_f1(prediction, reference, words)
    assert 0.0 < QA.score("แมวนั่งบนเสื่อ", ["แมวนั่ง"], "th") < 1.0
