"""A finished run logged to MLflow's local file store (``file:`` URI): metrics, the configuration as params,
the run's files as artifacts and the samples as an MLflow table (``samples.parquet``, exact: MLflow writes a
JSON table through pandas, which keeps 10 significant digits)."""

from __future__ import annotations

import re
import time
import warnings

from proctor.runs.trackers.contents import Cell, RunContents, flat_params
from proctor.runs.trackers.logged import Logged, environment
from proctor.runs.trackers.targets import Target, mlflow_store

SAMPLES_FILE = "samples.parquet"  # the table (MlflowClient.load_table reads it); JSON would round to 10 digits
PARAM_VALUE_LIMIT = 6000  # MLflow's longest param value (MAX_PARAM_VAL_LENGTH); the whole text is in the artifacts
BATCH = 100  # params per log_batch call (MLflow's limit), metrics likewise


def mlflow_key(name: str) -> str:
    """A metric or param name as MLflow takes it (letters, digits, '_', '-', '.', ' ', '/'): any other character
    (lm-eval's ``acc,none``) becomes '_'."""
    return re.sub(r"[^\w\-. /]", "_", name)


def _params(contents: RunContents) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in flat_params(contents.config).items():
        if len(value) > PARAM_VALUE_LIMIT:
            value = value[: PARAM_VALUE_LIMIT - 60] + f"... ({len(value)} characters; see the run's files)"
        out[mlflow_key(key)[:250]] = value
    return out


def _metrics(contents: RunContents) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in contents.metrics.items():
        name = mlflow_key(key)
        if name in out:
            from proctor.core.errors import ProctorError

            raise ProctorError(f"mlflow: the metrics '{key}' and another both become '{name}' in MLflow's names")
        out[name] = value
    return out


def log_mlflow(contents: RunContents, target: Target) -> Logged:
    uri = mlflow_store(target)
    # MLflow 3 asks for this opt-in before it writes a file store (its default is now a database).
    with environment({"MLFLOW_ALLOW_FILE_STORE": "true"}):
        from mlflow.entities import Metric, Param
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=uri)
        name = target.option("experiment", "proctor") or "proctor"
        experiment = client.get_experiment_by_name(name)
        experiment_id = experiment.experiment_id if experiment is not None else client.create_experiment(name)
        run = client.create_run(experiment_id, run_name=target.option("name", contents.name), tags=contents.tags)
        run_id = run.info.run_id
        try:
            now = int(time.time() * 1000)
            metrics = [Metric(k, v, now, 0) for k, v in _metrics(contents).items()]
            params = [Param(k, v) for k, v in _params(contents).items()]
            for i in range(0, max(len(metrics), len(params)), BATCH):
                client.log_batch(run_id, metrics=metrics[i : i + BATCH], params=params[i : i + BATCH])
            for file in contents.files:
                folder = file.parent.relative_to(contents.run_dir).as_posix()
                client.log_artifact(run_id, str(file), None if folder == "." else folder)
            table: dict[str, list[Cell]] = {
                c: [row[i] for row in contents.rows] for i, c in enumerate(contents.columns)
            }
            if contents.rows:  # none with --no-log-samples
                with warnings.catch_warnings():  # pandas 3's notice about MLflow's own select_dtypes call
                    warnings.filterwarnings("ignore", message=".*select_dtypes.*")
                    client.log_table(run_id, data=table, artifact_file=SAMPLES_FILE)
        except Exception:
            client.set_terminated(run_id, status="FAILED")
            raise
        client.set_terminated(run_id)
    return Logged("mlflow", run_id, uri, f"experiment '{name}'; see it with: mlflow ui --backend-store-uri {uri}")
