"""What ``evaluate`` returns: the run folder and its results.json, with the samples as a DataFrame and a way to
log the run to a tracker."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from proctor.runs.documents import ResultsDocument
from proctor.scoring.aggregate import TaskEntry

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class EvaluationResult:
    run_dir: Path
    results: ResultsDocument

    @property
    def tasks(self) -> dict[str, TaskEntry]:
        tasks: dict[str, TaskEntry] = self.results["tasks"]
        return tasks

    def metric(self, task: str, name: str) -> float:
        return float(self.results["tasks"][task]["metrics"][name]["value"])

    def samples_frame(self) -> pd.DataFrame:
        """The run's samples (samples.jsonl) as a pandas DataFrame, one row per sample: ``task``, ``id``,
        ``target``, ``prediction``, ``correct``, a ``metric_<name>`` column per metric, and the rest of
        samples.parquet's columns (docs/results.md). Needs pandas (``pip install 'proctor[pandas]'``)."""
        from proctor.runs.samples_frame import samples_frame

        return samples_frame(self.run_dir)

    def log_to(self, tracker: str) -> str:
        """Log the run to a tracker as ``proctor log RUN_DIR --to TRACKER`` does (``"wandb:project=evals"``,
        ``"mlflow:tracking_uri=file:./mlruns"``; docs/trackers.md); the line saying where it went."""
        from proctor.runs.trackers import log_to, parse_target, read_contents

        return log_to(read_contents(self.run_dir), parse_target(tracker, "log_to")).line()
