"""``proctor ls`` and ``proctor validate``: the tasks found under paths, and their data and prompts checked."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer
from rich.table import Table

from proctor.cli.app import app
from proctor.cli.display import console, err_console, print_findings
from proctor.cli.options import dialect_options, load_plugins, variables_from, with_dialect_options
from proctor.cli.run_flags import DATA_PATH_HELP, PLUGIN_HELP
from proctor.core.dialect import OptionContext
from proctor.core.dialect_options import DialectOptions
from proctor.core.errors import ProctorError
from proctor.core.registry import registry
from proctor.core.task import Task

if TYPE_CHECKING:
    from proctor.engine.prepare import PreparedTask


def _catalogue(paths: List[Path], options: DialectOptions) -> bool:
    """``ls`` of names a dialect lists from a catalogue (e.g. ``lm_eval:mmlu*``); False when none asks for one."""
    given = [str(p) for p in paths]
    for dialect in registry().ordered_dialects():
        rows = dialect.catalogue_rows(given, options.of(dialect))
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


# the help as one line: the command list shows a docstring's line breaks
@app.command(
    "ls",
    help="List the tasks found under the given paths (dialect flags as for run); 'lm_eval:' or a glob such as "
    "'lm_eval:mmlu*' lists lm-eval's catalogue (tasks, groups, tags) by name.",
)
@with_dialect_options("ls")
def list_tasks(
    paths: List[Path] = typer.Argument(
        ..., metavar="PATHS", help="Task files or folders, or a catalogue query such as 'lm_eval:mmlu*'."
    ),
    trust_task_code: bool = typer.Option(
        False, "--trust-task-code", help="Accepted as for run (listing runs no task code)."
    ),
    dialect_values: Optional[dict[str, object]] = None,
) -> None:
    from proctor.api import load_tasks

    options = dialect_options(dialect_values or {}, OptionContext(command="ls"), trust_task_code)
    if _catalogue(paths, options):
        return
    table = Table()
    table.add_column("task", no_wrap=True)  # a name stays whole (scripts grep for it); the others fold
    for column in ("kind", "dialect", "version", "needs", "defined at"):  # folded where narrow, never cut
        table.add_column(column, overflow="fold")
    found = load_tasks(paths, options=options)
    for task in found:
        table.add_row(task.name, task.spec.kind, task.dialect, task.spec.version, needs(task), task.where)
    console.print(table)
    console.print(f"{len(found)} task(s)")
    vision = [task.name for task in found if "images" in task.needs]
    if vision:
        console.print(
            f"{len(vision)} task(s) show images and need a vision-language model: --model hf-vision:<folder> "
            "(or a local image-text-to-text folder), or openai:<name> on a server that takes images; "
            "a text model is refused"
        )


def print_prompts(prepared: PreparedTask, count: int) -> None:
    """``validate --show N``: the first N prompts of a task (lm-eval's --write_out), as text or chat messages."""
    from rich.markup import escape

    for position, item in enumerate(prepared.samples[:count]):
        prompt = item.prompt
        console.rule(f"{prepared.task.name} sample {item.sample.id} ({position + 1} of {len(prepared.samples)})")
        if prompt.messages is None:
            console.print(escape(prompt.text or item.text or ""), highlight=False, soft_wrap=True)
        else:
            for role, content in prompt.messages:
                console.print(f"[bold]{role}:[/bold] {escape(content)}", highlight=False, soft_wrap=True)
        if item.choices:
            console.print("choices: " + escape(" | ".join(item.choices)), highlight=False, soft_wrap=True)


def needs(task: Task) -> str:
    """The ``needs`` cell of ``ls``: what the model must take besides text."""
    if "images" in task.needs:
        return "vision model"
    return ", ".join(f"{kind} model" for kind in task.needs) or "-"


def _unique_names(found: list[Task], problems: list[dict[str, str]]) -> list[Task]:
    """Tasks of different paths that share a name (run refuses them, as results are keyed by name): one problem each."""
    seen: dict[str, Task] = {}
    kept = []
    for task in found:
        other = seen.get(task.name)
        if other is None:
            seen[task.name] = task
            kept.append(task)
        elif not (other.file is not None and task.file is not None and other.file.resolve() == task.file.resolve()):
            problems.append(
                {
                    "task": task.name,
                    "file": str(task.file),
                    "error": f"{task.where}, field 'name': task name '{task.name}' is also defined at {other.where}",
                }
            )
    return kept


@app.command()
@with_dialect_options("validate")
def validate(
    paths: List[Path] = typer.Argument(..., metavar="PATHS", help="Task files or folders."),
    data_dir: Optional[Path] = typer.Option(
        None, "--data-dir", metavar="DIR", help="Sets ${PROCTOR_DATA} in task files."
    ),
    var: Optional[List[str]] = typer.Option(
        None, "--var", "-T", metavar="KEY=VALUE", help="Fills ${KEY} in task files (repeatable)."
    ),
    data_path: Optional[Path] = typer.Option(None, "--data-path", metavar="DIR", help=DATA_PATH_HELP),
    plugin: Optional[List[Path]] = typer.Option(None, "--plugin", metavar="FILE", help=PLUGIN_HELP),
    trust_task_code: bool = typer.Option(
        False, "--trust-task-code", help="Run Python code that ships with task files, as for run."
    ),
    show: int = typer.Option(
        0,
        "--show",
        "--write-out",
        min=0,
        metavar="N",
        help="Print each task's first N prompts as the model would get them (chat: the messages), without a model.",
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Every audit finding is an error, not a warning (as for run; docs/audit.md)."
    ),
    dialect_values: Optional[dict[str, object]] = None,
) -> None:
    """Check task files, their data and every prompt, without running a model; audit what would mislead."""
    from rich.markup import escape

    from proctor.api import load_tasks
    from proctor.audit.run_rules import GroupMembers
    from proctor.engine.prepare import prepare_task
    from proctor.scoring.metrics import DEFAULT_METRICS

    load_plugins(plugin)
    variables = variables_from(data_dir, var)
    if data_path is not None:
        if not data_path.expanduser().is_dir():  # else GLM tasks would read the YAML's folder instead, as run refuses
            raise typer.BadParameter(f"no such folder: {data_path}", param_hint="--data-path")
        variables["DATA_PATH"] = str(data_path.expanduser().resolve())
    options = dialect_options(dialect_values or {}, OptionContext(command="validate"), trust_task_code)
    # every file's problems are reported, not only the first one's
    problems: list[dict[str, str]] = []
    found = []
    for path in paths:
        before = len(problems)
        try:
            found += load_tasks([path], options=options, problems=problems)
        except ProctorError as exc:
            if len(problems) == before or "no task could be loaded" not in str(exc):
                problems.append({"file": str(path), "error": str(exc)})
    found = _unique_names(found, problems)
    valid = 0
    seen = GroupMembers.of(
        found, DEFAULT_METRICS
    )  # a group's tasks so far, by what they ask (the audit's task.duplicate, group.overlap)
    for task in found:
        try:
            prepared = prepare_task(task, variables, strict_audit=strict, seen_in_groups=seen)
        except ProctorError as exc:
            problems.append({"task": task.name, "file": str(task.file), "error": str(exc)})
            continue
        valid += 1
        console.print(f"[green]ok[/green] {task.name}: {len(prepared.samples)} samples ({task.where})")
        fallback = (prepared.data or {}).get("fallback")
        if fallback:  # a run records it in results.json's warnings; validate says it too
            warning = f"[yellow]warning:[/yellow] {task.name}: {escape(fallback)}"
            err_console.print(warning, highlight=False, soft_wrap=True)
        print_findings(task.name, prepared.findings)
        print_prompts(prepared, show)
    for problem in problems:
        err_console.print(f"[bold red]error:[/bold red] {escape(problem['error'])}", highlight=False, soft_wrap=True)
    console.print(f"{valid} task(s) valid")
    if problems:
        raise ProctorError(f"{len(problems)} file(s) or task(s) have problems (above)")
