"""``--model steer:FILE.py:NAME`` vetted before anything loads (the ``steer`` backend's check): the file exists,
the options are the base model's.

Apart from ``steer_backend`` (which loads the steered model), so a check imports no steering code.
"""

from __future__ import annotations

from pathlib import Path

from proctor.core.errors import ModelLoadError


def check_steered(rest: str, options: dict) -> set[str]:
    """``steer:FILE.py:NAME``: the file exists; options are the HF backend's (the base model's) and ``base``."""
    from proctor.models.hf.model import HFModel
    from proctor.models.registry import named_parameters

    file, sep, name = rest.rpartition(":")
    if not sep or not file.endswith(".py") or not name:
        raise ModelLoadError(
            "--model steer: takes FILE.py:NAME (a pipeline, a list of controls or a "
            f"function in the file), got '{rest}'"
        )
    if not Path(file).expanduser().is_file():
        raise ModelLoadError(f"--model steer:{rest}: no such file {file}")
    return named_parameters(HFModel) | {"base"}
