"""GLM-130B's EM and F1 (``evaluation/metrics.py``: SQuAD v1.1's script) through each of proctor's entry points
(GLM's own function names and the registered metrics), against the script written out independently: equal
floats on pairs with punctuation, articles, Chinese text and empty answers."""

from __future__ import annotations

import pytest

from proctor.dialects.glm import metrics as glm_metrics
from proctor.dialects.glm.registered_metrics import glm_exact_match, glm_f1
from proctor.scoring.metrics import get_metric
from proctor.scoring.outcomes import GenerationOutcome
from tests.support.answer_f1 import PAIRS, squad_v1_em, squad_v1_f1


@pytest.mark.parametrize("prediction, target", PAIRS + [(b, a) for a, b in PAIRS])
def test_glm_f1_and_em_are_squad_v1(prediction, target):
    assert glm_f1(prediction, target) == squad_v1_f1(prediction, target)
    assert glm_metrics.f1_score(prediction, target) == squad_v1_f1(prediction, target)
    assert glm_exact_match(prediction, target) == float(squad_v1_em(prediction, target))
    assert glm_metrics.exact_match_score(prediction, target) is squad_v1_em(prediction, target)


def test_the_registered_metrics_take_the_best_target_times_100():
    f1, em = get_metric("F1", "generate"), get_metric("EM", "generate")
    targets = tuple(target for _, target in PAIRS)
    for prediction, _ in PAIRS:
        outcome = GenerationOutcome(prediction, prediction, True, targets)
        assert f1.compute(outcome) == 100.0 * max(squad_v1_f1(prediction, t) for t in targets)
        assert em.compute(outcome) == 100.0 * max(float(squad_v1_em(prediction, t)) for t in targets)
    assert f1.compute(GenerationOutcome("", "", True, ("", "..."))) == 0.0  # two empty answers: no overlap, 0
