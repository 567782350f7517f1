"""The documents of a run folder as they are read back (``json.loads`` / ``yaml``), each named for what it holds.

They are plain mappings on purpose: report, compare, the exports and the trackers read run folders of earlier
versions and folders edited by hand, so every field is checked where it is read (``load_results`` checks
results.json against ``runs/results_schema.Results`` first). A task's entry, a metric's and a roll-up node
inside results.json are ``proctor.scoring.aggregate.TaskEntry`` / ``MetricEntry`` and
``proctor.scoring.rollup.RollupNode``.
"""

from __future__ import annotations

from typing import Any

# results.json as read back: the fields of ``results_schema.Results`` (proctor_version, model, tasks, groups, ...)
ResultsDocument = dict[str, Any]

# one line of samples.jsonl as read back: a sample's record as the engine wrote it (``engine.outcomes.SampleRecord``,
# a layer above this one): id, task, prompt, target, the model's answer, metrics, ...
SampleLine = dict[str, Any]

# a task's ``spec`` as a run saved it in tasks/<name>.yaml (its ``TaskSpec`` dumped as JSON): data, prompt, fewshot, ...
SavedSpec = dict[str, Any]

# a model's fingerprint (``Model.fingerprint``; results.json's ``model``): backend, path, revision, dtype and every
# setting that changes outputs; what the response store is keyed by
Fingerprint = dict[str, Any]
