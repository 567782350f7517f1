"""Ctrl-C and SIGTERM: the command stops, and says how many answers were saved and how to resume.

Python's own Ctrl-C is a ``KeyboardInterrupt``, which typer turns into a bare exit 130 before ``main`` sees
it, and SIGTERM kills without a word. While a command runs, both raise ``RunInterrupted`` instead (typer
lets it through); a run it stops notes its folder and its store's count on the way out
(``api/evaluation.py``), every ``finally`` and ``with`` on the way closes what it holds (the store's last
batch is committed or rolled back whole), and ``main`` prints ``message``. A second signal while that
happens is the default one: a user who presses Ctrl-C twice is not kept waiting.
"""

from __future__ import annotations

import shlex
import signal
import threading
from contextlib import contextmanager
from types import FrameType
from typing import Iterator, Sequence

from proctor.core.errors import RunInterrupted
from proctor.core.redact import masked_command

_SIGNALS = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM"}


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    for number in _SIGNALS:  # the second signal ends the process as it would without proctor
        signal.signal(number, signal.default_int_handler if number == signal.SIGINT else signal.SIG_DFL)
    raise RunInterrupted(signum, _SIGNALS.get(signal.Signals(signum), signal.Signals(signum).name))


@contextmanager
def signals_raise() -> Iterator[None]:
    """Within the block SIGINT and SIGTERM raise ``RunInterrupted``; the former handlers come back after it.

    A signal the process was started ignoring (``nohup``, a background job of a shell) stays ignored."""
    if threading.current_thread() is not threading.main_thread():  # main() called from a thread: the signals
        yield  # are the main thread's (Python runs handlers there only, and refuses to install them elsewhere)
        return
    former = {number: signal.getsignal(number) for number in _SIGNALS}
    for number, handler in former.items():
        if handler is not signal.SIG_IGN:
            signal.signal(number, _raise_interrupted)
    try:
        yield
    finally:
        for number, handler in former.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)


def resume_command(argv: Sequence[str], run_dir: object) -> str:
    """The command that continues the run: the one given, less ``--restart`` (which would discard what was
    saved), with ``--output`` naming the run folder where it named none; no password of a URL in it."""
    args = [a for a in argv if a != "--restart"]
    if not any(a in ("--output", "-o") or a.startswith("--output=") for a in args):
        args += ["--output", str(run_dir)]
    shown = masked_command(["proctor", *args]) or []
    return shlex.join(shown)


def message(exc: RunInterrupted, argv: Sequence[str]) -> str:
    """What an interrupted command prints: the signal, the answers kept and the command that resumes."""
    if exc.run_dir is None:  # before a run folder took answers, or another command than run
        return f"interrupted by {exc.name}" + (" before any answer was saved" if argv[:1] == ["run"] else "")
    return (
        f"interrupted by {exc.name}: {exc.saved} answer(s) saved in {exc.run_dir}; to resume, run:\n"
        f"  {resume_command(argv, exc.run_dir)}"
    )
