"""Named pipes, devices and sockets are refused wherever proctor reads a file a user names.

Reading a FIFO waits for a writer that may never come, ``/dev/zero`` or ``/dev/urandom`` never end, and a
socket does not open as a file: each would hang a run or fill its memory, so each is an error naming the
file before it is opened (a symlink counts as what it points to).
"""

from __future__ import annotations

import stat
from pathlib import Path

from proctor.core.errors import TaskDefinitionError

_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def special_kind(path: Path) -> str | None:
    """What ``path`` is when it is neither a regular file nor a folder (None for those, or when it is absent)."""
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        return None
    return next((name for test, name in _KINDS if test(mode)), None)


def refuse_special(path: Path, what: str = "file", *, file: str | Path | None = None, field: str | None = None) -> None:
    """Raise an error naming ``path`` (and the task ``file`` and ``field`` that named it) if it is a FIFO,
    a device or a socket."""
    kind = special_kind(path)
    if kind is not None:
        subject = "this" if file is None or Path(file) == path else str(path)
        raise TaskDefinitionError(
            f"{subject} is {kind}, not a regular file: proctor reads a {what} only from a regular file "
            "(reading this one could wait or run forever)",
            file=file if file is not None else path,
            field=field,
        )
