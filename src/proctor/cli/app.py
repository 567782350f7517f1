"""The ``proctor`` Typer application; commands add themselves from their modules."""

from __future__ import annotations

import typer

from proctor.cli.display import console

# --install-completion / --show-completion: shell completion of commands, options and enumerated values
app = typer.Typer(add_completion=True, no_args_is_help=True, help="Evaluate language models on tasks you define.")


def _show_version(value: bool) -> None:
    if value:
        from proctor.core.version import __version__

        console.print(f"proctor {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(
        False, "--version", callback=_show_version, is_eager=True, help="Print proctor's version and exit."
    ),
) -> None:
    """Evaluate language models on tasks you define."""
