"""``ControlSpec``: a control whose settings are swept (grid, seeded random sample, or a function).

``vars`` is a dict of lists (every combination), a list of dicts (exactly these points) or a
callable ``vars(context) -> iterable of dicts``. ``search_strategy="random"`` keeps ``num_samples``
of the points, drawn with ``random.Random(seed)`` and kept in their original order.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from proctor.models.steering.controls import Control


@dataclass
class ControlSpec:
    control_cls: Callable[..., Control]  # a Control class, or a function that builds one
    params: Mapping[str, object] = field(default_factory=dict)
    vars: (
        Mapping[str, Iterable[object]]
        | list[Mapping[str, object]]
        | Callable[[dict[str, object]], Iterable[Mapping[str, object]]]
        | None
    ) = None
    name: str | None = None
    search_strategy: str = "grid"
    num_samples: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.search_strategy not in ("grid", "random"):
            raise ValueError(f"search_strategy must be 'grid' or 'random', got {self.search_strategy!r}")
        if self.search_strategy == "random" and (self.num_samples is None or self.num_samples < 1):
            raise ValueError("search_strategy='random' needs num_samples >= 1")
        if self.name is None:
            self.name = getattr(self.control_cls, "__name__", "control")

    @property
    def key(self) -> str:
        """``name`` (``__post_init__`` always sets it): the key of this spec's points in a configuration's params."""
        if self.name is None:
            raise AssertionError("ControlSpec.name is set in __post_init__")
        return self.name

    def points(self, context: Mapping[str, object] | None = None) -> list[dict[str, object]]:
        if self.vars is None:
            points: list[dict[str, object]] = [{}]
        elif callable(self.vars):
            points = [dict(p) for p in self.vars(dict(context or {}))]
        elif isinstance(self.vars, Mapping):
            keys = list(self.vars)
            points = [dict(zip(keys, combo)) for combo in itertools.product(*(list(self.vars[k]) for k in keys))]
        else:
            points = [dict(p) for p in self.vars]
        overlap = sorted({k for p in points for k in p} & set(self.params))
        if overlap:
            raise ValueError(f"ControlSpec '{self.name}': {overlap} are both fixed params and swept vars")
        count = self.num_samples  # set when random (checked when the spec was made)
        if self.search_strategy == "random" and count is not None and count < len(points):
            keep = sorted(random.Random(self.seed).sample(range(len(points)), count))
            points = [points[i] for i in keep]
        return points

    def build(self, point: Mapping[str, object]) -> Control:
        kwargs = {**self.params, **point}
        control = self.control_cls(**kwargs)
        if not isinstance(control, Control):
            raise TypeError(f"ControlSpec '{self.name}' built a {type(control).__name__}, not a Control")
        return control


def expand(
    items: Sequence[Control | ControlSpec], context: Mapping[str, object] | None = None
) -> list[tuple[dict[str, dict[str, object]], list[Control]]]:
    """The configurations of one pipeline: ``[(params, controls)]``.

    Fixed controls give one configuration with empty params; specs give the product of their points,
    with params ``{spec name: point}``. Mixing fixed controls and specs is allowed: fixed controls
    join every configuration.
    """
    specs: list[ControlSpec] = []
    fixed: list[Control] = []
    for item in items:
        if isinstance(item, ControlSpec):
            specs.append(item)
        elif isinstance(item, Control):
            fixed.append(item)
        else:
            raise TypeError(f"pipelines list Control or ControlSpec objects, got {type(item).__name__}")
    names = [s.key for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"two ControlSpecs in one pipeline share a name: {names}")
    if not specs:
        return [({}, list(fixed))]
    configs = []
    for combo in itertools.product(*(s.points(context) for s in specs)):
        params = {s.key: point for s, point in zip(specs, combo)}
        configs.append((params, list(fixed) + [s.build(p) for s, p in zip(specs, combo)]))
    return configs
