"""``proctor run``'s flags for model replicas on Ray (the "Ray workers" panel of ``--help``), as Typer declares
them: how many replicas, which cluster, and what each replica needs and where it goes. ``cli/run.py`` names each
as its parameter's default (``worker_flags.WORKERS``); ``cli/options.check_worker_flags`` checks them together.
"""

from __future__ import annotations

import typer

WORKERS_PANEL = "Ray workers"  # ``proctor run --help``'s panel, after cli/run_flags.py's

WORKERS = typer.Option(
    1,
    "--workers",
    "-w",
    min=1,
    metavar="N",
    help="Model replicas on Ray (ray extra); the same numbers as 1.",
    rich_help_panel=WORKERS_PANEL,
)
RAY_ADDRESS = typer.Option(
    None,
    "--ray-address",
    metavar="HOST:PORT",
    help="Join a running Ray cluster (or 'auto') instead of starting a local one.",
    rich_help_panel=WORKERS_PANEL,
)
CPUS_PER_WORKER = typer.Option(
    1.0,
    "--cpus-per-worker",
    min=0.0,
    metavar="N",
    help="CPUs (and torch threads) per replica.",
    rich_help_panel=WORKERS_PANEL,
)
GPUS_PER_WORKER = typer.Option(
    0.0,
    "--gpus-per-worker",
    min=0.0,
    metavar="N",
    help="GPUs per replica; for vllm: its tensor-parallel size.",
    rich_help_panel=WORKERS_PANEL,
)
WORKER_RESOURCES = typer.Option(
    None,
    "--worker-resources",
    metavar="KEY=AMOUNT",
    help="A custom Ray resource each replica needs (repeatable).",
    rich_help_panel=WORKERS_PANEL,
)
WORKER_NODES = typer.Option(
    None,
    "--worker-node",
    metavar="IP",
    help="Node to place replicas on, round robin (repeatable).",
    rich_help_panel=WORKERS_PANEL,
)
