"""GLM's metric functions (``evaluation/metrics.py``): ``metric(predictions, examples)`` over one data
file, GLM's scale (×100), GLM's names in ``DEFAULT_METRICS``."""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from typing import Any, Callable, List

import numpy as np

from proctor.dialects.glm.registered_metrics import glm_exact_match, glm_f1
from proctor.dialects.glm.tokenizer import get_tokenizer
from proctor.dialects.glm.utils import print_rank_0
from proctor.scoring.text import normalize_answer  # noqa: F401  (GLM exports it from this module)


def accuracy_metric(predictions, examples):
    assert len(predictions) == len(examples)
    count = sum(prediction == example["label"] for prediction, example in zip(predictions, examples))
    return count * 100.0 / max(len(predictions), 1)


def _sklearn(name: str, predictions, examples):
    assert len(predictions) == len(examples)
    from sklearn import metrics

    truth = [example["label"] for example in examples]
    return getattr(metrics, name)(truth, predictions, average="micro") * 100.0


F1_metric = functools.partial(_sklearn, "f1_score")
precision_metric = functools.partial(_sklearn, "precision_score")
recall_metric = functools.partial(_sklearn, "recall_score")


def f1_score(prediction, ground_truth):
    return glm_f1(prediction, ground_truth)


def exact_match_score(prediction, ground_truth):
    return bool(glm_exact_match(prediction, ground_truth))


def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    if not ground_truths:
        return 0.0
    return max(metric_fn(prediction, truth) for truth in ground_truths)


def qa_evaluate(predictions, examples, metric):
    """Decode prediction and targets with the tokenizer, best ``metric`` over the targets, ×100 mean."""
    assert len(examples) == len(predictions)
    tokenizer = get_tokenizer()
    score = 0.0
    for example, prediction in zip(examples, predictions):
        truths = [tokenizer.tokenizer.decode(target) for target in example["targets"]]
        prediction = tokenizer.tokenizer.decode(prediction)
        if truths:
            score += metric_max_over_ground_truths(metric, prediction, truths)
    return 100.0 * score / len(predictions)


qa_exact_match = functools.partial(qa_evaluate, metric=exact_match_score)
qa_f1 = functools.partial(qa_evaluate, metric=f1_score)


def calculate_perplexity(loss: List[float], data):
    return math.exp(min(20, np.sum(loss) / data[0]["num_original_tokens"]))


def special_for_dataset(predictions, examples):
    print_rank_0("Metrics not found, maybe dataset special metric or metric name error")
    return True


DEFAULT_METRICS: defaultdict[str, Callable[..., Any]] = defaultdict(
    lambda: special_for_dataset
)  # name -> f(predictions, examples)
DEFAULT_METRICS.update(
    {
        "EM": qa_exact_match,
        "F1": qa_f1,
        "Accuracy": accuracy_metric,
        "PPL": calculate_perplexity,
        "Precision": precision_metric,
        "Recall": recall_metric,
        "F1_mul": F1_metric,
    }
)
