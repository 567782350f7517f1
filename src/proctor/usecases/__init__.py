"""Public import path of Python use cases and steering (``from proctor.usecases import ...``).

They live in the AISteer360 dialect package, ``proctor.dialects.aisteer``; this package keeps the
import path that user files and notebooks use.
"""

from proctor.dialects.aisteer import *  # noqa: F401,F403
from proctor.dialects.aisteer import __all__  # noqa: F401
