"""One writer per run folder: an OS file lock on ``RUN_DIR/.lock`` held for the whole run.

The lock is ``core/file_lock.hold_file`` (``fcntl.flock`` on an open file), so the kernel releases it when the
process ends in any way (a kill -9 included): a stale lock file never blocks the next run. The file names its
holder (pid, host, command, start time) so a refused run can say who holds the folder.
"""

from __future__ import annotations

import json
import os
import socket
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Sequence

from proctor.core.errors import ProctorError
from proctor.core.file_lock import hold_file

LOCK_FILE = ".lock"


class RunFolderBusyError(ProctorError):
    """Another process is writing this run folder."""


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return "another process"
    command = " ".join(info.get("command") or []) or "?"
    return f"pid {info.get('pid', '?')} on {info.get('host', '?')} since {info.get('started', '?')} ({command})"


@contextmanager
def hold_run_dir(run_dir: Path, command: Sequence[str] | None = None) -> Iterator[None]:
    """Hold ``run_dir`` for this process, or raise ``RunFolderBusyError`` naming the holder."""
    path = run_dir / LOCK_FILE

    def cannot_open(exc: OSError) -> ProctorError:  # a folder named .lock, a read-only folder
        return ProctorError(f"cannot open the run folder's lock file {path}: {exc.strerror or exc}")

    def busy() -> RunFolderBusyError:
        return RunFolderBusyError(
            f"run folder {run_dir} is in use by {_holder(path)}; wait for it to finish, or choose another --output"
        )

    with hold_file(path, cannot_open=cannot_open, refuse=busy) as handle:
        if handle is not None:  # None: not POSIX, no lock (and no holder written), as before
            handle.seek(0)
            handle.truncate()
            json.dump(
                {
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "command": list(command) if command is not None else None,
                },
                handle,
            )
            handle.flush()
        yield
