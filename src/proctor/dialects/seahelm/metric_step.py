"""SEA-HELM's metric step for one run of a task: the answers put into the dataloader's ``inference_df`` as
SEA-HELM lays it out, the task's metric class run on it (with its judge, where it uses one), and each row's
score, cleaned answer and prediction read back; ``shown_fields`` turns a row of that run into the fields every
dialect's sample record shares.

Mixed into :class:`proctor.dialects.seahelm.task.SeaHelmTask`, kept apart from its loading and generation:
it starts from the answers and uses the task only for its metric class, configuration and dataloader.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any, Callable

from proctor.dialects.seahelm.dataloaders import AbstractDataloader
from proctor.dialects.seahelm.metrics import references
from proctor.dialects.seahelm.task_config import TaskConfig
from proctor.dialects.seahelm.task_options import SeaHelmTaskOptions
from proctor.kinds.base import SampleDetails

if TYPE_CHECKING:
    from proctor.dialects.seahelm.judges import JudgeRunner
    from proctor.models.base import Model

log = logging.getLogger(__name__)
# SEA-HELM's aggregate_metrics scores this competency by its own LINDSEA roll-up, never reading a task's `metric`
LINDSEA_COMPETENCY = "linguistic-diagnostics"


def shown_fields(run: dict, i: int) -> SampleDetails:
    """The fields every dialect's generation and multiple-choice records share (docs/results.md, samples.jsonl): the
    raw generation, the answer read from it, the references; for a classification task (SEA-HELM's label-map
    metrics) also its labels as choices, the gold and the predicted label's index (none when no label was read).
    SEA-HELM classifies by generation: there are no per-choice probabilities."""
    raw = run["raw"][i] if run.get("raw") and run["raw"][i] else [""]
    label = run["labels"][i]
    out: SampleDetails = {"generation": str(raw[-1]), "target": references(label)}
    if run.get("gold_logprob") is not None and run["gold_logprob"][i] is not None:
        out["gold_logprob"] = run["gold_logprob"][i]  # the log-prob strategy: the gold label after the answer tag
    classes = run.get("classes")
    if classes and str(label) in classes:
        predicted = run["predictions"][i] if run.get("predictions") else None
        index = classes.index(str(predicted)) if predicted is not None and str(predicted) in classes else None
        out.update(
            choices=classes,
            target=classes.index(str(label)),
            prediction=index,
            parsed=index is not None,
            correct=index == classes.index(str(label)),
        )
    return out


class MetricStep:
    """Mixed into :class:`proctor.dialects.seahelm.task.SeaHelmTask` (uses its ``_plugin_call``, ``config``,
    ``metric_cls``, ``task_config``, ``dataloader`` and the judge step of ``judge_step.Judging``)."""

    config: dict
    options: SeaHelmTaskOptions
    task_id: str
    metric_cls: type  # SEA-HELM's or the task folder's metric class (named_classes.resolve_class)
    task_config: TaskConfig
    dataloader: AbstractDataloader | None
    _plugin_call: Callable[..., Any]
    _judge: Callable[[Model], JudgeRunner]
    _judge_batch: Callable[..., None]
    _count_judge_usage: Callable[..., None]

    @staticmethod
    def _classes(metric) -> list[str] | None:
        """A label-map metric's classes: its `labels` where it keeps them (F1AccMetric), else the
        label map's values (a task's own metric may keep only the map)."""
        label_map = getattr(metric, "label_map", None)
        if not isinstance(label_map, dict):
            return None
        labels = getattr(metric, "labels", None)
        if labels is None:
            labels = label_map.values()
        return list(dict.fromkeys(str(c) for c in labels))

    def _score(self, rows, answers, raw, extra, rendered, model, sent=None) -> dict:
        import pandas as pd

        loader = self.dataloader
        assert loader is not None  # predict_samples made it
        frame = pd.DataFrame([dict(r) for r in rows])
        frame["responses"] = [list(a) for a in answers]
        frame["raw_responses"] = [list(a) for a in raw]
        frame["conversations"] = rendered
        if sent and any(c is not None for c in sent):  # ready-made conversations stay message lists, as in SEA-HELM
            frame["conversations"] = pd.Series(
                [c if c is not None else t for c, t in zip(sent, rendered)], index=frame.index, dtype=object
            )
        for key, values in extra.items():
            frame[key] = values
        if "cumulative_logprob" in extra:  # SEA-HELM's column: one list per row
            frame["cumulative_logprobs"] = [[x] for x in extra["cumulative_logprob"]]
        if "label" not in frame:
            frame["label"] = ""
        loader.inference_df = frame
        metric = self._plugin_call(self.metric_cls, "__init__", loader, self.task_config)
        judge = None
        if self.config.get("use_judges") or getattr(metric, "uses_judge", False):
            metric.judge_model = judge = self._judge(model)
            judge_before = getattr(judge.model, "usage", lambda: None)()
        if judge is not None and hasattr(loader, "get_judge_prompt_formatter"):
            self._judge_batch(loader, metric, judge, rows, answers)
        metrics = self._plugin_call(metric.evaluate_responses, "evaluate_responses")
        self._check_reported(metrics)
        if judge is not None:  # only the judge's calls: generation ran before
            self._count_judge_usage(judge.model, judge_before)
        df = loader.inference_df
        scores = df["individual_scores"].tolist() if "individual_scores" in df else [None] * len(df)
        scores = [self._scalar(s, self.config.get("metric")) for s in scores]
        cleaned = (
            df[metric.postprocessed_response_column].tolist()
            if metric.postprocessed_response_column in df
            else [None] * len(df)
        )
        return {
            "metrics": metrics,
            "raw": raw,
            "classes": self._classes(metric),
            "gold_logprob": extra.get("cumulative_logprob"),
            "answers": answers,
            "cleaned": cleaned,
            "labels": [r.get("label") for r in rows],
            "scores": scores,
            "judgements": df["judgements"].tolist() if "judgements" in df else None,
            "predictions": df["predictions"].tolist() if "predictions" in df else None,
        }

    def _check_reported(self, metrics: object) -> None:
        """The config's ``metric`` (the task's score in SEA-HELM's hierarchy) must be one the metric class reports:
        SEA-HELM's aggregate_metrics reads ``results[metric]`` and stops with a KeyError, while proctor would show no
        value at every level and exit 0. Under ``linguistic-diagnostics`` upstream never reads it (its LINDSEA roll-up
        scores the competency; its own pragmatics config names a metric PragMetric does not report): a warning."""
        wanted = self.config.get("metric")
        if not isinstance(wanted, str) or not isinstance(metrics, dict) or not metrics or wanted in metrics:
            return
        reporter = getattr(self.metric_cls, "__name__", "the metric class")
        message = f"metric '{wanted}' is not one that {reporter} reports (it reports: {', '.join(map(str, metrics))})"
        if self.config.get("competency") == LINDSEA_COMPETENCY:
            log.warning(
                "%s: %s.metric: %s; not read under %s (SEA-HELM's LINDSEA roll-up scores it)",
                self.options.config_file,
                self.task_id,
                message,
                LINDSEA_COMPETENCY,
            )
            return
        from proctor.core.errors import TaskDefinitionError

        raise TaskDefinitionError(message, file=self.options.config_file, field=f"{self.task_id}.metric")

    @staticmethod
    def _scalar(value: Any, key: str | None) -> float | None:
        if isinstance(value, dict):
            value = value.get(key, next(iter(value.values()), None)) if value else None
        try:
            value = float(value)
        except (TypeError, ValueError):
            return None
        return None if math.isnan(value) else value
