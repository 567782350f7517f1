"""Data-parallel evaluation on Ray: the same numbers as one process, whatever happens to workers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes import stable, write_tasks

from proctor import evaluate
from proctor.engine.sharding import assign, chunk_key, estimated_tokens
from proctor.errors import MissingDependencyError
from proctor.requests import LoglikelihoodRequest

REPO = Path(__file__).resolve().parents[1]
CHUNK = 4  # small chunks: many of them, so two replicas share the work and a killed one has some left
OPTIONS = {"batch_size": 4}


# ---------------------------------------------------------------------------- sharding (no Ray)
def test_assignment_is_deterministic_and_balanced():
    chunks = [[LoglikelihoodRequest("c" * (10 * i + 1), f" x{i}")] for i in range(20)]
    costs = [sum(estimated_tokens(r) for r in c) for c in chunks]
    keys = [chunk_key(c) for c in chunks]
    first = assign(range(20), costs, keys, [0, 1, 2])
    again = assign(range(20), costs, keys, [0, 1, 2])
    assert first == again
    assert sorted(k for q in first.values() for k in q) == list(range(20))
    loads = [sum(costs[k] for k in q) for q in first.values()]
    assert max(loads) - min(loads) <= max(costs)
    # Reassigning a lost replica's chunks balances against what the survivors still hold.
    orphans = list(first.pop(2))
    held = {r: sum(costs[k] for k in q) for r, q in first.items()}
    extra = assign(orphans, costs, keys, [0, 1], held)
    assert sorted(k for q in extra.values() for k in q) == sorted(orphans)


def test_without_ray_workers_say_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    tasks = write_tasks(tmp_path / "tasks", n_mc=2, n_gen=1)
    with pytest.raises(MissingDependencyError, match=r"pip install 'proctor\[ray\]'"):
        evaluate([tasks], "unused-model", output_dir=tmp_path / "run", workers=2)


# ---------------------------------------------------------------------------- on a Ray cluster
ray = pytest.importorskip("ray", reason="needs ray: pip install 'proctor[ray]'")


def _comparable(run: Path) -> dict:
    results = stable(json.loads((run / "results.json").read_text()))
    results.pop("created")
    results.pop("command")
    return results


def _same_run(a: Path, b: Path) -> None:
    assert (a / "samples.jsonl").read_text() == (b / "samples.jsonl").read_text()  # every per-sample log-prob
    assert _comparable(a) == _comparable(b)  # every metric, stderr, count and the model fingerprint


def _computed(run: Path) -> int:
    return json.loads((run / "run.json").read_text())["attempts"][-1]["responses"]["computed"]


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> Path:
    return write_tasks(tmp_path_factory.mktemp("dist") / "tasks", n_mc=12, n_gen=6)


@pytest.fixture(scope="module")
def single(tasks, tiny_model_dir, tmp_path_factory) -> Path:
    """The reference: one process, no Ray."""
    run = tmp_path_factory.mktemp("single") / "run"
    evaluate([tasks], str(tiny_model_dir), output_dir=run, chunk_size=CHUNK, model_options=OPTIONS)
    return run


@pytest.mark.slow
def test_two_workers_give_the_single_process_results(tasks, tiny_model_dir, single, tmp_path):
    run = tmp_path / "run"
    evaluate([tasks], str(tiny_model_dir), output_dir=run, chunk_size=CHUNK, model_options=OPTIONS, workers=2)
    _same_run(single, run)
    assert _computed(run) == _computed(single)
    assert not ray.is_initialized()  # the local cluster this run started is gone


@pytest.mark.slow
def test_a_killed_worker_has_its_chunks_reassigned(tasks, tiny_model_dir, single, tmp_path):
    from proctor.engine.distributed import ClusterOptions, DistributedModel

    model = DistributedModel(str(tiny_model_dir), OPTIONS, ClusterOptions(workers=2))
    try:
        assert len(set(model.worker_pids)) == 2 and os.getpid() not in model.worker_pids
        assert {node["NodeManagerAddress"] for node in ray.nodes()} == {"127.0.0.1"}  # loopback only
        killed: list[int] = []

        def progress(name: str, done: int, total: int) -> None:
            if done and not killed:  # the first chunk is in: kill a replica in the middle of the run
                killed.append(model.worker_pids[1])
                os.kill(model.worker_pids[1], signal.SIGKILL)

        run = tmp_path / "run"
        evaluate([tasks], model, output_dir=run, chunk_size=CHUNK, progress=progress)
        assert killed and model.lost == [1]
        assert model.chunks_done.get(0, 0) > 0
    finally:
        model.close()
    assert not ray.is_initialized()
    _same_run(single, run)
    assert _computed(run) == _computed(single)  # nothing computed twice, nothing lost


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_start(args: list[str], env: dict) -> subprocess.Popen:
    ray_bin = shutil.which("ray", path=str(Path(sys.executable).parent)) or "ray"
    return subprocess.Popen(
        ["nice", "-n", "19", ray_bin, "start", "--block", "--disable-usage-stats", "--num-cpus", "1",
         "--node-ip-address", "127.0.0.1", *args],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )


def _stop(proc: subprocess.Popen) -> None:
    """End a `ray start --block` we started and every process in its session (by process group)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("PROCTOR_TEST_RAY_MULTINODE") != "1",
    reason="Ray's multi-node mode swaps 127.0.0.1 for the machine's network address, and this test "
    "environment allows loopback traffic only; set PROCTOR_TEST_RAY_MULTINODE=1 where a two-node "
    "cluster on the machine's own address is allowed",
)
def test_two_node_cluster_on_loopback_runs_a_task_end_to_end(tasks, tiny_model_dir, single, tmp_path):
    port = _free_port()
    address = f"127.0.0.1:{port}"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO / "src"), env.get("PYTHONPATH", "")] if p)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    nodes = [_ray_start(["--head", "--port", str(port), "--include-dashboard=false"], env)]
    try:
        probe = (
            "import ray, sys, time\n"
            f"ray.init(address='{address}', logging_level='ERROR')\n"
            "deadline = time.time() + 120\n"
            "while sum(n['Alive'] for n in ray.nodes()) < 2 and time.time() < deadline: time.sleep(0.5)\n"
            "print(sum(n['Alive'] for n in ray.nodes()))\n"
        )
        deadline = time.monotonic() + 90
        while True:  # the head is up once its GCS port answers
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert nodes[0].poll() is None, nodes[0].stderr.read()
            assert time.monotonic() < deadline, "the head node did not start"
            time.sleep(0.5)
        nodes.append(_ray_start(["--address", address], env))
        alive = subprocess.run(["nice", "-n", "19", sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=180)
        assert alive.stdout.strip().splitlines()[-1] == "2", alive.stderr[-3000:]
        # Two replicas of one CPU each on two one-CPU nodes: one replica per node.
        run = tmp_path / "run"
        cli = subprocess.run(
            ["nice", "-n", "19", sys.executable, "-m", "proctor.cli", "run", str(tasks), "--model", str(tiny_model_dir),
             "-o", str(run), "--chunk-size", str(CHUNK), "-b", "4", "-q", "--workers", "2", "--ray-address", address,
             "--cpus-per-worker", "1"],
            env=env, capture_output=True, text=True, timeout=300,
        )
        assert cli.returncode == 0, cli.stdout[-3000:] + cli.stderr[-3000:]
        assert json.loads((run / "results.json").read_text())["status"] == "complete"
        assert (run / "samples.jsonl").read_text() == (single / "samples.jsonl").read_text()
    finally:
        for node in reversed(nodes):
            _stop(node)
