"""The ``proctor`` command: run, ls, validate, report, compare, export, view.

``app`` is the Typer application (``cli/app.py``); each command lives in its own module and adds itself
to it; options of dialect plug-ins are added to ``run`` / ``ls`` / ``validate`` from the registry
(``cli/options.py``). ``main`` turns user errors into one message and an exit code.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, List, NoReturn, Optional

import typer
from rich.markup import escape

from proctor.cli import run as _run_command  # noqa: F401  (commands add themselves)
from proctor.cli import runs as _runs_commands  # noqa: F401
from proctor.cli import tasks as _task_commands  # noqa: F401
from proctor.cli import view as _view_command  # noqa: F401
from proctor.cli.app import app
from proctor.cli.console import configure_logging
from proctor.cli.display import err_console
from proctor.cli.interrupts import message as interrupted
from proctor.cli.interrupts import signals_raise
from proctor.cli.streams import closed_pipe_exit, is_closed_pipe, open_closed_streams, replace_unencodable
from proctor.core.errors import ProctorError, RunInterrupted
from proctor.runs.unwritable import DISK_ERRORS

if TYPE_CHECKING:
    from click import ClickException


def click_exception_classes() -> tuple[tuple[type[ClickException], ...], tuple[type[BaseException], ...]]:
    """(usage-error, abort) classes of plain click and of the copy typer >= 0.29 bundles.

    Typer raises its own copy's exceptions; a plugin or an older typer raises plain click's. Both
    must be caught, or a usage error ends in a traceback.
    """
    errors: list[type[ClickException]] = []  # typer's copy has the same API
    aborts: list[type[BaseException]] = [typer.Abort]
    for module in ("click.exceptions", "typer._click.exceptions"):
        try:
            found = __import__(module, fromlist=["ClickException"])
        except ImportError:
            continue
        errors.append(found.ClickException)
        if hasattr(found, "Abort"):
            aborts.append(found.Abort)
    return tuple(dict.fromkeys(errors)), tuple(dict.fromkeys(aborts))


def _print_error(message: str) -> None:
    err_console.print(f"[bold red]error:[/bold red] {escape(message)}", highlight=False, soft_wrap=True)


def main(argv: Optional[List[str]] = None) -> None:
    """The console entry point: user errors print one message (no traceback) and exit non-zero."""
    open_closed_streams()  # closed, unable to encode, a pipe that closes: cli/streams.py
    replace_unencodable()
    configure_logging()
    click_errors, aborts = click_exception_classes()
    try:
        with signals_raise():  # Ctrl-C and SIGTERM: RunInterrupted, told below (cli/interrupts.py)
            code = app(args=argv, prog_name="proctor", standalone_mode=False)
    except SystemExit as exc:
        if is_closed_pipe(exc):  # typer's own handling of a closed pipe: a bare exit 1
            sys.exit(closed_pipe_exit())
        raise
    except BrokenPipeError:
        sys.exit(closed_pipe_exit())
    except RunInterrupted as exc:
        shown = interrupted(exc, sys.argv[1:] if argv is None else argv)
        err_console.print(f"[bold yellow]{escape(shown)}[/]", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except ProctorError as exc:
        _print_error(str(exc))
        sys.exit(2)
    except click_errors as exc:  # usage errors: unknown option, bad value (click's own message names it)
        exc.show()
        sys.exit(exc.exit_code)
    except aborts + (KeyboardInterrupt,):
        err_console.print("aborted")
        sys.exit(130)
    except OSError as exc:
        if exc.errno not in DISK_ERRORS:  # not the disk: a bug, reported as the branch below does
            _internal_error(exc)
        # a full or read-only disk outside a run (a run says more: runs/unwritable.py)
        _print_error(f"cannot write {exc.filename or 'to the disk'}: {exc.strerror or exc}")
        sys.exit(2)
    except Exception as exc:  # a bug, not a user error: one line, the traceback on request
        _internal_error(exc)
    if isinstance(code, int) and code:
        sys.exit(code)


def _internal_error(exc: Exception) -> NoReturn:
    """A bug, not a user error: one line, the traceback on request (``PROCTOR_TRACEBACK=1``)."""
    import os

    if os.environ.get("PROCTOR_TRACEBACK"):
        raise exc
    _print_error(f"internal error: {type(exc).__name__}: {exc} (set PROCTOR_TRACEBACK=1 to see where)")
    sys.exit(3)


if __name__ == "__main__":
    main()
