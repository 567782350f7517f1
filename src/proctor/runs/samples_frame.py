"""A run's samples as a pandas DataFrame (``EvaluationResult.samples_frame()``): samples.parquet's layout, read
from samples.jsonl; pandas is an optional extra."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from proctor.core.errors import require
from proctor.runs.run_exports import samples_table

if TYPE_CHECKING:
    import pandas as pd


def samples_frame(run_dir: Path) -> pd.DataFrame:
    """One row per sample of the run in ``run_dir``: ``task``, ``id``, ``target`` (a list of texts: the right
    choices, or the references), ``prediction`` (the chosen choice's text, or the extracted answer), ``correct``,
    a ``metric_<name>`` float column per metric (empty where a task has no such metric), the prompt, per-choice
    log-likelihoods, and the whole record as JSON (``record``). The numbers are samples.jsonl's."""
    require("pandas", "pandas", "a run's samples as a DataFrame", requirement="pandas")
    return samples_table(Path(run_dir)).to_pandas()
