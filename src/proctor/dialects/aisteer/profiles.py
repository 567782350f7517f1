"""Benchmark profiles as tables, with AISteer360's ``data_utils`` names and semantics.

``profiles`` is what ``Benchmark.run()`` returns: ``{pipeline: [{trial_id, params, generations,
evaluations, ...}]}``. ``flatten_profiles`` gives one row per (pipeline, configuration, trial);
``config_id`` is AISteer360's: the first 8 hex digits of the MD5 of the params as sorted JSON
(callables by qualified name), ``baseline`` without params. The table functions need pandas
(``pip install 'proctor[steer]'``); ``to_jsonable`` / ``extract_*`` / ``hash_params`` do not.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from proctor.core.errors import ProctorError
from proctor.dialects.aisteer.records import ProfileEntry

if TYPE_CHECKING:
    import pandas


def _pandas():
    try:
        import pandas
    except ImportError:
        raise ProctorError("benchmark tables need pandas: pip install 'proctor[steer]'") from None
    return pandas


def to_jsonable(obj: object) -> object:
    """A JSON-safe copy: paths as text, numpy values as Python, callables as ``callable:<qualname>``,
    anything else unknown as its repr."""
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "tolist") and hasattr(obj, "dtype"):  # numpy scalar or array
        return obj.tolist()
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [to_jsonable(v) for v in obj]
    if callable(obj):
        return f"callable:{getattr(obj, '__qualname__', type(obj).__name__)}"
    return repr(obj)


def hash_params(params: Mapping[str, object]) -> str:
    def default(obj: object) -> str:
        if callable(obj):
            return f"callable:{getattr(obj, '__qualname__', type(obj).__name__)}"
        return str(obj)

    return hashlib.md5(json.dumps(params, sort_keys=True, default=default).encode()).hexdigest()[:8]


def extract_metric(run: ProfileEntry, metric_name: str, key: str, default: object = math.nan) -> object:
    return ((run.get("evaluations") or {}).get(metric_name) or {}).get(key, default)


def extract_param(run: ProfileEntry, spec_name: str, param_name: str, default: object = None) -> object:
    return ((run.get("params") or {}).get(spec_name) or {}).get(param_name, default)


def flatten_profiles(
    profiles: Mapping[str, list[ProfileEntry]], metric_accessors: Mapping[str, tuple[str, str]] | None = None
):
    """A DataFrame: pipeline, trial_id, config_id, params, _run and one column per metric accessor
    (``{column: (MetricName, key)}``)."""
    rows = []
    for pipeline, runs in profiles.items():
        for run in runs:
            params = run.get("params") or {}
            row = {
                "pipeline": pipeline,
                "trial_id": run.get("trial_id", 0),
                "config_id": hash_params(params) if params else "baseline",
                "params": params,
                "_run": run,
            }
            for column, (metric, key) in (metric_accessors or {}).items():
                row[column] = extract_metric(run, metric, key)
            rows.append(row)
    return _pandas().DataFrame(rows)


def summarize_by_config(df: pandas.DataFrame, metric_cols: list[str], group_cols: list[str] | None = None):
    """One row per configuration: the group columns, ``n_trials``, ``{metric}_mean`` and
    ``{metric}_std`` (sample standard deviation; 0.0 for one trial)."""
    pd = _pandas()
    group_cols = list(group_cols or ["pipeline", "config_id"])
    out = []
    for key, group in df.groupby(group_cols, sort=False):
        row = dict(zip(group_cols, key if isinstance(key, tuple) else (key,)))
        row["n_trials"] = len(group)
        for column in metric_cols:
            row[f"{column}_mean"] = group[column].mean()
            row[f"{column}_std"] = group[column].std(ddof=1) if len(group) > 1 else 0.0
        out.append(row)
    return pd.DataFrame(out)


def get_param_values(df: pandas.DataFrame, spec_name: str, param_name: str):
    return df["params"].apply(lambda p: ((p or {}).get(spec_name) or {}).get(param_name))
