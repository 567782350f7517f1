"""``proctor view``: the run folders under a folder in a local browser page, or as one static file."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from proctor.cli.app import app
from proctor.cli.display import console
from proctor.core.errors import RunInterrupted


@app.command()
def view(
    folder: Path = typer.Argument(
        Path("runs"), help="A folder of run folders (searched recursively), or one run folder."
    ),
    port: int = typer.Option(8000, "--port", "-p", min=0, max=65535, help="Port on 127.0.0.1 (0: any free port)."),
    export: Optional[Path] = typer.Option(
        None, "--export", "-o", help="Write the viewer as one self-contained HTML file instead of serving it."
    ),
) -> None:
    """Browse runs offline: the runs as a table, a run's samples (sort, filter, link), runs side by side."""
    if export is not None:
        from proctor.runs.viewer import export_folder

        console.print(f"viewer: {export_folder(folder, export)}")
        return
    from proctor.runs.viewer import find_runs, serve

    runs = find_runs(folder)
    server = serve(folder, port)
    host, bound = server.server_address[:2]
    import signal

    try:  # from the line saying Ctrl-C stops it on, Ctrl-C (or `kill`, as Ctrl-C does) is a clean stop
        signal.signal(signal.SIGTERM, _interrupt)
        console.print(
            f"proctor view: {len(runs)} run(s) under {folder} at http://{str(host)}:{bound}/ (Ctrl-C stops)",
            soft_wrap=True,
        )
        server.serve_forever(poll_interval=0.2)
    except (KeyboardInterrupt, RunInterrupted):  # Ctrl-C (cli/interrupts.py) or `kill`: the way to stop it
        pass
    finally:
        server.server_close()
    console.print("proctor view: stopped")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
