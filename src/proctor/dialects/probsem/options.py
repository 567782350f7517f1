"""probsem's options (``--norm``, ``--temp``): read by the declaration (the CLI's flags) and by ``loader``.

A leaf that imports only ``core``, so the loader can import it without importing the declaration (which names
the loader).
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import field_validator

from proctor.core.dialect import EVERY_COMMAND, BaseOptions, OptionError, cli


class ProbsemOptions(BaseOptions):
    probsem_norm: Annotated[
        bool,
        cli(
            "--norm",
            "--probsem-norm",
            commands=EVERY_COMMAND,
            help="probsem suites: divide each query's log-prob by its number of tokens (probsem's --norm).",
        ),
    ] = False
    probsem_temp: Annotated[
        float,
        cli(
            "--temp",
            "--probsem-temp",
            commands=EVERY_COMMAND,
            metavar="T",
            help="probsem suites: softmax temperature over the queries (probsem's --temp).",
        ),
    ] = 1.0

    @field_validator("probsem_temp")
    @classmethod
    def _positive_and_finite(cls, temp: float) -> float:
        if not (
            math.isfinite(temp) and temp > 0
        ):  # inf makes every distribution uniform: ties would all count as right
            raise OptionError("--temp", f"probsem's softmax temperature must be > 0 and finite, got {temp}")
        return temp
