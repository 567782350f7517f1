"""What a metric's name alone says about it, for the places that show or export results without its definition
(the console, samples.parquet, the viewer)."""

from __future__ import annotations


def is_count(metric: str) -> bool:
    """A metric that counts (SEA-HELM's null_count, a use case's n_correct): a whole number, never a verdict of
    right or wrong, even where every row's value is 0 or 1 (null_count is 1 for an empty answer)."""
    name = metric.split(",")[0].lower()
    return name.endswith("count") or name.startswith(("n_", "num_"))
