"""The ``proctor`` command: run, ls, validate."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from proctor.errors import ProctorError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Evaluate language models on tasks you define.")
console = Console()
err_console = Console(stderr=True)


def _variables(data_dir: Optional[Path], var: Optional[List[str]]) -> dict[str, str]:
    variables: dict[str, str] = {}
    if data_dir is not None:
        variables["PROCTOR_DATA"] = str(data_dir.resolve())
    for item in var or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"--var takes KEY=VALUE, got '{item}'")
        variables[key] = value
    return variables


def _batch_size(value: str) -> int | str:
    if value == "auto":
        return value
    try:
        size = int(value)
    except ValueError:
        raise typer.BadParameter("--batch-size takes a positive integer or 'auto'") from None
    if size < 1:
        raise typer.BadParameter("--batch-size takes a positive integer or 'auto'")
    return size


def _fmt(value: Optional[float]) -> str:
    if value is None:
        return "—"
    if value != value:  # NaN
        return "nan"
    return f"{value:.4f}"


def print_results(results: dict) -> None:
    table = Table(title=f"proctor · {results['model'].get('model', '?')}")
    for column in ("task", "version", "n", "metric", "value", "± stderr"):
        table.add_column(column, justify="right" if column in ("n", "value", "± stderr") else "left")
    for name, task in results["tasks"].items():
        first = True
        for metric, entry in task["metrics"].items():
            table.add_row(
                name if first else "",
                task["version"] if first else "",
                str(task["n_samples"]) if first else "",
                metric,
                _fmt(entry["value"]),
                _fmt(entry["stderr"]),
            )
            first = False
    for name, group in results.get("groups", {}).items():
        first = True
        for metric, entry in group["metrics"].items():
            table.add_row(f"[bold]{name}[/bold] (group)" if first else "", "", str(group["n_samples"]) if first else "", metric, _fmt(entry["value"]), _fmt(entry["stderr"]))
            first = False
    console.print(table)


@app.command()
def run(
    paths: List[Path] = typer.Argument(..., help="Task files or folders (searched recursively), or Python use case files (.py)."),
    model: str = typer.Option("smollm2", "--model", "-m", help="'smollm2' (embedded default), a local HF folder, or hf:<hub id>."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Run folder (default: a new folder under runs/)."),
    tasks: Optional[List[str]] = typer.Option(None, "--tasks", "-t", help="Only tasks whose name matches this glob (repeatable)."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", min=1, help="At most this many samples per task."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Local data root: sets ${PROCTOR_DATA} in task files."),
    var: Optional[List[str]] = typer.Option(None, "--var", help="KEY=VALUE for ${KEY} in task files (repeatable)."),
    dtype: str = typer.Option("float32", help="float32, bfloat16, float16 or auto."),
    device: str = typer.Option("cpu", help="cpu, cuda, cuda:N or auto."),
    batch_size: str = typer.Option("8", "--batch-size", "-b", help="Sequences per forward pass, or 'auto'."),
    max_length: Optional[int] = typer.Option(None, help="Context length limit (default: the model's)."),
    chat_template: str = typer.Option("auto", help="auto (as each task says), on (all tasks), off (none)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display."),
) -> None:
    """Evaluate a model on tasks and write a run folder."""
    from proctor.api import evaluate

    if chat_template not in ("auto", "on", "off"):
        raise typer.BadParameter("--chat-template takes auto, on or off")
    chat = {"auto": None, "on": True, "off": False}[chat_template]
    options = {"dtype": dtype, "device": device, "batch_size": _batch_size(batch_size)}
    if max_length:
        options["max_length"] = max_length
    if paths and all(p.suffix == ".py" for p in paths):  # Python use case files (proctor.usecases.runfile)
        from proctor.usecases.runfile import run_use_case_files

        run_dir, results = run_use_case_files(
            paths, model, output_dir=output, limit=limit, model_options=options, command=sys.argv
        )
        print_results(results)
        console.print(f"run folder: {run_dir}")
        return
    if any(p.suffix == ".py" for p in paths):
        raise typer.BadParameter("give either Python use case files or task files/folders, not both")
    with _progress(quiet) as hook:
        result = evaluate(
            paths,
            model,
            output_dir=output,
            select=tasks,
            limit=limit,
            variables=_variables(data_dir, var),
            chat=chat,
            model_options=options,
            progress=hook,
            command=sys.argv,
        )
    print_results(result.results)
    console.print(f"run folder: {result.run_dir}")


class _progress:
    """A rich progress bar per task, or nothing in quiet mode."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.bars: dict[str, int] = {}

    def __enter__(self):
        if self.quiet:
            return None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
            console=err_console, transient=False,
        )
        self.progress.start()
        return self.hook

    def hook(self, name: str, done: int, total: int) -> None:
        if name not in self.bars:
            self.bars[name] = self.progress.add_task(name, total=total)
        self.progress.update(self.bars[name], completed=done, total=total)

    def __exit__(self, *exc) -> None:
        if not self.quiet:
            self.progress.stop()


@app.command("ls")
def list_tasks(paths: List[Path] = typer.Argument(..., help="Task files or folders.")) -> None:
    """List the tasks found under the given paths."""
    from proctor.api import load_tasks

    table = Table()
    for column in ("task", "kind", "dialect", "version", "defined at"):
        table.add_column(column)
    found = load_tasks(paths)
    for task in found:
        table.add_row(task.name, task.spec.kind, task.dialect, task.spec.version, task.where)
    console.print(table)
    console.print(f"{len(found)} task(s)")


@app.command()
def validate(
    paths: List[Path] = typer.Argument(..., help="Task files or folders."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Sets ${PROCTOR_DATA} in task files."),
    var: Optional[List[str]] = typer.Option(None, "--var", help="KEY=VALUE for ${KEY} (repeatable)."),
) -> None:
    """Check task files, their data and every prompt, without running a model."""
    from proctor.api import load_tasks
    from proctor.engine.prepare import prepare_task

    variables = _variables(data_dir, var)
    found = load_tasks(paths)
    for task in found:
        prepared = prepare_task(task, variables)
        console.print(f"[green]ok[/green] {task.name}: {len(prepared.samples)} samples ({task.where})")
    console.print(f"{len(found)} task(s) valid")


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        app(standalone_mode=False)
    except ProctorError as exc:
        from rich.markup import escape

        err_console.print(f"[bold red]error:[/bold red] {escape(str(exc))}", highlight=False)
        sys.exit(2)
    except typer.Abort:
        sys.exit(130)
    except Exception as exc:  # click usage errors carry their own exit codes
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
