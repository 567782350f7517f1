"""What running one task gives: its results.json entry and its samples.jsonl records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from proctor.runs.task_result import TaskResult

# a sample's record in samples.jsonl (its id, source, prompt, metric values, the kind's details)
SampleRecord = dict[str, Any]


@dataclass
class TaskOutcome:
    name: str
    result: TaskResult  # the task's entry of results.json
    records: list[SampleRecord] = field(repr=False)
