"""``proctor report``, ``compare``, ``power`` and ``export``: reading run folders."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from proctor.cli.app import app
from proctor.cli.display import console, err_console, fmt_value
from proctor.cli.options import ExportFormat

if TYPE_CHECKING:  # the commands import what they run when they run (a fast start)
    from proctor.runs.compare import PairComparison


@app.command()
def report(
    run_dir: Path = typer.Argument(
        ..., metavar="RUN_DIR", help="A run folder (holding results.json and samples.jsonl)."
    ),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", metavar="FILE", help="Where to write the page (default: RUN_DIR/report.html)."
    ),
) -> None:
    """Write a self-contained report.html for a run: tables, charts, calibration, sample browser."""
    from proctor.runs.report import write_report

    console.print(f"report: {write_report(run_dir, output)}")


@app.command()
def compare(
    runs: List[Path] = typer.Argument(
        ..., metavar="RUNS", help="Run folders; the first is the baseline the others are compared with."
    ),
    alpha: float = typer.Option(
        0.05,
        "--alpha",
        min=1e-6,
        max=0.5,
        metavar="ALPHA",
        help="Significance level (and 1 - confidence of the interval).",
    ),
    resamples: int = typer.Option(2000, "--resamples", min=100, metavar="N", help="Paired bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", min=0, metavar="S", help="Bootstrap seed (a count: 0, 1, ...)."),
    output: Optional[Path] = typer.Option(
        None,
        "--output",
        "-o",
        metavar="FILE",
        help="JSON file with every number shown (default: in RUN_A, comparison_vs_<RUN_B's name>.json).",
    ),
) -> None:
    """Per-task differences between runs on the samples they share, with paired tests."""
    from proctor.runs.compare import compare_runs, default_output
    from proctor.runs.results import json_text, write_output

    found = compare_runs(runs, alpha=alpha, n_boot=resamples, seed=seed)
    for pair in found["comparisons"]:
        print_comparison(pair, alpha)
    target = write_output(output if output is not None else default_output(runs), json_text(found))
    console.print(f"comparison: {target}")


def print_comparison(pair: PairComparison, alpha: float) -> None:
    """One comparison: per task its sample counts, per metric both means over the shared samples, B - A, CI, test."""
    from rich import box

    console.print(f"A = {pair['a']} ({pair.get('model_a')})\nB = {pair['b']} ({pair.get('model_b')})", highlight=False)
    print_settings(pair)
    table = Table(title=f"B - A on the samples both runs share, alpha={alpha}", box=box.SIMPLE_HEAD, pad_edge=False)
    longest = max((len(m) + 2 for t in pair["tasks"].values() for m in t["metrics"]), default=10)
    table.add_column("task / metric", overflow="fold", min_width=min(longest, 18))
    for column in ("A", "B", "B - A", f"{100 * (1 - alpha):g}% CI", "p", "sig."):
        table.add_column(column, justify="left" if column == "sig." else "right", no_wrap=True)
    for task, entry in pair["tasks"].items():
        # the task's row: each run's sample count, and how many both have (the n of every mean below)
        table.add_row(
            f"[bold]{escape(task)}[/bold]", f"n={entry['n_a']}", f"n={entry['n_b']}", "", f"{entry['n_shared']} shared"
        )
        for metric, m in entry["metrics"].items():
            ci = m.get("ci")
            p = (m.get("mcnemar") or {}).get("p_value")
            n_note = (
                f" (n {m['n_shared']})" if 0 < m["n_shared"] != entry["n_shared"] else ""
            )  # 0: no per-sample values
            table.add_row(
                f"  {escape(metric)}{n_note}",
                fmt_value(m["a"]),
                fmt_value(m["b"]),
                fmt_value(m.get("diff")),
                f"{ci[0]:.3f}, {ci[1]:.3f}" if ci else "—",  # JSON has every digit
                fmt_value(p) if p is not None else ("boot." if m.get("test") == "bootstrap" else "—"),
                "[bold red]yes[/bold red]" if m["significant"] else ("no" if m.get("test") else "—"),
            )
    console.print(table)
    flagged = sum(m["significant"] for t in pair["tasks"].values() for m in t["metrics"].values())
    console.print(
        f"{flagged} significant difference(s) at alpha={alpha} (p: McNemar's exact test for 0/1 metrics; "
        "boot.: the bootstrap interval decides)",
        highlight=False,
    )
    print_paired(pair, alpha)
    for caveat in pair.get("warnings") or []:  # also in the JSON: each comparison's "warnings"
        err_console.print(f"[bold yellow]warning:[/bold yellow] {escape(caveat)}", highlight=False, soft_wrap=True)
    for task, entry in pair["tasks"].items():
        if entry.get("formulation_differs"):
            formats = entry["mc_format"]
            err_console.print(
                f"[bold yellow]warning:[/bold yellow] {task}: scored by {formats['a']} in A but {formats['b']} in B; "
                "the difference mixes the model with the formulation",
                highlight=False,
                soft_wrap=True,
            )
    for side in ("a", "b"):
        if pair[f"tasks_only_in_{side}"]:
            console.print(
                f"only in {pair[side]}: {', '.join(pair[f'tasks_only_in_{side}'])}", highlight=False, soft_wrap=True
            )


def print_paired(pair: PairComparison, alpha: float) -> None:
    """The CLT view of each difference, a table of its own (the first stays readable at 80 columns): the standard
    error of the per-sample differences (clustered when the samples carry one), its normal interval, and the
    minimum detectable effect at 80% power and alpha 0.05 for the shared n."""
    from rich import box

    table = Table(title="B - A by the CLT: paired standard error and power", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("task / metric", overflow="fold", min_width=12)
    for column in ("n", "SE", f"{100 * (1 - alpha):g}% CI", "MDE (80%)"):
        table.add_column(column, justify="right", no_wrap=True)
    shown = False
    for task, entry in pair["tasks"].items():
        for metric, m in entry["metrics"].items():
            paired = m.get("paired")
            if not paired or paired.get("stderr") is None:
                continue
            shown = True
            ci = paired["ci"]
            clustered = f" (clustered, G={paired['n_clusters']})" if "n_clusters" in paired else ""
            table.add_row(
                f"{escape(task)} / {escape(metric)}{clustered}",
                str(paired["n"]),
                fmt_value(paired["stderr"]),
                f"{ci[0]:.3f}, {ci[1]:.3f}",
                fmt_value(paired["mde"]),
            )
    if shown:
        console.print(table)


@app.command()
def power(
    pilot: Path = typer.Argument(
        ..., metavar="PILOT", help="A pilot run folder (its per-sample scores give the spread)."
    ),
    other: Optional[Path] = typer.Argument(
        None,
        metavar="[OTHER]",
        help="A pilot run of the other model on the same samples: the spread of the paired differences is measured.",
    ),
    effect: float = typer.Option(
        ..., "--effect", "-d", metavar="D", help="The difference to detect, in the metric's units (e.g. 0.02)."
    ),
    alpha: float = typer.Option(0.05, "--alpha", min=1e-6, max=0.5, metavar="ALPHA", help="Significance level."),
    power_: float = typer.Option(0.8, "--power", min=0.5, max=0.999, metavar="P", help="The chance to detect it."),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", metavar="FILE", help="Also write every number as JSON to FILE."
    ),
) -> None:
    """How many samples a paired comparison needs to detect a difference of D, from pilot runs' variance."""
    from proctor.runs.power import power_analysis
    from proctor.runs.results import json_text, write_output

    found = power_analysis(pilot, effect, other=other, alpha=alpha, power=power_)
    table = Table(
        title=f"samples needed to detect a difference of {effect:g} (power {power_:g}, alpha {alpha:g})",
        pad_edge=False,
    )
    for column in ("task / metric", "pilot n", "sd of a difference", "design effect", "samples needed", "MDE at n"):
        table.add_column(column, justify="left" if column == "task / metric" else "right")
    for task, metrics in found["tasks"].items():
        for metric, m in metrics.items():
            table.add_row(
                f"{escape(task)} / {escape(metric)}",
                str(m["n"]),
                fmt_value(m["sd_difference"]),
                fmt_value(m["design_effect"]),
                str(m["samples_needed"]),
                fmt_value(m["mde_at_n"]),
            )
    console.print(table)
    basis = (
        "the paired differences between the two pilots"
        if other is not None
        else "one pilot: a difference of two uncorrelated scores with its spread (sqrt(2) x sd)"
    )
    console.print(f"spread from {basis}", highlight=False, soft_wrap=True)
    for caveat in found["warnings"]:  # also in --output's JSON, under "warnings"
        err_console.print(f"[bold yellow]warning:[/bold yellow] {escape(caveat)}", highlight=False, soft_wrap=True)
    if output is not None:
        console.print(f"power: {write_output(output, json_text(found))}")


