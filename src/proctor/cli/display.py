"""What the ``proctor`` command shows: the results tables (progress: ``cli/progress.py``)."""

from __future__ import annotations

import os
import sys
from typing import Optional

from rich.console import Console
from rich.table import Table

# Logs and pipes get the full table instead of Rich's 80-column default, unless COLUMNS says otherwise.
console = Console() if sys.stdout.isatty() or os.environ.get("COLUMNS") else Console(width=240)
err_console = Console(stderr=True)


def fmt_value(value: Optional[float]) -> str:
    if value is None:
        return "—"
    if value != value:  # NaN
        return "nan"
    return f"{value:.4f}"


def formulation(task: dict) -> str:
    """How a multiple-choice task was scored: by log-likelihood, or by a lettered reply (with its unparsed share)."""
    mc_format = task.get("mc_format")
    if mc_format == "generate":
        unparsed = task.get("unparsed")
        detail = f" ({unparsed['count']}/{unparsed['n']} unparsed, {unparsed['rate']:.0%})" if unparsed else ""
        return "lettered generation" + detail
    return "log-likelihood" if mc_format == "loglikelihood" else ""


def print_warnings(results: dict) -> None:
    for warning in results.get("warnings", []):
        err_console.print(f"[bold yellow]warning:[/bold yellow] {warning}", highlight=False, soft_wrap=True)


def print_results(results: dict) -> None:
    table = Table(title=f"proctor · {results['model'].get('model', '?')}")
    for column in ("task", "version", "n", "scoring", "metric", "value", "± stderr"):
        table.add_column(column, justify="right" if column in ("n", "value", "± stderr") else "left")
    for name, task in results["tasks"].items():
        first = True
        for metric, entry in task["metrics"].items():
            table.add_row(
                name if first else "",
                task["version"] if first else "",
                str(task["n_samples"]) if first else "",
                formulation(task) if first else "",
                metric,
                fmt_value(entry["value"]) + (f" ({entry['n_unscored']} unscored)" if entry.get("n_unscored") else ""),
                fmt_value(entry["stderr"]),
            )
            first = False
    for name, group in results.get("groups", {}).items():
        first = True
        for metric, entry in group["metrics"].items():
            table.add_row(f"[bold]{name}[/bold] (group)" if first else "", "", str(group["n_samples"]) if first else "", "", metric, fmt_value(entry["value"]), fmt_value(entry["stderr"]))
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
            roll.add_row(levels[min(depth, len(levels) - 1)], "  " * depth + name + (f" ({entry['aggregation'].upper()})" if entry.get("aggregation") else ""),
                         fmt_value(entry.get("value")), fmt_value(entry.get("stderr")))
        console.print(roll)
        for depth, name, entry in flatten(hierarchy):
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
                values = ", ".join(f"{m} = {fmt_value(e['value'])}" for m, e in entry["metrics"].items())
                console.print(f"    {part} ({entry['n_samples']}): {values}")
            for metric, stat in stats.items():
                console.print(
                    f"  {metric}: max = {fmt_value(stat['max'])}, median = {fmt_value(stat['median'])}, average = {fmt_value(stat['average'])}"
                )
