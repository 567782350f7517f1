"""``--predict-only`` (lm-eval's ``--predict_only``): the model answers every request and the answers are kept (the
run store, samples.jsonl), but no metric is computed. Each prepared task loses its metrics before the model loads,
so the engine's own scoring computes none; a task class that would score in its own code must say it can skip that
(``kinds/capabilities.SkipsScoring``, e.g. lm-eval's handler), and one that cannot is refused before the model loads.

Nothing here changes a request: the same run folder run again without ``--predict-only`` reads every answer back
from its store and scores it, with no model call.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from proctor.core.errors import ProctorError
from proctor.engine.prepare import PreparedTask
from proctor.kinds.capabilities import CorpusMetrics, ScoresItself, SkipsScoring

# what results.json and the console say about a predict-only run
NOTE = (
    "predict-only run: the answers are in samples.jsonl and no metric was computed; run the same command on this "
    "run folder without --predict-only to score them (no model call: the answers are read from its store)"
)


def _scores_in_own_code(prepared: PreparedTask) -> bool:
    """A task class whose own code computes metrics (corpus metrics, whole files scored). One that only predicts
    (``kinds/custom``'s base classes: a native ``task_class``, probsem's CogSci2023 scoring) hands the engine
    outcomes, which it scores with the task's metrics: none here."""
    handler = prepared.handler
    return isinstance(handler, CorpusMetrics) or (isinstance(handler, ScoresItself) and handler.scores_itself)


def unscored(prepared: Sequence[PreparedTask]) -> list[PreparedTask]:
    """The tasks with no metric to compute; a task class that scores in its own code and cannot skip it raises
    ``ProctorError`` naming the tasks (before any model loads)."""
    refused = [p for p in prepared if _scores_in_own_code(p) and not isinstance(p.handler, SkipsScoring)]
    if refused:
        named = ", ".join(f"{p.task.name} ({p.task.dialect})" for p in refused[:5])
        more = f" and {len(refused) - 5} more" if len(refused) > 5 else ""
        raise ProctorError(
            f"--predict-only: task(s) {named}{more} score their answers in their own code, which cannot leave the "
            "scoring out yet; run them without --predict-only, or select the others with --tasks"
        )
    out = []
    for p in prepared:
        if isinstance(p.handler, SkipsScoring):
            p.handler.skip_scoring()
        out.append(dataclasses.replace(p, metrics=()))
    return out
