"""A run folder the disk will not take more of (full, over quota, read-only): one error that names the file
and says the answers already computed are kept, instead of an ``OSError`` from deep inside a write.

``write()`` on a full disk raises ``ENOSPC`` without a file name, so the writers wrap each file in
``naming(path)``; ``evaluate`` runs in ``explained(run_dir, store)``, which turns what reaches it into one
``ProctorError``. The response store reports its own ("database or disk is full") where it is opened and
written.
"""

from __future__ import annotations

import errno
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from proctor.core.errors import ProctorError

# What a write fails with when the disk, not proctor or the input, is the problem.
DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})


@contextmanager
def naming(path: Path) -> Iterator[None]:
    """Run the block; an ``OSError`` without a file name raised in it names ``path``."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise


def no_room(run_dir: Path, store: Path, exc: OSError) -> ProctorError:
    """The error users see when ``run_dir`` cannot be written (``exc`` is a disk error)."""
    where = exc.filename or run_dir
    return ProctorError(
        f"cannot write {where}: {exc.strerror or exc}. The answers computed so far are kept in {store}: "
        f"make room (or make the folder writable) and run the same command with --output {run_dir} to resume."
    )


@contextmanager
def explained(run_dir: Path, store: Path) -> Iterator[None]:
    """Run the block; a disk error raised in it becomes ``no_room``'s error."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in DISK_ERRORS:
            raise
        raise no_room(run_dir, store, exc) from None
