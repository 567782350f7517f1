"""Reading a backend class's declared options: their names and plain types (for vetting ``--model-arg``)."""

from __future__ import annotations

import inspect
from typing import Mapping

from proctor.core.errors import ModelLoadError

# the model options the command line sets with flags of their own; any other is a --model-arg
MODEL_FLAGS = {"dtype": "--dtype", "device": "--device", "batch_size": "--batch-size", "max_length": "--max-length"}


def option_flag(name: str) -> str:
    """How a model option is given on the command line: its own flag (``--dtype``) or ``--model-arg NAME``."""
    return MODEL_FLAGS.get(name, f"--model-arg {name}")


def named_parameters(cls: type[object]) -> set[str]:
    """The keyword options a backend class takes (for checking ``--model-arg`` names)."""
    params = inspect.signature(cls.__init__).parameters
    return {n for n, p in params.items() if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}


_TYPES = {"bool": (bool,), "int": (int,), "float": (int, float), "str": (str,)}


def check_option_types(cls: type[object], options: Mapping[str, object]) -> None:
    """A ``--model-arg`` value of the wrong type (``batch_invariant=maybe``) would be read as something else: refuse it.
    Only options whose declared type is plainly bool, int, float or str (optionally ``| None``) are checked."""
    params = inspect.signature(cls.__init__).parameters
    for name, value in options.items():
        if name not in params or value is None:
            continue
        declared = str(params[name].annotation).replace(" | None", "").replace("Optional[", "").rstrip("]")
        kinds = _TYPES.get(declared)
        if kinds is None:
            continue
        wrong = not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)
        if wrong:
            wanted = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "a text"}[declared]
            raise ModelLoadError(f"--model-arg {name}={value!r}: {name} takes {wanted}, got {type(value).__name__}")


def check_bounds(options: Mapping[str, object], lowest: Mapping[str, tuple[float, bool]]) -> None:
    """Numeric ``--model-arg`` values below their least sensible value (``lowest``: name -> (bound, whether the
    bound itself is allowed)), refused before anything loads rather than failing deep in a client or a loop."""
    import math

    for name, (bound, allowed) in lowest.items():
        value = options.get(name)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue  # absent, or of another type (check_option_types says so)
        if not math.isfinite(value) or value < bound or (value == bound and not allowed):
            relation = "at least" if allowed else "above"
            raise ModelLoadError(f"--model-arg {name}={value!r}: {name} must be a number {relation} {bound:g}")
