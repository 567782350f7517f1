"""Logging a finished run to experiment trackers (``proctor run --log-to``, ``proctor log RUN_DIR --to``):
Weights & Biases offline and MLflow's local file store, optional extras imported only here. A layer on top of
the run folder: trackers read results.json, samples.jsonl, tasks/*.yaml and run.json, never the run's objects,
and a tracker that fails leaves the run folder as it was."""

from __future__ import annotations

from pathlib import Path

from proctor.core.errors import ProctorError
from proctor.runs.trackers.contents import RunContents, read_contents
from proctor.runs.trackers.logged import Logged
from proctor.runs.trackers.targets import OPTIONS, Target, check_installed, parse_target, parse_targets

NAMES = {"wandb": "W&B", "mlflow": "MLflow"}


class TrackerError(ProctorError):
    """A tracker could not log a run (its library failed, or its store could not be written)."""

    def __init__(self, target: Target, run_dir: Path, cause: BaseException) -> None:
        detail = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
        if not isinstance(cause, ProctorError):
            detail = f"{type(cause).__name__}: {detail}" if detail else type(cause).__name__
        super().__init__(f"logging {run_dir} to {NAMES[target.tracker]} ({target.text}) failed: {detail}")
        self.target = target


def log_to(contents: RunContents, target: Target) -> Logged:
    """One tracker: the run logged, or a ``TrackerError`` naming the tracker (whatever its library raised)."""
    check_installed([target], "logging a run to")
    try:
        if target.tracker == "wandb":
            from proctor.runs.trackers.wandb_log import log_wandb

            return log_wandb(contents, target)
        from proctor.runs.trackers.mlflow_log import log_mlflow

        return log_mlflow(contents, target)
    except Exception as exc:  # the library's own errors, of every type: one message naming the tracker
        raise TrackerError(target, contents.run_dir, exc) from exc


__all__ = [
    "OPTIONS",
    "Logged",
    "RunContents",
    "Target",
    "TrackerError",
    "check_installed",
    "log_to",
    "parse_target",
    "parse_targets",
    "read_contents",
]
