"""Deprecated: the import path of Python use cases and steering before the AISteer360 dialect was one package.

Import from ``proctor`` (``UseCase``, ``Metric``, ``Benchmark``, ...) or ``proctor.dialects.aisteer`` instead.
Files and notebooks written for it keep working, with a ``FutureWarning`` (shown to users, not only
to developers) naming the new path; docs/architecture.md, "Dialect names".
"""

import warnings

from proctor.dialects.aisteer import *  # noqa: F401,F403
from proctor.dialects.aisteer import __all__  # noqa: F401

warnings.warn(
    "proctor.usecases is deprecated: import from proctor or proctor.dialects.aisteer "
    "(and proctor.dialects.aisteer.analysis for proctor.usecases.analysis)",
    FutureWarning,
    stacklevel=2,
)
