"""The full suite over worker processes: ``pytest --full`` runs on pytest-xdist's workers (issue 48).

Most of the suite waits (fresh ``proctor`` processes importing torch, servers starting, a vLLM engine loading)
or runs single-threaded Python, so one process keeps two cores about half idle: measured, one process used 1.08
of this machine's 2 cores over the whole suite, and the ``tests/cli`` folder took 320 s in one process and 130 s
on two workers. ``tests/conftest.py`` names these hooks. What they do:

- ``--full`` without ``-n`` means ``-n auto --dist loadfile``: ``auto`` is one worker per core, at most
  ``MAX_WORKERS`` (each worker may hold a model, and torch in every worker already uses every core);
  ``loadfile`` keeps a test file on one worker, so its module fixtures (reference runs, servers) are built once.
- ``-n 0`` runs everything in this process, as before; ``-n N`` and ``--dist`` are pytest-xdist's own.
- In a worker, OpenMP threads wait passively (``OMP_WAIT_POLICY=PASSIVE``, set before torch loads and inherited
  by the processes tests start): torch's default spinning made two workers' model tests slower than one
  process's (tests/models: 671 s on two workers against 590 s in one); passive waiting gave 281 s against
  286 s on the heaviest files. How threads wait changes no number.
"""

from __future__ import annotations

import os

import pytest

MAX_WORKERS = 4


def _has_xdist(config: pytest.Config) -> bool:
    return config.pluginmanager.hasplugin("xdist")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """``--full`` spreads the suite over workers, unless the command line says how (``-n``, ``--pdb``)."""
    if not config.getoption("--full", False) or not _has_xdist(config) or hasattr(config, "workerinput"):
        return  # a worker keeps the one process xdist gave it
    if config.option.numprocesses is None and not config.getoption("usepdb", False):
        config.option.numprocesses = "auto"
        if config.option.dist == "no":
            config.option.dist = "loadfile"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    # the CPUs this process may run on: in a container limited to fewer CPUs than its host, cpu_count() counts
    # the host's (sched_getaffinity is Linux's; elsewhere cpu_count is what there is)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cpus, MAX_WORKERS))


def configure_worker(config: pytest.Config) -> None:
    """Called from ``pytest_configure``: in an xdist worker, OpenMP waits passively (the docstring says why)."""
    if hasattr(config, "workerinput"):
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
