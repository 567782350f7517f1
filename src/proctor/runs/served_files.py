"""What ``proctor view`` may answer with: only regular files inside the folder it serves, and only to requests
addressed to this machine by a loopback name.

A run folder's ``samples.jsonl`` that is a symlink to ``/etc/passwd`` (or a FIFO, which would hang the reader,
or a device) is refused, as is any file whose path, once its links are resolved, leaves the served folder.
A page on another site can make the browser send requests to 127.0.0.1 under its own host name (DNS
rebinding): the browser then treats the answers as that site's, so a request whose ``Host`` header is not
localhost, 127.0.0.1 or [::1] (any port: an SSH tunnel forwards another) is refused.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from proctor.core.errors import ProctorError

SERVED_FILES = ("results.json", "samples.jsonl")  # what the viewer reads of a run folder
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_HOST = re.compile(r"^(?P<name>\[[^\]]*\]|[^:\[\]]*)(?::(?P<port>\d{1,5}))?$")


class NotServed(ProctorError):
    """A file the viewer will not read: outside the served folder after its links, or not a regular file."""


def loopback_host(header: str | None) -> bool:
    """Whether a ``Host`` header names this machine by a loopback name (with or without a port)."""
    if not header:
        return False
    match = _HOST.match(header.strip().lower())
    return bool(match) and match is not None and match.group("name").rstrip(".") in LOOPBACK_NAMES


def check_served(folder: Path, path: Path) -> None:
    """``path`` may be served from ``folder``: it resolves (links followed) inside it, to a regular file.
    A file that is not there passes: the reader says so in its own words."""
    if not os.path.lexists(path):
        return
    root = Path(folder).resolve()
    target = Path(path).resolve()
    if not target.is_relative_to(root):
        raise NotServed(f"{path}: not served: it leads to {target}, outside the folder being viewed ({root})")
    try:
        mode = os.stat(target).st_mode
    except OSError as exc:
        raise NotServed(f"{path}: not served: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        return  # a folder in a file's place: the reader names it (a folder is not a run's samples file)
    if not stat.S_ISREG(mode):
        raise NotServed(f"{path}: not served: it is not a regular file (a FIFO, socket or device)")


def check_run_files(folder: Path, run_dir: Path) -> None:
    """Every file the viewer reads of ``run_dir``, checked by ``check_served``."""
    for name in SERVED_FILES:
        check_served(folder, Path(run_dir) / name)
