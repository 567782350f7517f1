"""A ``--predict-only`` run folder (its answers kept, no metric computed) given to a command that reads metrics:
refused with one message that says how to score it, rather than an empty comparison or "no variance"."""

from __future__ import annotations

from pathlib import Path

from proctor.core.errors import ProctorError


def check_scored(run: Path, results: object, purpose: str) -> None:
    """Raise ``ProctorError`` when ``results`` (the folder's results.json) is a predict-only run's."""
    if isinstance(results, dict) and results.get("predict_only") is True:
        raise ProctorError(
            f"{run} is a predict-only run (--predict-only): it holds the model's answers but no metric, so there "
            f"is nothing to {purpose}; score it by running its command again without --predict-only (-o {run}: "
            "the answers are read from its store, no model call)"
        )
