"""SEA-HELM's metric pipeline (``SeaHelmMetric``) and its built-in metric classes."""

from __future__ import annotations

import math
import re
import string
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

import numpy as np

from proctor.core.errors import ProctorError
from proctor.scoring.stats import sample_variance, stderr_from_variance

if TYPE_CHECKING:
    import pandas as pd

    from proctor.dialects.seahelm.dataloaders import AbstractDataloader
    from proctor.dialects.seahelm.task_config import TaskConfig


class Judging(Protocol):
    """What a judge metric asks of its judge (``judges.JudgeRunner``, which imports this module: named by what it
    does, so the two modules do not import each other)."""

    def judge(
        self, conversations: Sequence[Sequence[dict[str, str]]], parse: Callable[[str], str | None]
    ) -> list[tuple[str | None, str]]: ...


def normalize_score(score: float, min_score: float, max_score: float) -> float:
    if score is None:
        return 0.0
    if min_score == max_score:
        return 0.0
    return max((score - min_score) / (max_score - min_score), 0.0)


def calculate_stderr(values: Sequence[float]) -> float:
    """SEA-HELM's ``SeaHelmMetric.calculate_stderr``: sqrt(sample variance / n) with ``statistics.variance``,
    0 for n <= 1."""
    kept = [float(v) for v in values if v is not None]
    if len(kept) <= 1:
        return 0.0
    return stderr_from_variance(sample_variance(kept, exact=True), len(kept))


def balanced_accuracy(references: Sequence[str], predictions: Sequence[str]) -> float:
    """Mean recall over the classes present in the references."""
    refs, preds = np.asarray(references, dtype=object), np.asarray(predictions, dtype=object)
    classes = list(dict.fromkeys(references))
    if not classes:
        return float("nan")
    return float(np.mean([np.mean(preds[refs == c] == c) for c in classes]))


def macro_f1(references: Sequence[str], predictions: Sequence[str], labels: Sequence[str] | None = None) -> float:
    """Unweighted mean F1 over ``labels`` (default: every label in references or predictions); 0 when undefined."""
    labels = list(dict.fromkeys(list(references) + list(predictions))) if labels is None else list(labels)
    scores = []
    for c in labels:
        tp = sum(r == c and p == c for r, p in zip(references, predictions))
        fp = sum(r != c and p == c for r, p in zip(references, predictions))
        fn = sum(r == c and p != c for r, p in zip(references, predictions))
        scores.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return float(np.mean(scores)) if scores else float("nan")


class SeaHelmMetric:
    """Base metric: error handling, answer extraction, ``calculate_metrics`` (override), normalisation."""

    def __init__(
        self,
        dataloader: AbstractDataloader,
        task_config: TaskConfig,
        response_column: str = "responses",
        postprocessed_response_column: str = "cleaned_response",
        label_column: str = "label",
        **_: Any,
    ) -> None:
        self.dataloader = dataloader
        self.task_config = task_config
        self.task_name = self.task = task_config.task_name
        self.lang = task_config.lang
        self.config = task_config.config
        self.specific_task_config = task_config.config["languages"][self.lang]
        self.response_column = response_column
        self.postprocessed_response_column = postprocessed_response_column
        self.label_column = label_column
        self.regex_string: str | None = None
        self.regex_flags = 0
        self.judge_model: Judging | None = None  # set by proctor for judge metrics

    @property
    def inference_df(self) -> pd.DataFrame:
        return self.dataloader.inference_df

    @inference_df.setter
    def inference_df(self, value: pd.DataFrame) -> None:
        self.dataloader.inference_df = value

    # ---------------------------------------------------------------- hooks
    def drop_error_responses(self) -> None:
        df = self.inference_df
        keep = df[self.response_column].apply(lambda rs: all(r is not None for r in rs))
        self.inference_df = df[keep].reset_index(drop=True)

    def replace_error_responses(self, replacement: str = "") -> None:
        df = self.inference_df
        df[self.response_column] = df[self.response_column].apply(
            lambda rs: [replacement if r is None else r for r in rs]
        )

    def get_response(self, row: pd.Series) -> object:  # the row's responses (one per turn), as stored
        return row[self.response_column]

    def get_response_counts(self) -> str:
        return self.inference_df.apply(self.get_response, axis=1).astype(str).value_counts().to_json()

    @staticmethod
    def normalize_answer(text: str) -> str:
        return normalize_answer(text)

    def extract_response(
        self,
        response: Any,
        flags: int | None = None,
        return_original_response_on_failure: bool = True,
    ) -> str | list[str] | None:
        """The regex's group 1 in the first response, stripped; on no match (or an empty group) the
        whole response, or None when ``return_original_response_on_failure`` is false. (A judge
        metric keeps every turn's answer: a list.)"""
        text = (
            response[0]
            if isinstance(response, (list, tuple)) or hasattr(response, "tolist") and not isinstance(response, str)
            else response
        )
        if text is None or (isinstance(text, float) and math.isnan(text)):
            return None
        text = str(text)
        if self.regex_string:
            match = re.search(self.regex_string, text, self.regex_flags if flags is None else flags)
            if match and match.group(1) is not None:
                return match.group(1).strip()
        return text.strip() if return_original_response_on_failure else None

    def postprocess_responses(self) -> None:
        df = self.inference_df
        df[self.postprocessed_response_column] = df[self.response_column].apply(self.extract_response)

    def calculate_metrics(self):
        raise NotImplementedError("Subclasses must implement calculate_metrics")

    def evaluate_responses(self, drop_error_response: bool = False) -> dict:
        if drop_error_response:
            self.drop_error_responses()
        else:
            self.replace_error_responses("")
        self.postprocess_responses()
        out = self.calculate_metrics()
        if isinstance(out, tuple):
            metrics, df = out
            if df is not None:
                self.inference_df = df
        else:
            metrics = out
        return metrics

    @staticmethod
    def normalize_score(score: float, min_score: float, max_score: float) -> float:
        return normalize_score(score, min_score, max_score)

    @staticmethod
    def calculate_stderr(values: Sequence[float]) -> float:
        return calculate_stderr(values)

    def update_individual_scores(self, scores: list) -> None:
        self.dataloader.update_individual_scores(scores)


