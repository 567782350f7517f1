"""The console streams as a command finds them: closed, unable to encode a character, or a pipe whose reader
stopped. None of them turns a finished command into an internal error.

- A standard stream closed when proctor starts (``proctor run ... >&-``) is opened on ``/dev/null``: printing
  goes nowhere, and no file the run opens (the response store) takes its number, where a print or a child
  process would write into it.
- A console that cannot encode a character (``PYTHONIOENCODING=ascii``, ``LANG=C`` on an old Python)
  prints ``?`` for it: the tables' ``·`` and a task's non-ASCII name are no reason to fail a run.
- A pipe closed while proctor prints (``proctor ls | head -1``) ends the command with a note and exit 141, as
  a shell reports a command the closed pipe stopped; what the command wrote to files is complete.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys

from proctor.cli.display import err_console

CLOSED_PIPE_EXIT = 141  # 128 + SIGPIPE


def open_closed_streams() -> None:
    """File descriptors 0, 1 and 2 that are closed are opened on /dev/null; ``sys.stdout`` / ``sys.stderr``
    that Python set to None for them are files on it again."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if sys.stdout is None:
        sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115 - for the process
    if sys.stderr is None:
        sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115 - for the process


def replace_unencodable() -> None:
    """Standard streams that would raise on a character their encoding lacks print ``?`` instead."""
    for stream in (sys.stdout, sys.stderr):
        # "strict", and "surrogateescape" (Python's choice under the C locale), raise on such a character
        if isinstance(stream, io.TextIOWrapper) and stream.errors in ("strict", "surrogateescape"):
            stream.reconfigure(errors="replace")


def is_closed_pipe(exc: BaseException) -> bool:
    """Whether ``exc`` (or what typer turned into an exit) is a write to a pipe whose reader has gone."""
    return isinstance(exc, BrokenPipeError) or isinstance(exc.__context__, BrokenPipeError)


def closed_pipe_exit() -> int:
    """What a command does when its output pipe closed: later prints (and Python's own flush at exit) go to
    /dev/null, a note goes to stderr where it still can; the exit code."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # pragma: no cover - stdout is no file: nothing to flush there
        pass
    with contextlib.suppress(OSError):
        err_console.print(
            "note: the standard output was closed (a pipe's reader stopped); printing stopped there", soft_wrap=True
        )
    return CLOSED_PIPE_EXIT
