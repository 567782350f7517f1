"""A two-node Ray cluster on loopback, inside a network namespace of its own, and runs on it.

usage: unshare --net --pid --fork --kill-child --mount-proc python ray_two_nodes.py WORKDIR TASKS MODEL CHUNK

Run it as the first process of fresh network and PID namespaces (``tests/engine/test_distributed.py``
does). It refuses to start unless its network namespace has no interface but ``lo``, so every
address Ray can find is 127.0.0.1 and no packet can leave the namespace. It then:

1. brings ``lo`` up, starts a head node and a second node (two ``ray start --block`` processes,
   one CPU each, a token of their own for Ray's token authentication) and waits for both;
2. runs ``proctor run --workers 2 --ray-address 127.0.0.1:PORT --cpus-per-worker 1`` into
   WORKDIR/cli-run (two one-CPU replicas on two one-CPU nodes: one replica per node);
3. runs the same evaluation through the Python API into WORKDIR/kill-run and SIGKILLs the replica
   on the second node once it has answered a chunk;
4. writes WORKDIR/report.json: the interfaces, every node (id, address, alive), where each
   replica ran, every socket address seen while the runs went on, and each run's outcome.

Everything ends with this process: it stops both nodes, and as the namespace's init process its
exit kills whatever else is left in the PID namespace (the kernel does), which also frees the
network namespace.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
PORT = 6390  # free by construction: the namespace is new


def interfaces() -> list[str]:
    return sorted(name for _, name in socket.if_nameindex())


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(s, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))


def socket_addresses() -> set[str]:
    """Every local and remote address of every TCP/UDP socket in this network namespace."""
    seen: set[str] = set()
    for name in ("tcp", "tcp6", "udp", "udp6"):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            for field in line.split()[1:3]:
                hexaddr = field.split(":")[0]
                raw = bytes.fromhex(hexaddr)
                if len(raw) == 4:
                    seen.add(str(ipaddress.IPv4Address(raw[::-1])))
                else:  # four little-endian 32-bit words
                    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                    seen.add(str(ipaddress.IPv6Address(words)))
    return seen


class Watcher(threading.Thread):
    """Samples socket addresses every half second while the runs go on."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.seen: set[str] = set()
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            self.seen |= socket_addresses()
            self.stopped.wait(0.5)


def ray_start(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    ray_bin = shutil.which("ray", path=str(Path(sys.executable).parent)) or "ray"
    return subprocess.Popen(
        [
            ray_bin,
            "start",
            "--block",
            "--disable-usage-stats",
            "--num-cpus",
            "1",
            "--node-ip-address",
            "127.0.0.1",
            *args,
        ],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(proc: subprocess.Popen) -> None:
    """End a `ray start --block` and every process in its session (by process group)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=20)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def wait_for_port(port: int, proc: subprocess.Popen, log: Path, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if proc.poll() is not None:
            raise RuntimeError(f"the head node exited: {log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError("the head node did not start")
        time.sleep(0.5)


def nodes(ray) -> list[dict]:
    return [{"id": n["NodeID"], "address": n["NodeManagerAddress"], "alive": bool(n["Alive"])} for n in ray.nodes()]


def replicas(ray, job_id: str | None = None) -> list[dict]:
    """Where each ModelWorker actor ran (dead ones included), from the GCS actor table."""
    out = []
    for info in ray._private.state.actors().values():
        if info["ActorClassName"].endswith("ModelWorker") and (job_id is None or info["JobID"] == job_id):
            out.append(
                {
                    "node": info["Address"]["NodeID"],
                    "address": info["Address"]["IPAddress"],
                    "state": info["State"],
                    "job": info["JobID"],
                }
            )
    return out


def main() -> None:
    workdir, tasks, model, chunk = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    report: dict = {"interfaces": interfaces()}
    if report["interfaces"] != ["lo"]:  # never start a cluster anywhere but in an empty namespace
        report["error"] = f"refusing to run: this network namespace has interfaces {report['interfaces']}, not only lo"
        (workdir / "report.json").write_text(json.dumps(report))
        sys.exit(2)
    loopback_up()
    env = dict(os.environ)
    env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)  # "0" (single-machine mode) refuses a second node
    os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
    env.update(
        RAY_USAGE_STATS_ENABLED="0",
        RAY_AUTH_MODE="token",  # this cluster's own token: ~/.ray/auth_token is neither read nor written
        RAY_AUTH_TOKEN=secrets.token_hex(32),
    )
    os.environ.update(env)  # this process is a driver too
    address = f"127.0.0.1:{PORT}"
    watcher = Watcher()
    watcher.start()
    procs: list[subprocess.Popen] = []
    try:
        head_log = workdir / "head.log"
        procs.append(
            ray_start(
                ["--head", "--port", str(PORT), "--include-dashboard=false", "--temp-dir", str(workdir / "ray")],
                env,
                head_log,
            )
        )
        wait_for_port(PORT, procs[0], head_log)
        procs.append(ray_start(["--address", address], env, workdir / "node2.log"))

        import ray

        ray.init(address=address, logging_level="ERROR")
        deadline = time.monotonic() + 120
        while sum(n["alive"] for n in nodes(ray)) < 2:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the second node did not join: {(workdir / 'node2.log').read_text()[-3000:]}")
            time.sleep(0.5)
        report["nodes"] = nodes(ray)
        head_id = ray.get_runtime_context().get_node_id()  # a driver attaches to the head on its host
        report["head"] = head_id

        # 2. the CLI, as a user runs it against a running cluster
        cli = subprocess.run(
            [
                sys.executable,
                "-m",
                "proctor.cli",
                "run",
                tasks,
                "--model",
                model,
                "-o",
                str(workdir / "cli-run"),
                "--chunk-size",
                str(chunk),
                "-b",
                "4",
                "-q",
                "--workers",
                "2",
                "--ray-address",
                address,
                "--cpus-per-worker",
                "1",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
        )
        report["cli"] = {"rc": cli.returncode, "output": (cli.stdout + cli.stderr)[-4000:], "replicas": replicas(ray)}

        # 3. the Python API, with the replica on the second node killed in the middle of the run
        from proctor import evaluate
        from proctor.engine.distributed import ClusterOptions, DistributedModel

        kill: dict = {"killed": None}
        report["kill"] = kill
        dist = DistributedModel(model, {"batch_size": 4}, ClusterOptions(workers=2, address=address))
        try:
            kill["workers"] = [{"pid": w["pid"], "node": w["node_id"], "address": w["node"]} for w in dist.workers]
            victim = next(i for i, w in enumerate(dist.workers) if w["node_id"] != head_id)

            def progress(name: str, done: int, total: int) -> None:
                # once the second node's replica has answered a chunk: that answer must be kept, once
                if kill["killed"] is None and dist.chunks_done.get(victim, 0) >= 1:
                    kill["killed"] = victim
                    os.kill(dist.workers[victim]["pid"], signal.SIGKILL)  # same PID namespace

            evaluate([tasks], dist, output_dir=workdir / "kill-run", chunk_size=chunk, progress=progress)
            kill.update(lost=dist.lost, chunks_done={str(k): v for k, v in dist.chunks_done.items()})
        finally:
            dist.close()
        report["nodes_after"] = nodes(ray)
        ray.shutdown()
    except BaseException:
        report["error"] = traceback.format_exc()[-4000:]
    finally:
        for proc in reversed(procs):
            stop(proc)
        watcher.stopped.set()
        watcher.join()
        report["socket_addresses"] = sorted(watcher.seen | socket_addresses())
        report["interfaces_after"] = interfaces()
        (workdir / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
