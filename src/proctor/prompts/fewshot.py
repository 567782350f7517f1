"""Few-shot selection seeded per sample: a sample's shots never depend on which others run."""

from __future__ import annotations

import hashlib
import random
from typing import Sequence

from proctor.data.sources import Sample


def sample_seed(seed: int, sample_id: str) -> int:
    digest = hashlib.sha256(f"{seed}\x00{sample_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def choose_shots(pool: Sequence[Sample], sample: Sample, count: int, seed: int, *, own_data: bool = True) -> list[int]:
    """Indices into ``pool`` of ``count`` examples for ``sample``: never the sample itself when the pool is the
    task's own data (``own_data``); a separate pool's ids name other rows, so an equal id there is no reason to skip
    one (a 5-row dev set, as MMLU's, must give 5 shots to every sample)."""
    if count <= 0 or not pool:
        return []
    rng = random.Random(sample_seed(seed, sample.id))
    picks = rng.sample(range(len(pool)), min(count + 1, len(pool)))  # one spare, for the sample itself
    return [i for i in picks if not own_data or pool[i].id != sample.id][:count]
