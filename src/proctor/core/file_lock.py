"""One process at a time: an exclusive OS lock on a file, held while a ``with`` block runs.

The lock is ``fcntl.flock`` on an open file, so the kernel releases it when the handle closes or the process
ends in any way (a kill -9 included): a stale lock file never blocks anyone. Where another process holds the
file, the caller chooses: refuse (``refuse`` gives the error to raise, e.g. naming the holder, which
``runs/lock.py`` writes into the file) or wait for it to finish (``before_waiting`` says so first, as the
default model's conversion does). Without ``fcntl`` (not POSIX) nothing is locked.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, TextIO


@contextmanager
def hold_file(
    path: Path,
    *,
    cannot_open: Callable[[OSError], Exception],
    refuse: Callable[[], Exception] | None = None,
    before_waiting: Callable[[], None] | None = None,
) -> Iterator[TextIO | None]:
    """Hold an exclusive lock on ``path`` (created, with its folder, if missing) for the block.

    Yields the open handle (``a+``: the holder may write into it), or ``None`` where there is no ``fcntl``.
    ``cannot_open(exc)`` is raised when the folder or file cannot be made or opened. When another process holds
    the lock: with ``refuse``, ``refuse()`` is raised; without it, ``before_waiting()`` (if given) is called and
    the block waits until the lock is free. Closing the handle on the way out releases the lock.
    """
    if refuse is not None and before_waiting is not None:
        raise TypeError("hold_file: refuse or wait (before_waiting), not both")
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        yield None
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held (and locked) until the block ends
    except OSError as exc:  # a folder where the file should be, a read-only folder, a full disk
        raise cannot_open(exc) from None
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if refuse is not None:
                raise refuse() from None
            if before_waiting is not None:
                before_waiting()
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield handle
    finally:
        handle.close()  # closing the descriptor releases the lock