def print_settings(pair: PairComparison) -> None:
    """Every setting of a shared task that differs between A and B, with both values; what was not recorded."""
    from proctor.runs.task_settings import CONTENT, shown, shown_difference

    differ = pair.get("settings_differ") or []
    if differ:
        console.print(
            f"[bold yellow]Not comparable as they stand:[/bold yellow] {len(differ)} setting(s) differ between A "
            "and B, so the differences below may come from them as much as from the model.\nSettings that differ:",
            highlight=False,
        )
        for d in differ:
            console.print(
                f"  {escape(d['task'])}: {d['setting']}: {escape(shown_difference(d['a'], d['b']))}"
                + (
                    " (the hash of its spec, data and prompts: the task file or its data changed)"
                    * (d["setting"] == CONTENT)
                ),
                highlight=False,
            )
    info = list({(d["setting"], shown(d["a"]), shown(d["b"])): d for d in pair.get("settings_info") or []}.values())
    if info:  # told, but not as a reason: the backend declares these unable to change a request or an answer
        console.print(
            "Differ, but change no request and no answer (information): "
            + "; ".join(f"{d['setting']}: A {shown(d['a'])}, B {shown(d['b'])}" for d in info[:6])
            + (f"; and {len(info) - 6} more" if len(info) > 6 else ""),
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    for side in ("a", "b"):
        missing = [u for u in pair.get("settings_unknown") or [] if side in u["unknown_in"]]
        if missing:
            names = list(dict.fromkeys(u["setting"] for u in missing))
            tasks = list(dict.fromkeys(u["task"] for u in missing))
            console.print(
                f"[yellow]Not recorded[/yellow] in {side.upper()} ({escape(pair[side])}, written by an earlier "
                f"proctor), so not compared: {', '.join(names)} (task(s): {escape(', '.join(tasks))})",
                highlight=False,
            )


@app.command()
def export(
    run_dirs: List[Path] = typer.Argument(..., metavar="RUN_DIR", help="Run folders."),
    fmt: List[ExportFormat] = typer.Option(
        [ExportFormat.lm_eval, ExportFormat.parquet],
        "--format",
        "--to",
        "-f",
        metavar="[lm-eval|parquet|duckdb]",
        help="lm-eval: lm-eval's results and samples files under RUN_DIR/lm_eval/MODEL/; parquet: "
        "RUN_DIR/samples.parquet; duckdb: every run into --database (repeatable).",
    ),
    database: Optional[Path] = typer.Option(
        None,
        "--database",
        metavar="FILE",
        help="duckdb: the database file runs are added to (tables samples, metrics; default: proctor.duckdb).",
    ),
) -> None:
    """Write runs' results in lm-evaluation-harness's layout, samples as parquet, or many runs into one DuckDB file."""
    from proctor.runs.run_exports import write_exports

    formats = [f.value for f in fmt]
    if database is not None and "duckdb" not in formats:  # it would be ignored: no database written, exit 0
        raise typer.BadParameter("applies to --to duckdb only; add --to duckdb", param_hint="--database")
    per_run = tuple(f for f in formats if f != "duckdb")
    for run_dir in run_dirs:
        for path in write_exports(run_dir, per_run):
            console.print(f"wrote {path}")
    if "duckdb" in formats:
        from proctor.runs.duckdb_export import export_duckdb

        written = export_duckdb(run_dirs, database if database is not None else Path("proctor.duckdb"))
        console.print(f"wrote {written} ({len(run_dirs)} run(s))")


@app.command("log")
def log_run(
    run_dir: Path = typer.Argument(..., metavar="RUN_DIR", help="A finished run folder (results.json, samples.jsonl)."),
    to: List[str] = typer.Option(
        ...,
        "--to",
        metavar="TRACKER[:KEY=VALUE,...]",
        help="wandb (offline; options project, entity, name, group, job_type, tags, notes, dir) or mlflow (a local "
        "file store; options tracking_uri, experiment, name); repeatable. docs/trackers.md.",
    ),
) -> None:
    """Log a finished run to experiment trackers: metrics with standard errors, task configurations, environment,
    and a samples table."""
    from proctor.cli.trackers import log_each, tracker_targets
    from proctor.runs.trackers import read_contents

    targets = tracker_targets(to, "--to")
    if not log_each(read_contents(run_dir), targets):  # each failure printed, naming its tracker
        raise typer.Exit(1)
