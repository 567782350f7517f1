"""Task folders in SEA-HELM's style that the built-in examples do not cover: task-folder dataloaders
calling datasets.load_dataset themselves, metrics returning nested ``subcategories``, F1AccMetric
subclasses reading labels from the postprocessed column; and SEA-HELM's LINDSEA roll-up."""

from __future__ import annotations

import pytest

from proctor.api import evaluate
from proctor.core.errors import ProctorError
from proctor.core.model_requests import GenerateResult
from proctor.scoring.rollup import rollup
from tests.conftest import TEST_DATA
from tests.support.fakes import FakeModel

TREE = TEST_DATA / "seahelm_unseen"
MAPPED = {
    "seahelm_data": {
        "example-org/Prag": str(TREE / "hub" / "prag"),
        "example-org/Syntax": str(TREE / "hub" / "syntax"),
    },
    "trust_task_code": True,
}


class Scripted(FakeModel):
    def __init__(self, replies: dict[str, str]) -> None:
        super().__init__("scripted-unseen", salt=str(sorted(replies.items())))
        self.replies = replies

    def generate(self, requests, progress=None):
        return [
            GenerateResult(next((v for k, v in self.replies.items() if k in r.prompt[-300:]), ""), "stop", 1, 1)
            for r in requests
        ]


REPLIES = {
    "s-one": "Jawaban: Benar",
    "s-two": "Jawaban: Benar",
    "s-three": "Jawaban: Benar",
    "p-one": "Jawaban: Salah",
    "p-two": "Jawaban: Benar",
    "m-one": "Jawaban: A",
    "m-two": "Jawaban: A",
    "m-three": "Jawaban: B",
    "m-four": "Jawaban: A",
}


def test_unseen_folders_run_and_lindsea_rolls_up(tmp_path):
    result = evaluate(
        [TREE / "seahelm_tasks"], Scripted(REPLIES), output_dir=tmp_path / "run", dialect_options=MAPPED, export=False
    )
    assert set(result.tasks) == {"pragmatic-single/id", "pragmatic-pair/id", "mp-r/id"}
    single = result.tasks["pragmatic-single/id"]["metrics"]
    # the nested (correct, total) counts survive, numpy ints included
    assert single["subcategories"]["detail"] == {"scalar_implicatures": [1, 2], "presuppositions": [1, 1]}
    assert single["subcategories.scalar_implicatures.0"]["value"] == 1.0
    pair = result.tasks["pragmatic-pair/id"]["metrics"]["subcategories"]["detail"]
    assert pair == {"scalar_implicatures": [1, 1], "presuppositions": [0, 1]}
    mpr = result.tasks["mp-r/id"]["metrics"]
    # A,A,B,B answered A,A,B,A: balanced accuracy 0.75, chance 0.5 -> 50
    assert mpr["normalized_accuracy"]["value"] == pytest.approx(50.0)
    assert mpr["null_count"]["value"] == 0
    assert mpr["difficulty.hard.accuracy"]["value"] == pytest.approx(0.5)
    ld = result.results["rollup"]["children"]["id"]["children"]["linguistic-diagnostics"]
    # pragmatics pooled: scalar 2/3, presupposition 1/2 -> mean 7/12 -> (7/12 - 0.5) / 0.5 = 1/6
    assert ld["lindsea"]["categories"]["pragmatics"]["value"] == pytest.approx(100 / 6)
    assert ld["children"]["pragmatics"]["value"] == pytest.approx(100 / 6)
    assert ld["value"] == pytest.approx((50 + 100 / 6) / 2)
    assert result.results["rollup"]["value"] == pytest.approx((50 + 100 / 6) / 2)


def test_plugin_hub_id_without_copy_is_a_clear_error(tmp_path):
    from proctor.dialects.seahelm.offline_datasets import load_dataset

    with pytest.raises(ProctorError, match="dataset not available offline: example-org/Nowhere"):
        load_dataset("example-org/Nowhere", "normal", split="test")


def _task(name, competency, group, metric, metrics, lang="id"):
    return name + "/" + lang, {
        "dialect": "seahelm",
        "n_samples": 4,
        "metrics": metrics,
        "rollup": {
            "metric": metric,
            "levels": {"language": lang, "competency": competency},
            "group": group,
            "group_type": "macro",
        },
    }


def _sub(detail):
    return {"subcategories": {"value": None, "stderr": None, "detail": detail}}


def test_lindsea_hand_computed():
    tasks = dict(
        [
            _task(
                "pragmatic-single",
                "linguistic-diagnostics",
                "pragmatics",
                "normalized_accuracy",
                _sub({"scalar_implicatures": [3, 4], "presuppositions": [1, 2]}),
            ),
            _task(
                "pragmatic-pair",
                "linguistic-diagnostics",
                "pragmatics",
                "normalized_accuracy",
                _sub({"scalar_implicatures": [1, 4], "presuppositions": [2, 2]}),
            ),
            _task(
                "pragmatic-single-logprobs",
                "linguistic-diagnostics",
                "pragmatics-logprobs",
                "average_cumulative_probabilities",
                _sub(
                    {
                        "scalar_implicatures": {"average_cumulative_probabilities": 30.0},
                        "presuppositions": {"average_cumulative_probabilities": 50.0},
                    }
                ),
            ),
            _task(
                "pragmatic-pair-logprobs",
                "linguistic-diagnostics",
                "pragmatics-logprobs",
                "average_cumulative_probabilities",
                _sub({"scalar_implicatures": {"average_cumulative_probabilities": 10.0}}),
            ),
            _task(
                "mp-r",
                "linguistic-diagnostics",
                "mp-r",
                "normalized_accuracy",
                {"normalized_accuracy": {"value": 40.0, "stderr": 1.0}},
            ),
            _task(
                "sentiment",
                "nlu",
                "sentiment",
                "normalized_accuracy",
                {"normalized_accuracy": {"value": 60.0, "stderr": None}},
            ),
        ]
    )
    top = rollup(tasks)
    ld = top["children"]["id"]["children"]["linguistic-diagnostics"]
    # pragmatics: scalar (3+1)/8 = 0.5, presuppositions 3/4 -> mean 0.625 -> (0.625-0.5)/0.5 = 25
    assert ld["lindsea"]["categories"]["pragmatics"]["value"] == pytest.approx(25.0)
    # logprobs: scalar mean(30, 10) = 20, presuppositions 50 -> 35
    assert ld["lindsea"]["categories"]["pragmatics-logprobs"]["value"] == pytest.approx(35.0)
    assert ld["value"] == pytest.approx((40 + 25 + 35) / 3)
    assert top["children"]["id"]["value"] == pytest.approx(((40 + 25 + 35) / 3 + 60) / 2)


def test_lindsea_without_categories_has_no_score_and_a_note():
    tasks = dict(
        [
            _task("pragmatic-single", "linguistic-diagnostics", "pragmatics", "normalized_accuracy", {}),
            _task(
                "sentiment",
                "nlu",
                "sentiment",
                "normalized_accuracy",
                {"normalized_accuracy": {"value": 60.0, "stderr": None}},
            ),
        ]
    )
    top = rollup(tasks)
    ld = top["children"]["id"]["children"]["linguistic-diagnostics"]
    assert ld["value"] is None
    assert any("no LINDSEA category" in note for note in ld["notes"])
    assert top["children"]["id"]["value"] == pytest.approx(60.0)  # the competency without a score is left out
