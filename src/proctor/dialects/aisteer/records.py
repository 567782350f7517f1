"""The documents Python use cases and ``Benchmark`` pass around, named for what they hold.

A use case's ``generate`` returns ``Generation`` records and its ``evaluate`` ``Evaluations``; a
``Benchmark`` keeps one ``ProfileEntry`` per (configuration, trial), grouped in ``Profiles`` by
pipeline. Their values are whatever the use case's file puts there (texts, numbers, lists, its
rows' fields), as AISteer360's are: only the keys named below are fixed.
"""

from __future__ import annotations

from typing import Any

from proctor.dialects.aisteer.metrics import MetricResult

# One generation of ``UseCase.generate``: ``response`` and ``prompt``, usually the row's ``id`` / ``question_id``
# and whatever else the use case keeps for its metrics (reference answers, finish_reason, ...).
Generation = dict[str, Any]
# What ``UseCase.evaluate`` returns: {metric name: that metric's values}.
Evaluations = dict[str, MetricResult]
# One trial of one configuration in a Benchmark profile: trial_id, config_id, params, generations, evaluations
# (as JSON holds them: read back from run folders and profile files).
ProfileEntry = dict[str, Any]
# ``Benchmark.run()``'s result: {pipeline name: its entries}.
Profiles = dict[str, list[ProfileEntry]]
