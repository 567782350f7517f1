"""SEA-HELM's translation task classes (``seahelm_tasks/nlg/translation/``): the dataloader that reads
the ``<src>_to_<tgt>`` subsets, the metric (MetricX-24 and/or chrF++) and the MetricX judge.

MetricX-24 is a 13B model on the Hugging Face hub, which proctor cannot fetch: when a config asks for
it, the metric reports a clear error under ``metricx_error`` (the config's ``metric`` then has no value,
counted as missing in the roll-up) and computes chrF++ anyway, so the run still says something.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from proctor.dialects.seahelm.dataloaders import AbstractDataloader, HuggingFaceDataloader
from proctor.dialects.seahelm.metrics import _FreeTextMetric, chrf, normalize_score, references
from proctor.dialects.seahelm.rows import read_rows
from proctor.dialects.seahelm.task_config import TaskConfig

log = logging.getLogger(__name__)

SUBSETS = {  # task id -> the hub dataset's config name for a language
    "translation-en-xx": "en_to_{lang}",
    "translation-xx-en": "{lang}_to_en",
    "translation-id-xx": "id_to_{lang}",
    "translation-xx-id": "{lang}_to_id",
}
METRICX_WORST, METRICX_BEST = 25, 0
DEFAULT_METRICX = "google/metricx-24-hybrid-xxl-v2p6-bfloat16"


class TranslationDataloader(HuggingFaceDataloader):
    """Rows of ``<filepath>/<subset>/eval.jsonl`` (or ``<subset>_eval.jsonl``, ...), subset as in ``SUBSETS``."""

    def subset(self) -> str:
        pattern = SUBSETS.get(self.task_name)
        return pattern.format(lang=self.lang) if pattern else self.lang

    def _rows(self, key: str, split: str) -> list[dict]:
        reference = str(self.specific_task_config[key])
        self._check(reference)
        return read_rows(Path(reference), split, self.subset())

    def load_dataset(self, limit: int | None = None):
        if not self.dataset:
            rows = self._rows("filepath", "eval")
            self.dataset = rows[:limit] if limit is not None else rows
        return self.dataset

    def load_example_dataset(self, limit: int | None = None):
        if not self.example_dataset and self.specific_task_config.get("example_filepath"):
            rows = self._rows("example_filepath", "examples")
            rows = rows[:limit] if limit is not None else rows
            # few-shot answers show one reference, as SEA-HELM does
            self.example_dataset = [
                {**r, "label": r["label"][0]} if isinstance(r.get("label"), list) and r["label"] else r for r in rows
            ]
        return self.example_dataset or []


def metricx_model(config: dict) -> str:
    judge = config.get("judge") or {}
    name = judge.get("judge_model_name") if judge.get("judge_model_type") == "metricx" else None
    return str(name or config.get("metricx_model") or DEFAULT_METRICX)


def metricx_unavailable(config: dict) -> str:
    return (
        f"MetricX needs model {metricx_model(config)}, not available offline (proctor does not fetch hub models); "
        "chrF++ computed instead: set use_metricx_metric: false and metric: normalized_chrf_score to score by it"
    )


class TranslationMetric(_FreeTextMetric):
    """chrF++ (sacrebleu, word order 2) against the first reference; MetricX reported as unavailable."""

    def __init__(self, dataloader: AbstractDataloader, task_config: TaskConfig, **kwargs: Any) -> None:
        super().__init__(dataloader, task_config, **kwargs)
        self.use_metricx_metric = bool(self.config.get("use_metricx_metric", False))
        self.use_chrf_metric = bool(self.config.get("use_chrf_metric", True))

    def calculate_metrics(self):
        df = self.inference_df
        preds = self._predictions()
        refs = [references(r)[0] for r in df[self.label_column]]
        metrics: dict[str, float | str | None] = {}
        if self.use_metricx_metric:
            message = metricx_unavailable(self.config)
            log.error("%s/%s: %s", self.task_name, self.lang, message)
            metrics.update(
                {"metricx_wmt24_scores": None, "normalized_metricx_wmt24_scores": None, "metricx_error": message}
            )
        # chrF++ always: the configured one, or the fallback when MetricX cannot run
        score = chrf(preds, refs) if preds else None
        metrics.update(
            {"chrf_score": score, "normalized_chrf_score": normalize_score(score, 0, 1) if score is not None else None}
        )
        self.update_individual_scores([chrf([p], [r]) / 100 for p, r in zip(preds, refs)])
        metrics["null_count"] = sum(p == "" for p in preds)
        return metrics, df


class TranslationJudge:
    """SEA-HELM's MetricX judge; proctor has no MetricX model offline (see ``TranslationMetric``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs
