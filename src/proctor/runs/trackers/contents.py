"""What a tracker logs of a finished run, read from its folder (results.json, samples.jsonl, tasks/*.yaml,
run.json) and nowhere else, so ``proctor run --log-to`` and ``proctor log RUN_DIR`` log the same things."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Union

from proctor.core.errors import ProctorError
from proctor.runs.documents import ResultsDocument
from proctor.runs.run_exports import read_run, samples_table
from proctor.runs.saved_specs import task_specs

Cell = Union[str, bool, int, float, None]  # a samples table's cell: trackers' tables show text and numbers
# The samples table's columns besides the metrics: scalars only (trackers' tables show text and numbers).
SAMPLE_COLUMNS = ("task", "id", "prompt", "target", "prediction", "correct", "generation")


@dataclass(frozen=True)
class RunContents:
    """A run as trackers log it."""

    run_dir: Path
    name: str  # the run folder's name: the tracker run's default name
    metrics: dict[str, float]  # "task/metric", "task/metric_stderr", groups' "group/metric_micro", ...
    config: dict[str, Any]  # the run's settings, the model's fingerprint, the environment, each task's configuration
    columns: list[str]  # the samples table
    rows: list[list[Cell]]
    files: list[Path]  # attached as they are: results.json, run.json, tasks/*.yaml

    @property
    def tags(self) -> dict[str, str]:
        """What identifies the run (MLflow tags; W&B keeps them in the config)."""
        model = self.config.get("model") or {}
        return {
            "proctor.run_dir": str(self.run_dir.resolve()),
            "proctor.status": str(self.config.get("status")),
            "proctor.model": str(model.get("model")),
            "proctor.version": str(self.config.get("proctor_version")),
        }


def metric_values(results: ResultsDocument) -> dict[str, float]:
    """Every task's and group's metrics as ``NAME/METRIC`` (value), ``NAME/METRIC_stderr``, and for groups
    ``NAME/METRIC_micro`` and ``NAME/METRIC_micro_stderr``; a metric whose value is null (NaN or infinite, warned
    in results.json) is logged as NaN, so the tracker shows it failed rather than leaving it out; other null
    fields (a stderr that cannot be computed) are left out. An
    lm-eval key keeps its filter last, as lm-eval writes it: ``acc,none`` and ``acc_stderr,none``."""
    out: dict[str, float] = {}
    plain = (("value", ""), ("stderr", "_stderr"))
    fields = {"tasks": plain, "groups": (*plain, ("micro", "_micro"), ("micro_stderr", "_micro_stderr"))}
    for kind, parts in fields.items():
        for name, entry in (results.get(kind) or {}).items():
            for metric, m in ((entry or {}).get("metrics") or {}).items():
                for field, suffix in parts:
                    value = m.get(field) if isinstance(m, dict) else None
                    if field == "value" and value is None and isinstance(m, dict):
                        value = math.nan  # a metric that is no number (NaN, null in results.json): NaN, not absent
                    if isinstance(value, bool) or not isinstance(value, (int, float)):
                        continue
                    base, comma, filter_name = metric.partition(",")  # lm-eval's "acc,none": "acc_stderr,none"
                    key = f"{name}/{base}{suffix}{comma}{filter_name}"
                    if key in out:  # a group named as a task, or a metric "x_stderr" beside "x"
                        raise ProctorError(
                            f"the metric key '{key}' would name two numbers (a group and a task of one name, or "
                            "two metrics); rename one to log the run"
                        )
                    out[key] = float(value)
    return out


def _scalar(value: object) -> Cell:
    """A table cell: text, a number, a truth value or empty; a list of one text is that text, longer lists JSON."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    return json.dumps(value, ensure_ascii=False, default=str)


def read_contents(run_dir: Path) -> RunContents:
    """The run in ``run_dir`` as trackers log it; a folder that is not a finished run is an error naming it."""
    run_dir = Path(run_dir)
    results, samples = read_run(run_dir)
    if results.get("status") == "running":  # its numbers are those of the tasks done so far
        raise ProctorError(
            f"{run_dir} is not a finished run (results.json's status is 'running': it was interrupted, or is still "
            "running); finish it by running the same proctor run command again, then log it"
        )
    specs = task_specs(run_dir, results.get("tasks") or {})
    table = samples_table(run_dir, (results, samples)).to_pylist()
    metric_columns = [c for c in (table[0] if table else {}) if c.startswith("metric_")]
    columns = [*SAMPLE_COLUMNS, *metric_columns]
    rows = [[_scalar(row.get(c)) for c in columns] for row in table]
    config = {
        "proctor_version": results.get("proctor_version"),
        "created": results.get("created"),
        "command": " ".join(results.get("command") or []),
        "status": results.get("status"),
        "limit": results.get("limit"),
        "overrides": results.get("overrides"),
        "model": results.get("model"),
        "model_info": results.get("model_info"),
        "environment": results.get("environment"),
        "tasks": {
            name: {
                "kind": entry.get("kind"),
                "dialect": entry.get("dialect"),
                "source": entry.get("source"),
                "version": entry.get("version"),
                "hash": entry.get("hash"),
                "n_samples": entry.get("n_samples"),
                "settings": entry.get("settings"),
                "spec": specs.get(name),
            }
            for name, entry in (results.get("tasks") or {}).items()
        },
    }
    files = [run_dir / "results.json", run_dir / "run.json", *sorted((run_dir / "tasks").glob("*.yaml"))]
    return RunContents(
        run_dir=run_dir,
        name=run_dir.resolve().name,
        metrics=metric_values(results),
        config=config,
        columns=columns,
        rows=rows,
        files=[f for f in files if f.is_file()],
    )


def flat_params(config: Mapping[str, object], prefix: str = "") -> dict[str, str]:
    """The configuration as dotted keys to text (MLflow params): mappings are followed, anything else is its JSON
    text (a list, a number, null) or the text itself."""
    out: dict[str, str] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flat_params(value, f"{name}."))
        else:
            out[name] = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return out
