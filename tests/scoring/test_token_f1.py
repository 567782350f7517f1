"""The one token F1 (``proctor.scoring.text``) under each normalisation proctor's metrics use, against the
original systems' formulas written out independently (``tests/support/answer_f1.py``), on pairs that tell
the rules apart: equal floats, not approximately equal ones."""

from __future__ import annotations

import pytest

from proctor.scoring.text import SQUAD, SQUAD_KEEP_ARTICLES, Normalisation, exact_match, normalize_answer, token_f1
from tests.support.answer_f1 import (
    PAIRS,
    seahelm_em,
    seahelm_f1,
    seahelm_normalize,
    squad_normalize,
    squad_v1_em,
    squad_v1_f1,
    squad_v2_f1,
)

BOTH_WAYS = PAIRS + [(b, a) for a, b in PAIRS]


@pytest.mark.parametrize("prediction, reference", BOTH_WAYS)
def test_squad_rule_is_squads_script(prediction, reference):
    """proctor's ``f1`` / ``exact_match`` (SQuAD v2's empty rule) and GLM's (v1.1's: two empty answers score 0)."""
    assert normalize_answer(prediction) == squad_normalize(prediction)
    assert token_f1(prediction, reference) == squad_v2_f1(reference, prediction)
    assert token_f1(prediction, reference, SQUAD, both_empty=0.0) == squad_v1_f1(prediction, reference)
    assert exact_match(prediction, reference) == float(squad_v1_em(prediction, reference))


@pytest.mark.parametrize("prediction, reference", BOTH_WAYS)
def test_articles_kept_is_seahelms_rule(prediction, reference):
    assert normalize_answer(prediction, SQUAD_KEEP_ARTICLES) == seahelm_normalize(prediction)
    got = token_f1(prediction, reference, SQUAD_KEEP_ARTICLES, both_empty=0.0)
    assert got == seahelm_f1(prediction, reference)
    assert exact_match(prediction, reference, SQUAD_KEEP_ARTICLES) == float(seahelm_em(prediction, reference))


def test_the_rules_differ_where_they_should():
    """The pairs are not vacuous: articles, empty answers and Chinese text score as each rule says."""
    assert token_f1("The cat sat.", "a cat sat") == 1.0
    assert token_f1("The cat sat.", "a cat sat", SQUAD_KEEP_ARTICLES, both_empty=0.0) == 2 * (2 / 3) * (2 / 3) / (4 / 3)
    assert token_f1("", "") == 1.0 and token_f1("the", "a an") == 1.0  # nothing left of either: SQuAD v2
    assert token_f1("", "", SQUAD, both_empty=0.0) == 0.0 and token_f1("", "cat") == 0.0
    assert token_f1("北京是中国的首都", "北京") == 0.0  # no spaces: one token each, and they differ
    assert token_f1("北京 是 首都。", "北京 首都") == 2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2)  # '。' is no ASCII
    assert token_f1("cat cat cat", "cat") == 2 * (1 / 3) * 1 / (1 / 3 + 1)  # a multiset: one shared 'cat'


def test_a_segmenting_rule_splits_words_before_normalising():
    """A normalisation's ``segment`` runs first, then lower-casing and punctuation (SEA-HELM's order for Thai and
    Chinese): here a splitter that puts a space after each character stands in for jieba."""
    each = Normalisation(segment=lambda text: " ".join(text), articles=False)
    assert normalize_answer("AB,c", each) == "a b c"
    assert token_f1("北京是首都", "北京", each, both_empty=0.0) == 2 * (2 / 5) * 1 / (2 / 5 + 1)
    assert exact_match("北 京", "北京", each) == 1.0
