"""The proctor home: where proctor keeps what it makes once and reuses (the default model's float32 copy,
lm-eval's index and listings, built kernels, Batch API journals). ``PROCTOR_HOME``, default ``~/.cache/proctor``."""

from __future__ import annotations

import os
from pathlib import Path


def proctor_home() -> Path:
    return Path(os.environ.get("PROCTOR_HOME") or Path.home() / ".cache" / "proctor").expanduser()
