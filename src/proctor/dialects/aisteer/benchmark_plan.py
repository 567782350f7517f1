"""A benchmark's plan (``benchmark.Benchmark``): each steering pipeline's sweep expanded into configurations, each
with a stable id (a digest of its controls' settings; ``baseline`` without any), and the run folder each
(configuration, trial) runs in, ``save_dir/runs/<pipeline>/<config_id>-t<trial>``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from proctor.models.steering.controls import Control
from proctor.models.steering.specs import ControlSpec, expand

RUNS = "runs"  # save_dir/runs/<pipeline>/<config_id>-t<trial>: one run folder per trial


@dataclass
class Configuration:
    pipeline: str
    config_id: str
    params: dict[str, dict[str, object]]  # {ControlSpec name: its point}
    controls: list[Control] = field(repr=False)


def config_id(controls: Sequence[Control]) -> str:
    if not controls:
        return "baseline"
    payload = json.dumps([c.config() for c in controls], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:10]


def configurations(
    pipelines: Mapping[str, Sequence[Control | ControlSpec]], context: Mapping[str, object]
) -> list[Configuration]:
    """Every pipeline's configurations, in order; two identical ones in one pipeline are refused."""
    out = []
    for pipeline, items in pipelines.items():
        seen: set[str] = set()
        for params, controls in expand(list(items), context):
            cid = config_id(controls)
            if cid in seen:
                raise ValueError(f"pipeline '{pipeline}' has two identical configurations ({params})")
            seen.add(cid)
            out.append(Configuration(pipeline, cid, params, controls))
    return out


def _folder_name(name: str) -> str:
    """A pipeline name as a folder name: as is when safe, else made safe and told apart by a digest."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name) or "_"
    return safe if safe == name else f"{safe}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def trial_dir(folder: Path, config: Configuration, trial: int) -> Path:
    return folder / RUNS / _folder_name(config.pipeline) / f"{config.config_id}-t{trial}"
