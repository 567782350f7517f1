"""What a metric gives is checked where it enters, as a server's reply is (``models/reply_checks.py``).

A metric is a plug-in's function as often as proctor's, and what it returned used to be taken as it came: the
strings ``'1'``/``'0'`` were averaged as numbers by numpy, a list per sample was flattened into twice the samples
(a standard error from the wrong n), a complex number or an aggregate returning a bare float ended in an internal
error, a negative standard error was printed as one, and a ``Fraction`` (a number) could not be written.

- a per-sample value read as a number (the metric's aggregate is the mean or the total, as for every metric
  registered without an aggregate of its own) is a real number: bool, int, float, and what Python and numpy
  count as real (``Fraction``, ``Decimal``, numpy scalars) read as a float; None (or NaN) means "not scored", as
  before. Anything else is an error naming the metric, who registered it, and the sample;
- a metric with its own aggregate may give any value its aggregate reads (perplexity's (log-prob, units) pairs),
  but one that samples.jsonl can hold;
- an aggregate returns ``(value, stderr)``: the value a real number (or None), the standard error None or a real
  number at least 0.
"""

from __future__ import annotations

import numbers
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

from proctor.core.errors import ProctorError
from proctor.core.registrations import defined_in
from proctor.scoring.metrics import MetricDef, total
from proctor.scoring.stats import mean_stderr

NUMERIC_AGGREGATES = (mean_stderr, total)  # aggregates that read every per-sample value as a number
_TAKES = "a number (bool, int, float, Fraction, a numpy scalar) or None for 'not scored'"


class MetricOutputError(ProctorError):
    """A metric's value, or its aggregate's result, that breaks the contract: names the metric and its origin."""


def _shown(value: object) -> str:
    text = repr(value)
    text = text if len(text) <= 80 else text[:77] + "..."
    return f"{text} (a {type(value).__name__})"


def _where(metric: MetricDef, fn: object) -> str:
    """Who registered the metric and where the function that gave the value is (file:line)."""
    file = defined_in(fn)
    code = getattr(getattr(fn, "__wrapped__", fn), "__code__", None)
    at = f"{file}:{code.co_firstlineno}" if file and code is not None else file
    origin = metric.origin
    if origin and at and not at.startswith(origin):
        return f"{at}, registered by {origin}"
    return at or origin or "its plug-in"


def real(value: object) -> float | int | bool | None:
    """``value`` as a number JSON and numpy read as such, or None where it is no real number."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float)) and type(value) in (int, float):
        return value
    if isinstance(value, (numbers.Real, Decimal)) and not isinstance(value, np.ndarray):
        return float(value)
    return None


def sample_value(metric: MetricDef, value: object, sample: object, file: object = None, row: object = None) -> Any:
    """A metric's value for one sample (its id, file and row, for the message), checked, and a plain number where
    it is one."""
    if value is None:
        return None
    number = real(value)
    if number is not None:
        return number
    if metric.aggregate not in NUMERIC_AGGREGATES and _storable(value):
        return value  # its own aggregate reads it (a pair, a text)
    wanted = _TAKES if metric.aggregate in NUMERIC_AGGREGATES else "a value samples.jsonl can hold (JSON)"
    raise MetricOutputError(
        f"{_where(metric, metric.compute)}: metric '{metric.name}' gave {_shown(value)} for sample '{sample}'"
        f"{f' ({file}, row {row})' if file is not None else ''}: "
        f"a metric gives {wanted}"
    )


def _storable(value: object, depth: int = 0) -> bool:
    if depth > 20:
        return False
    if value is None or isinstance(value, (str, Path)) or real(value) is not None:
        return True
    if isinstance(value, (list, tuple, set, frozenset)):  # as samples.jsonl's writer takes them (runs/results.py)
        return all(_storable(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _storable(v, depth + 1) for k, v in value.items())
    return False


def aggregated(metric: MetricDef, result: object) -> tuple[float | int | None, float | int | None]:
    """What a metric's aggregate returned, checked: ``(value, stderr)``, the value a number (or None), the standard
    error None or a number at least 0 (NaN: not known)."""
    where = f"{_where(metric, metric.aggregate)}: the aggregate of metric '{metric.name}'"
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise MetricOutputError(f"{where} returned {_shown(result)}, not (value, stderr) (stderr None if unknown)")
    value, stderr = result
    number = None if value is None else real(value)
    if value is not None and (number is None or isinstance(number, bool)):
        raise MetricOutputError(f"{where} returned the value {_shown(value)}: a value is a number (or None)")
    if stderr is None:
        return number, None
    error = real(stderr)
    if error is None or isinstance(error, bool):
        raise MetricOutputError(f"{where} returned the standard error {_shown(stderr)}: it is a number or None")
    if error < 0:
        raise MetricOutputError(
            f"{where} returned the standard error {stderr}: a standard error is at least 0 (None if unknown)"
        )
    return number, error
