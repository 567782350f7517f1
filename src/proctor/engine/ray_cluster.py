"""Ray itself for data-parallel evaluation: the package (``require_ray``, with an install hint), and
starting a private cluster on 127.0.0.1 or joining a running one (``connect``), with the workers' Python
path and, for a private cluster, Ray's single-machine mode switched on while it runs.

Kept apart from ``distributed.py`` (the replicas seen as one model) because it is the cluster, not the
work on it: the run checks for Ray here before anything loads, and nothing here knows about models.
"""

from __future__ import annotations

import logging
import math
import os
import socket
from pathlib import Path
from types import ModuleType
from typing import Callable

from proctor.core.errors import MissingDependencyError, ProctorError


def _loopback_only(ray: ModuleType) -> Callable[[], None]:
    """Keep a private single-node cluster on 127.0.0.1; returns what undoes it (after shutdown).

    In cluster mode Ray replaces a loopback node address with the machine's network address and
    listens on every interface. Its single-machine mode (the one it uses on macOS and Windows)
    keeps every service on loopback; child processes read the same switch from the environment.
    Undone when the cluster is gone, so that a later run in this process (or a `ray start` it
    spawns) can join a multi-node cluster.
    """
    constants = ray._private.ray_constants
    saved_env, saved_flag = os.environ.get(_CLUSTER_SWITCH), constants.ENABLE_RAY_CLUSTER
    os.environ[_CLUSTER_SWITCH] = "0"
    constants.ENABLE_RAY_CLUSTER = False

    def restore() -> None:
        if saved_env is None:
            os.environ.pop(_CLUSTER_SWITCH, None)
        else:
            os.environ[_CLUSTER_SWITCH] = saved_env
        constants.ENABLE_RAY_CLUSTER = saved_flag

    return restore


_CLUSTER_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def require_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise MissingDependencyError(
            "ray", "ray", "--workers / --ray-address (data-parallel evaluation on Ray)"
        ) from None
    module: ModuleType = ray  # not followed by mypy (pyproject.toml): typed here
    return module


def _source_root() -> str | None:
    """The folder holding this ``proctor`` package, for workers' PYTHONPATH (a source checkout)."""
    root = Path(__file__).resolve().parents[2]
    return None if "site-packages" in root.parts else str(root)


def connect(ray: ModuleType, address: str | None, workers: int, cpus_per_worker: float) -> Callable[[], None] | None:
    """Start a private cluster for this run (``address`` None) or join the one at ``address``; the workers get
    this checkout of proctor on their Python path. Returns what undoes the private cluster's loopback switch
    (after shutdown), or None when joining."""
    paths = [p for p in (_source_root(), os.environ.get("PYTHONPATH")) if p]
    kwargs: dict[str, object] = {"logging_level": logging.WARNING}
    if paths:
        kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": os.pathsep.join(paths)}}
    if address is None:  # a private cluster for this run: "local" never joins a running one
        restore = _loopback_only(ray)
        cpus = max(os.cpu_count() or 1, math.ceil(workers * cpus_per_worker))
        try:
            ray.init(address="local", num_cpus=cpus, include_dashboard=False, _node_ip_address="127.0.0.1", **kwargs)
        except BaseException:
            restore()
            raise
        return restore
    check_reachable(address)
    ray.init(address=address, **kwargs)
    return None


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """A ``HOST:PORT`` (or ``ray://HOST:PORT``) that nothing answers at: one error now, where Ray's own client
    would retry for a minute or more (its GCS connection) before failing."""
    if address in ("auto", "local"):  # Ray finds the local node's address itself, or starts one
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ProctorError(f"--ray-address '{address}' is not HOST:PORT (e.g. 10.0.0.5:6379), ray://HOST:PORT or auto")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ProctorError(
            f"--ray-address '{address}': nothing answers there ({exc.strerror or type(exc).__name__}); "
            "start the cluster first (ray start --head) or check the address"
        ) from None
