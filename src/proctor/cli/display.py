"""What the ``proctor`` command shows: the results tables (progress: ``cli/progress.py``)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from proctor.core.audit import Finding
from proctor.core.metric_names import is_count

if TYPE_CHECKING:  # the runs package is imported after a run, not at the command's start
    from proctor.runs.documents import ResultsDocument
    from proctor.scoring.aggregate import MetricEntry, TaskEntry

# Logs and pipes get the full table instead of Rich's 80-column default, unless COLUMNS says otherwise.
# sys.stdout is None where proctor started with it closed (cli/streams.py opens it on /dev/null)
console = (
    Console() if (sys.stdout is not None and sys.stdout.isatty()) or os.environ.get("COLUMNS") else Console(width=240)
)
err_console = Console(stderr=True)


def fmt_value(value: Optional[float], metric: str = "") -> str:
    if value is None:
        return "—"
    if value != value:  # NaN
        return "nan"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if metric and is_count(metric) and float(value).is_integer():  # a count stored as a float (4.0)
        return str(int(value))
    return f"{value:.4f}"


def formulation(task: TaskEntry) -> str:
    """How a multiple-choice task was scored: by log-likelihood, or by a lettered reply (with its unparsed share)."""
    mc_format = task.get("mc_format")
    if mc_format == "generate":
        unparsed = task.get("unparsed")
        detail = f" ({unparsed['count']}/{unparsed['n']} unparsed, {unparsed['rate']:.0%})" if unparsed else ""
        return "lettered generation" + detail
    return "log-likelihood" if mc_format == "loglikelihood" else ""


def print_warnings(results: ResultsDocument) -> None:
    """The run's warnings not already printed while it ran (each once on the console; all in results.json)."""
    from proctor.cli.console import SHOWN
    from proctor.runs.report_data import SKIP_STAGES  # after a run: nothing added to the command's start

    warnings = results.get("warnings", [])
    shown = sum(1 for warning in warnings if warning in SHOWN)
    for warning in warnings:
        if warning not in SHOWN:
            err_console.print(f"[bold yellow]warning:[/bold yellow] {escape(warning)}", highlight=False, soft_wrap=True)
    if shown:  # one line for those the run printed as it went: a reader who scrolled past them is told
        err_console.print(
            f"[bold yellow]warning:[/bold yellow] {shown} warning(s) printed above as the run went; results.json "
            "lists every warning under 'warnings'",
            highlight=False,
            soft_wrap=True,
        )
    for entry in results.get("skipped", []):
        err_console.print(
            f"[bold yellow]warning:[/bold yellow] {escape(_skip_name(entry))} "
            f"{SKIP_STAGES.get(entry.get('stage'), 'was skipped')}: "
            f"{escape(entry['error'])}",
            highlight=False,
            soft_wrap=True,
        )


def print_findings(task: str, findings: Sequence[Finding]) -> None:
    """``validate``: a task's audit findings, one line each (a silenced one says so, with its reason)."""
    for finding in findings:
        if finding.silenced is not None:
            console.print(
                f"  silenced {escape(finding.text())} (reason: {escape(finding.silenced)})",
                highlight=False,
                soft_wrap=True,
            )
        else:
            err_console.print(
                f"[bold yellow]warning:[/bold yellow] {escape(task)}: audit {escape(finding.text())}",
                highlight=False,
                soft_wrap=True,
            )


def print_skipped(skipped: Sequence[object]) -> None:
    err_console.print(
        f"[bold red]error:[/bold red] {len(skipped)} task(s) or file(s) did not run (listed above, and under "
        "'skipped' in results.json); the others' results are written. --skip-broken accepts this (exit 0).",
        highlight=False,
        soft_wrap=True,
    )


def _skip_name(entry: Mapping[str, object]) -> str:
    return f"task '{entry['task']}' ({entry['file']})" if entry.get("task") else str(entry["file"])


def epochs_note(task: TaskEntry) -> str:
    """How a score over several epochs was reduced per sample: pass@k, or the mean of the epochs."""
    epochs = task.get("epochs")
    if not epochs or int(epochs.get("n") or 1) <= 1:
        return ""
    reducer = str(epochs.get("reducer") or "mean")
    return f"{'mean' if reducer == 'mean' else reducer} over {epochs['n']} epochs"


