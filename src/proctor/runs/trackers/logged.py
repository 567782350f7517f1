"""What logging a run to a tracker left, and where: the line the command prints."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Iterator


@dataclass(frozen=True)
class Logged:
    tracker: str
    run_id: str
    where: str  # the offline run's folder (W&B) or the file store's URI (MLflow)
    note: str  # how to see it, or send it on

    def line(self) -> str:
        return f"{self.tracker}: run {self.run_id} in {self.where} ({self.note})"


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """Environment variables set while a tracker library runs in this process, then put back as they were."""
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
