"""SEA-HELM metric formulas against independent computations; config interpolation; judge rules."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from proctor.dialects.seahelm import metrics as M
from proctor.dialects.seahelm import qa as QA
from proctor.dialects.seahelm.config import load_tree
from proctor.dialects.seahelm.dataloaders import SeaHelmLocalDataloader
from proctor.dialects.seahelm.judges import CriteriaJudgeMetric, PairwiseLLMJudgeMetric
from proctor.dialects.seahelm.task_config import TaskConfig
from tests.conftest import shared_path

pytestmark = pytest.mark.fast


def test_balanced_accuracy_and_macro_f1_match_sklearn():
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    labels = ["A", "B", "C"]
    refs = list(rng.choice(labels, 60))
    preds = list(rng.choice(labels + ["null"], 60))
    assert M.balanced_accuracy(refs, preds) == pytest.approx(sk.balanced_accuracy_score(refs, preds))
    assert M.macro_f1(refs, preds) == pytest.approx(sk.f1_score(refs, preds, average="macro", zero_division=0))
    assert M.macro_f1(refs, preds, labels) == pytest.approx(
        sk.f1_score(refs, preds, labels=labels, average="macro", zero_division=0)
    )


def test_normalize_and_stderr():
    assert M.normalize_score(0.5, 0.25, 1) == pytest.approx(1 / 3)
    assert M.normalize_score(0.1, 0.25, 1) == 0.0
    assert M.normalize_score(1, 1, 1) == 0.0
    # SEA-HELM's SeaHelmMetric.calculate_stderr: math.sqrt(statistics.variance(values) / len(values)) (sample variance)
    assert M.calculate_stderr([1.0, 0.0, 1.0, 0.0]) == pytest.approx(np.sqrt(np.var([1, 0, 1, 0], ddof=1) / 4))
    assert M.calculate_stderr([3.0]) == 0.0


def _loader(rows, template, **config):
    cfg = {"languages": {"xx": {"prompt_template": template, "filepath": "-"}}, **config}
    loader = SeaHelmLocalDataloader(TaskConfig("t", "xx", cfg), 0)
    loader.dataset = rows
    return loader


def test_f1acc_metric_extracts_answer_tag_and_normalises_for_chance():
    rows = [{"label": label, "prompts": [{}]} for label in ["Positive", "Negative", "Neutral", "Positive"]]
    loader = _loader(rows, {"answer_tag": "Answer:"})
    loader.inference_df = pd.DataFrame(
        {
            "label": [r["label"] for r in rows],
            "responses": [["Answer: positive"], ["Answer: **Negative**"], ["I think so"], ["Answer: Neutral"]],
        }
    )
    metric = M.F1AccMetric(loader, loader.task_config)
    out = metric.evaluate_responses()
    refs, preds = ["Positive", "Negative", "Neutral", "Positive"], ["Positive", "Negative", "null", "Neutral"]
    acc = np.mean([1 / 2, 1, 0])  # recall per class present in references
    assert out["accuracy"] == pytest.approx(100 * acc)
    assert out["normalized_accuracy"] == pytest.approx(100 * (acc - 1 / 3) / (1 - 1 / 3))
    assert out["null_count"] == 1
    assert out["macro_f1"] == pytest.approx(100 * M.macro_f1(refs, preds))
    assert out["null_weighted_f1"] == pytest.approx(
        100 * M.macro_f1(refs, preds, ["Positive", "Negative", "Neutral"]) * (1 - 1 / 4)
    )
    assert loader.inference_df["individual_scores"].tolist() == [1.0, 1.0, 0.0, 0.0]


def test_question_answering_f1_without_article_removal():
    assert QA.qa_f1("the cat sat", "a cat sat") == pytest.approx(2 * (2 / 3) * (2 / 3) / (4 / 3))
    assert QA.qa_exact("The Cat!", "the cat") == 1.0
    rows = [{"label": ["Jakarta", "kota Jakarta"], "prompts": [{}]}]
    loader = _loader(rows, {"answer_tag": "Jawaban:"})
    loader.inference_df = pd.DataFrame({"label": [rows[0]["label"]], "responses": [["Jawaban: kota Jakarta"]]})
    out = QA.QuestionAnsweringMetric(loader, loader.task_config).evaluate_responses()
    assert out["f1"] == pytest.approx(100.0) and out["normalized_f1"] == out["f1"]


def test_chrf_matches_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu")
    hyp, ref = ["the cat sat on the mat"], ["a cat sat on a mat"]
    assert M.chrf(hyp, ref) == pytest.approx(sacrebleu.corpus_chrf(hyp, [ref], word_order=2).score)


def test_pairwise_consistency_rule_and_parse():
    loader = _loader([], {"answer_tag": ""})
    metric = PairwiseLLMJudgeMetric(loader, loader.task_config)
    assert metric.parse("... [[A]]") == "A_wins"
    assert metric.parse("[[A]] or [[B]]") is None and metric.parse("no verdict") is None
    assert metric.final_verdict("W", "W") == "W"
    assert metric.final_verdict("T", "W") == "T"
    assert metric.final_verdict("W", "L") == "T"
    metric.ties_allowed = False
    assert metric.final_verdict("W", "L") == "ERROR"


def test_criteria_parse():
    loader = _loader([], {"answer_tag": ""}, judge={"classifications": {"CLASS_UNMET": 0, "CLASS_EXACTLY_MET": 1.0}})
    metric = CriteriaJudgeMetric(loader, loader.task_config)
    assert (
        metric.parse("<reflection>ok</reflection><classification>CLASS_EXACTLY_MET</classification>")
        == "CLASS_EXACTLY_MET"
    )
    assert metric.parse("<classification>MAYBE</classification>") is None


def test_interpolation_across_tasks():
    tree = load_tree(
        shared_path("examples", "seahelm", "seahelm_tasks", "nlu", "paraphrase_identification", "config.yaml")
    )
    twin = tree.tasks["paraphrase-logprobs"]
    assert twin["languages"] == tree.tasks["paraphrase"]["languages"]
    assert twin["competency"] == "nlu" and twin["metadata"]["version"] == 1.1
    assert "sentiment" in tree.tasks and tree.tasks["sentiment-logprobs"]["dataloader_class"] == "HuggingFaceDataloader"