def stderr_text(entry: MetricEntry) -> str:
    """The plain standard error, and beside it the cluster-robust one (CR1, over G clusters) when the task has one."""
    if "n_clusters" not in entry:
        return fmt_value(entry["stderr"])
    return (
        f"{fmt_value(entry['stderr'])} (clustered {fmt_value(entry.get('stderr_clustered'))}, G={entry['n_clusters']})"
    )


def print_results(results: ResultsDocument) -> None:
    # one line of notes under each task's name (version, how it was scored, epochs) instead of columns:
    # names are folded, never cut, and the table stays readable at 80 columns
    table = Table(title=f"proctor · {escape(str(results['model'].get('model', '?')))}")
    table.add_column("task", overflow="fold", ratio=3)
    table.add_column("n", justify="right", no_wrap=True)
    table.add_column("metric", overflow="fold", ratio=2)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("± stderr", justify="right", no_wrap=True)
    for name, task in results["tasks"].items():
        notes = " · ".join(x for x in (f"v{task['version']}", formulation(task), epochs_note(task)) if x)
        labels = [escape(name), f"[dim]{escape(notes)}[/dim]"]  # the task's name, then its notes a row below
        unscored = "(predict-only: not scored)" if results.get("predict_only") else ""
        rows = list(task["metrics"].items()) or [(unscored, None)]
        for i, (metric, entry) in enumerate(rows + [("", None)] * (len(labels) - len(rows))):
            table.add_row(
                labels[i] if i < len(labels) else "",
                str(task["n_samples"]) if i == 0 else "",
                escape(metric),
                ""
                if entry is None
                else fmt_value(entry["value"], metric)
                + (f" ({entry['n_unscored']} unscored)" if entry.get("n_unscored") else ""),
                "" if entry is None else stderr_text(entry),
            )
    from proctor.runs.report_data import SKIP_STAGES

    for entry in results.get("skipped", []):  # what did not run is part of the results, not only a log line
        table.add_row(
            escape(str(entry.get("task") or entry["file"])),
            "",
            f"[bold red]{SKIP_STAGES.get(entry.get('stage'), 'skipped')}[/bold red]",
            "—",
            "",
        )
    for name, group in results.get("groups", {}).items():
        first = True
        for metric, entry in group["metrics"].items():
            table.add_row(
                f"[bold]{escape(name)}[/bold] [dim](group)[/dim]" if first else "",
                str(group["n_samples"]) if first else "",
                escape(metric),
                fmt_value(entry["value"], metric),
                fmt_value(entry["stderr"]),
            )
            first = False
    console.print(table)
    if results.get("rollup"):
        from proctor.scoring.rollup import flatten

        hierarchy = results["rollup"]
        levels = ["overall"] + hierarchy.get("levels", [])
        roll = Table(title="score hierarchy (" + " > ".join(levels) + ")")
        for column in ("level", "name", "value", "± stderr"):
            roll.add_column(column, justify="right" if column in ("value", "± stderr") else "left")
        for depth, name, entry in flatten(hierarchy):
            roll.add_row(
                levels[min(depth, len(levels) - 1)],
                "  " * depth + name + (f" ({entry['aggregation'].upper()})" if entry.get("aggregation") else ""),
                fmt_value(entry.get("value")),
                fmt_value(entry.get("stderr")),
            )
        console.print(roll)
        for _depth, name, entry in flatten(hierarchy):
            for note in entry.get("notes") or []:
                console.print(f"  note ({name}): {note}")
    from proctor.core.registry import registry

    for name, task in results["tasks"].items():
        dialect = registry().dialect(str(task.get("dialect")))
        for key, parts in task.get("breakdown", {}).items():
            if len(parts) < 2 and not (dialect is not None and dialect.single_part_breakdowns):
                continue
            stats = task.get("breakdown_stats", {}).get(key, {})
            console.print(f"[bold]{name}[/bold] by {key}:")
            for part, entry in parts.items():
                values = ", ".join(f"{m} = {fmt_value(e['value'], m)}" for m, e in entry["metrics"].items())
                console.print(f"    {part} ({entry['n_samples']}): {values}")
            for metric, stat in stats.items():
                console.print(
                    f"  {metric}: max = {fmt_value(stat['max'])}, median = {fmt_value(stat['median'])}, "
                    f"average = {fmt_value(stat['average'])}"
                )
