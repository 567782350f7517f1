"""Importing a use case or metric file with AISteer360's names pointing at proctor's."""

from __future__ import annotations

from pathlib import Path

from proctor.core.user_code import (  # noqa: F401  (line_in: the dialect's errors name the user's line)
    import_file,
    line_in,
)


def import_user_file(path: Path):
    """Import a use case or metric file with AISteer360's names pointing at proctor's; executed anew
    on every call. Its module name is stable across processes: it enters the use case's fingerprint."""
    from proctor.dialects.aisteer.aisteer_names import aisteer360_names

    return import_file(path, prefix="proctor_usecase", names=aisteer360_names, fresh=True)
