"""``proctor ls`` and ``proctor validate``: the tasks found under paths, and their data and prompts checked."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from proctor.cli.app import app
from proctor.cli.display import console, err_console
from proctor.cli.options import dialect_options, load_plugins, variables_from, with_dialect_options
from proctor.cli.run import DATA_PATH_HELP, PLUGIN_HELP
from proctor.core.dialect import OptionContext
from proctor.core.errors import ProctorError
from proctor.core.registry import registry


def _catalogue(paths: List[Path], options: dict) -> bool:
    """``ls`` of names a dialect lists from a catalogue (e.g. ``lm_eval:mmlu*``); False when none asks for one."""
    given = [str(p) for p in paths]
    for dialect in registry().ordered_dialects():
        rows = dialect.catalogue_rows(given, options)
        if rows is None:
            continue
        table = Table()
        table.add_column("name", overflow="fold")
        table.add_column("output type", overflow="fold")
        table.add_column("defined at", overflow="fold")
        for row in rows:
            table.add_row(*row)
        console.print(table)
        console.print(f"{len(rows)} catalogue entr{'y' if len(rows) == 1 else 'ies'}")
        return True
    return False


@app.command("ls")
@with_dialect_options("ls")
def list_tasks(
    paths: List[Path] = typer.Argument(..., metavar="PATHS", help="Task files or folders, or a catalogue query such as 'lm_eval:mmlu*'."),
    trust_task_code: bool = typer.Option(False, "--trust-task-code", help="Accepted as for run (listing runs no task code)."),
    dialect_values: Optional[dict] = None,
) -> None:
    """List the tasks found under the given paths (dialect flags as for run); 'lm_eval:' or a glob such as 'lm_eval:mmlu*' lists lm-eval's catalogue (tasks, groups, tags) by name."""
    from proctor.api import load_tasks

    options = dialect_options(dialect_values or {}, OptionContext(command="ls"), trust_task_code)
    if _catalogue(paths, options):
        return
    table = Table()
    for column in ("task", "kind", "dialect", "version", "defined at"):  # folded where narrow, never cut
        table.add_column(column, overflow="fold")
    found = load_tasks(paths, options=options)
    for task in found:
        table.add_row(task.name, task.spec.kind, task.dialect, task.spec.version, task.where)
    console.print(table)
    console.print(f"{len(found)} task(s)")


@app.command()
@with_dialect_options("validate")
def validate(
    paths: List[Path] = typer.Argument(..., metavar="PATHS", help="Task files or folders."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", metavar="DIR", help="Sets ${PROCTOR_DATA} in task files."),
    var: Optional[List[str]] = typer.Option(None, "--var", metavar="KEY=VALUE", help="Fills ${KEY} in task files (repeatable)."),
    data_path: Optional[Path] = typer.Option(None, "--data-path", metavar="DIR", help=DATA_PATH_HELP),
    plugin: Optional[List[Path]] = typer.Option(None, "--plugin", metavar="FILE", help=PLUGIN_HELP),
    trust_task_code: bool = typer.Option(False, "--trust-task-code", help="Run Python code that ships with task files, as for run."),
    dialect_values: Optional[dict] = None,
) -> None:
    """Check task files, their data and every prompt, without running a model."""
    from rich.markup import escape

    from proctor.api import load_tasks
    from proctor.engine.prepare import prepare_task

    load_plugins(plugin)
    variables = variables_from(data_dir, var)
    if data_path is not None:
        variables["DATA_PATH"] = str(data_path.resolve())
    options = dialect_options(dialect_values or {}, OptionContext(command="validate"), trust_task_code)
    # every file's problems are reported, not only the first one's
    problems: list[dict] = []
    found = []
    for path in paths:
        try:
            found += load_tasks([path], options=options, problems=problems)
        except ProctorError as exc:
            problems.append({"file": str(path), "error": str(exc)})
    valid = 0
    for task in found:
        try:
            prepared = prepare_task(task, variables)
        except ProctorError as exc:
            problems.append({"task": task.name, "file": str(task.file), "error": str(exc)})
            continue
        valid += 1
        console.print(f"[green]ok[/green] {task.name}: {len(prepared.samples)} samples ({task.where})")
    for problem in problems:
        err_console.print(f"[bold red]error:[/bold red] {escape(problem['error'])}", highlight=False, soft_wrap=True)
    console.print(f"{valid} task(s) valid")
    if problems:
        raise ProctorError(f"{len(problems)} file(s) or task(s) have problems (above)")
