"""``--model steer:FILE.py:NAME``: a steering pipeline from a user file, as a proctor model.

``NAME`` in the file is a ``SteeringPipeline``, a list of controls, or a function
``f(base_model) -> pipeline or controls``; the base model is ``--model-arg base=...`` (default
``smollm2``; ``--model-role steer_base=`` overrides it), loaded with the other model options (dtype, device, batch
size) by the run's model roles (``proctor.api.model_roles``). The file is imported
with AISteer360's names pointing at proctor's (``user_files.import_user_file``), which is why this
backend belongs to the dialect and is registered by its plug-in.
"""

from __future__ import annotations

from pathlib import Path

from proctor.core.errors import ModelLoadError, TaskDefinitionError
from proctor.models.steering.steered_model import SteeredModel


def load_steered(spec: str, base: str = "smollm2", **options: object) -> SteeredModel:
    """``FILE.py:NAME`` → a ``SteeredModel`` (see the module docstring)."""
    from proctor.core.user_errors import call_user
    from proctor.dialects.aisteer.user_files import import_user_file
    from proctor.models.steering.controls import Control
    from proctor.models.steering.pipeline import SteeringPipeline

    file, sep, name = spec.rpartition(":")
    if not sep or not file.endswith(".py") or not name:
        raise ModelLoadError(
            "--model steer: takes FILE.py:NAME (a pipeline, a list of controls or a "
            f"function in the file), got '{spec}'"
        )
    path = Path(file)
    if not path.is_file():
        raise ModelLoadError(f"--model steer:{spec}: no such file {path}")
    module = import_user_file(path)
    if not hasattr(module, name):
        raise TaskDefinitionError(f"the file defines no '{name}'", file=path, field=name)
    value = getattr(module, name)
    if isinstance(value, SteeringPipeline):
        return SteeredModel(value, owns=True)
    from proctor.api.model_roles import active_roles

    base_model = active_roles().model("steer_base", base, options=options)  # --model-role steer_base= overrides base
    if callable(value) and not isinstance(value, Control):
        value = call_user(value, name, base_model, field=name, file=path)  # a raise names its file and line
        if isinstance(value, SteeringPipeline):
            return SteeredModel(value, owns=True)
    controls = [value] if isinstance(value, Control) else value
    if not isinstance(controls, (list, tuple)) or not all(isinstance(c, Control) for c in controls):
        raise TaskDefinitionError(
            f"'{name}' must be a SteeringPipeline, a list of controls, or a function returning one "
            f"(got {type(value).__name__})",
            file=path,
            field=name,
        )
    return SteeredModel(SteeringPipeline(base_model, list(controls), name=name), owns=True)