def normalize_answer(text: object) -> str:
    text = str(text).lower().strip(string.punctuation + " \n\t\r")
    return " ".join(text.split())


class F1AccMetric(SeaHelmMetric):
    """Classification by answer tag: balanced accuracy (normalised for chance 1/K), macro-F1,
    null-weighted F1, null_count."""

    def __init__(self, dataloader: AbstractDataloader, task_config: TaskConfig, **kwargs: Any) -> None:
        super().__init__(dataloader, task_config, **kwargs)
        labels = [str(r.get("label")) for r in dataloader.rows()]
        self.labels = list(dict.fromkeys(labels))
        self.label_map = {normalize_answer(label): label for label in self.labels}
        self.null_label = str(task_config.config.get("null_label", "null"))
        tag = self.specific_task_config["prompt_template"].get("answer_tag", "")
        self.regex_string = re.escape(tag) + r"[\s\*]*(" + "|".join(re.escape(label) for label in self.labels) + ")+"
        self.regex_flags = re.IGNORECASE

    def map_label(self, text: object) -> str:
        if text is None:
            return self.null_label
        return self.label_map.get(normalize_answer(text), self.null_label)

    def extract_response(
        self, response: Any, flags: int | None = None, return_original_response_on_failure: bool = True
    ) -> str:
        """As SEA-HELM: the extracted answer mapped to its label (else the null label), so subclasses'
        ``calculate_metrics`` read labels from ``postprocessed_response_column``."""
        return self.map_label(super().extract_response(response, flags, return_original_response_on_failure))

    def calculate_metrics(self):
        df = self.inference_df
        predictions = [self.map_label(p) for p in df[self.postprocessed_response_column]]
        references = [str(r) for r in df[self.label_column]]
        df["predictions"] = predictions
        n = len(references)
        k = len(self.labels)
        accuracy = balanced_accuracy(references, predictions)
        null_count = sum(p == self.null_label for p in predictions)
        present = list(dict.fromkeys(references))
        metrics = {
            "accuracy": 100 * accuracy,
            "normalized_accuracy": 100 * normalize_score(accuracy, 1 / k if k else 0, 1),
            "macro_f1": 100 * macro_f1(references, predictions),
            "null_weighted_f1": 100 * macro_f1(references, predictions, present) * (1 - null_count / n if n else 0),
            "null_count": null_count,
        }
        self.update_individual_scores([float(p == r) for p, r in zip(predictions, references)])
        return metrics, df


def references(label: object) -> list[str]:
    """A row's reference answers (a string, a list, or nothing; a number or any other value is one answer)."""
    if isinstance(label, str):
        return [label]
    if label is None:
        return [""]
    if isinstance(label, (list, tuple)):
        return [str(x) for x in label]
    return [str(label)]


class _FreeTextMetric(SeaHelmMetric):
    """Metrics over the text after the answer tag (QA, translation)."""

    def __init__(self, dataloader: AbstractDataloader, task_config: TaskConfig, **kwargs: Any) -> None:
        super().__init__(dataloader, task_config, **kwargs)
        tag = self.specific_task_config["prompt_template"].get("answer_tag", "")
        self.regex_string = re.escape(tag) + r"[\s\r\n`*]*(.*)"

    def _predictions(self) -> list[str]:
        return ["" if p is None else str(p) for p in self.inference_df[self.postprocessed_response_column]]


def chrf(predictions: Sequence[str], references: Sequence[str], word_order: int = 2) -> float:
    """Corpus chrF++ (sacrebleu, word_order=2)."""
    try:
        from sacrebleu.metrics import CHRF
    except ImportError:
        raise ProctorError("chrF needs sacrebleu: pip install 'proctor[seahelm]'") from None
    return float(CHRF(word_order=word_order).corpus_score(list(predictions), [list(references)]).score)
