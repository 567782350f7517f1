"""``proctor report``, ``compare`` and ``export``: reading run folders."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from proctor.cli.app import app
from proctor.cli.display import console, err_console, fmt_value


@app.command()
def report(
    run_dir: Path = typer.Argument(..., help="A run folder (holding results.json and samples.jsonl)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Where to write the page (default: RUN_DIR/report.html)."),
) -> None:
    """Write a self-contained report.html for a run: tables, charts, calibration, sample browser."""
    from proctor.runs.report import write_report

    console.print(f"report: {write_report(run_dir, output)}")


@app.command()
def compare(
    runs: List[Path] = typer.Argument(..., help="Run folders; the first is the baseline the others are compared with."),
    alpha: float = typer.Option(0.05, "--alpha", min=1e-6, max=0.5, help="Significance level (and 1 - confidence of the interval)."),
    resamples: int = typer.Option(2000, "--resamples", min=100, help="Paired bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    output: Path = typer.Option(Path("comparison.json"), "--output", "-o", help="JSON file with every number shown."),
) -> None:
    """Per-task differences between runs on shared samples, with paired tests."""
    from proctor.runs.compare import compare_runs
    from proctor.runs.results import write_json_atomic

    found = compare_runs(runs, alpha=alpha, n_boot=resamples, seed=seed)
    for pair in found["comparisons"]:
        table = Table(title=f"B = {pair['b']} vs A = {pair['a']} (B - A), alpha={alpha}")
        for column in ("task", "metric", "n", "A", "B", "B - A", f"{100 * (1 - alpha):g}% CI", "McNemar p", "sig."):
            left = column in ("task", "metric", "sig.")
            table.add_column(column, justify="left" if left else "right", overflow="fold", no_wrap=column == "sig.", min_width=3 if column == "sig." else None)
        for task, entry in pair["tasks"].items():
            first = True
            for metric, m in entry["metrics"].items():
                ci = m.get("ci")
                p = m.get("mcnemar", {}).get("p_value")
                table.add_row(
                    task if first else "", metric, str(m["n_shared"]), fmt_value(m["a"]), fmt_value(m["b"]),
                    fmt_value(m.get("diff")), f"[{fmt_value(ci[0])}, {fmt_value(ci[1])}]" if ci else "—",
                    fmt_value(p) if p is not None else "—", "[bold red]yes[/bold red]" if m["significant"] else "no",
                )
                first = False
        console.print(table)
        flagged = sum(m["significant"] for t in pair["tasks"].values() for m in t["metrics"].values())
        console.print(f"{flagged} significant difference(s) at alpha={alpha}")
        for task, entry in pair["tasks"].items():
            if entry.get("formulation_differs"):
                formats = entry["mc_format"]
                err_console.print(
                    f"[bold yellow]warning:[/bold yellow] {task}: scored by {formats['a']} in A but {formats['b']} in B; "
                    "the difference mixes the model with the formulation", highlight=False, soft_wrap=True,
                )
        for side in ("a", "b"):
            if pair[f"tasks_only_in_{side}"]:
                console.print(f"only in {pair[side]}: {', '.join(pair[f'tasks_only_in_{side}'])}")
    write_json_atomic(output, found)
    console.print(f"comparison: {output}")


@app.command()
def export(
    run_dirs: List[Path] = typer.Argument(..., help="Run folders."),
    fmt: List[str] = typer.Option(["lm-eval", "parquet"], "--format", "-f", "--to", help="lm-eval (lm_eval/<model>/results_<date>.json + samples_<task>_<date>.jsonl), parquet (samples.parquet), duckdb (every run into --database)."),
    database: Path = typer.Option(Path("proctor.duckdb"), "--database", help="duckdb: the database file runs are added to (tables samples, metrics)."),
) -> None:
    """Write runs' results in lm-evaluation-harness's layout, samples as parquet, or many runs into one DuckDB file."""
    from proctor.runs.run_exports import write_exports

    per_run = tuple(f for f in fmt if f != "duckdb")
    for run_dir in run_dirs:
        for path in write_exports(run_dir, per_run):
            console.print(f"wrote {path}")
    if "duckdb" in fmt:
        from proctor.runs.duckdb_export import export_duckdb

        console.print(f"wrote {export_duckdb(run_dirs, database)} ({len(run_dirs)} run(s))")
