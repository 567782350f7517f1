"""The API path's speed figure (issue 50): proctor's ``openai:`` backend against lm-evaluation-harness 0.4.13's
``local-completions`` model, both scoring the same ARC-Easy rows through one real server on loopback.

    .venv-vllm/bin/python benchmarks/api_vs_lm_eval.py [--limit 100] [--concurrency 8] [--repeats 2]

The server is ``vllm serve`` (vLLM's OpenAI-compatible server from the vLLM venv, ``bash install_vllm.sh``) on
SmolLM2-135M-Instruct (float32, eager, a 2 GiB KV cache), started once on 127.0.0.1 and stopped at the end. Each
side is a process of its own, timed from the evaluation call to its results (the tokenizer and the task files
loaded before the clock), at the same concurrency: proctor sends ``batch`` (8) prompts per request, lists the
server takes, after a self-check of the server's prompt log-probs (in the time); lm-eval sends one request per
choice (its default ``batch_size=1``), token ids with ``echo`` and ``logprobs``. Requests are counted in the
server's access log. Sides alternate; medians are reported, with the largest |Δ log-likelihood| over every
choice and whether the predictions agree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vs_lm_eval import DATA, REPO, write_lm_eval_tasks  # noqa: E402 (the same rows, as lm-eval tasks)

TARGET = 0.5  # proctor's time / lm-eval's, at most
SERVED = "smollm2"


def model_path() -> str:
    from proctor.models.default import default_model_path

    return str(default_model_path())


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ----------------------------------------------------------------------------- workers (one process each)
def worker_proctor(url: str, limit: int, concurrency: int, out: Path) -> dict:
    from proctor import evaluate
    from proctor.models.registry import load_model

    model = load_model(f"openai:{SERVED}", base_url=url, concurrency=concurrency)
    task = REPO / "examples" / "benchmarks" / "arc_easy.yaml"
    start = time.perf_counter()
    result = evaluate([task], model, output_dir=out, limit=limit, variables={"PROCTOR_DATA": str(DATA)})
    seconds = time.perf_counter() - start
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    return {
        "seconds": seconds,
        "acc": result.tasks["arc_easy"]["metrics"]["acc"]["value"],
        "client_requests": model.client.usage.snapshot()["requests"],
        "per_sample": [s["logprobs"] for s in samples],
    }


def worker_lm_eval(url: str, limit: int, concurrency: int, tasks: Path) -> dict:
    from lm_eval import simple_evaluate
    from lm_eval.models.openai_completions import LocalCompletionsAPI
    from lm_eval.tasks import TaskManager

    lm = LocalCompletionsAPI(
        base_url=f"{url}/completions",
        model=SERVED,
        tokenizer_backend="huggingface",
        tokenizer=model_path(),
        num_concurrent=concurrency,
        max_retries=3,
    )
    manager = TaskManager(include_path=str(tasks))
    start = time.perf_counter()
    results = simple_evaluate(
        model=lm, tasks=["bench_arc_easy"], task_manager=manager, limit=limit, log_samples=True, bootstrap_iters=0
    )
    seconds = time.perf_counter() - start
    samples = sorted(results["samples"]["bench_arc_easy"], key=lambda s: s["doc_id"])
    return {
        "seconds": seconds,
        "acc": results["results"]["bench_arc_easy"]["acc,none"],
        "per_sample": [[r[0][0] for r in s["resps"]] for s in samples],
    }


# ----------------------------------------------------------------------------- the server
def start_server(port: int, log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model_path()]
    command += ["--served-model-name", SERVED, "--enforce-eager", "--dtype", "float32", "--seed", "0"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "VLLM_HOST_IP": "127.0.0.1", "VLLM_CPU_KVCACHE_SPACE": "2"}
    server = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 900
    while True:
        if server.poll() is not None:
            raise SystemExit(f"vllm serve exited ({server.returncode}): {log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            stop_server(server)
            raise SystemExit("vllm serve did not answer within 15 minutes")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5).read()
            return server
        except OSError:
            time.sleep(2)


def stop_server(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def completions_posted(log: Path) -> int:
    """POSTs to /v1/completions in the server's access log so far."""
    return sum("POST /v1/completions" in line for line in log.read_text(errors="replace").splitlines())


def run_worker(args: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env["TOKENIZERS_PARALLELISM"] = "false"
    env.pop("OPENAI_API_KEY", None)
    done = subprocess.run([sys.executable, __file__, "--worker", *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-4000:])
        raise SystemExit(f"worker {args[0]} failed (exit {done.returncode})")
    return dict(json.loads((Path(args[4]).parent / f"{args[0]}.json").read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=100, help="ARC-Easy questions")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight, both sides")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, url, limit, concurrency, path = args.worker
        work = worker_proctor if kind == "proctor" else worker_lm_eval
        found = work(url, int(limit), int(concurrency), Path(path))
        (Path(path).parent / f"{kind}.json").write_text(json.dumps(found))  # not stdout: lm-eval prints there
        return
    try:
        import lm_eval.models.openai_completions  # noqa: F401
        import vllm  # noqa: F401
    except ImportError as missing:
        raise SystemExit(f"needs vLLM and lm-eval[api] here ({missing}): run it with .venv-vllm/bin/python") from None
    began = {"start": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "load_1_5_15": os.getloadavg()}
    runs: dict[str, list[dict]] = {"proctor": [], "lm_eval": []}
    with tempfile.TemporaryDirectory(prefix="api-vs-lm-eval-") as tmp:
        folder = Path(tmp)
        (folder / "tasks").mkdir()
        write_lm_eval_tasks(folder / "tasks", {"arc_easy": args.limit, "hellaswag": 1, "nq_open": 1})
        port = free_port()
        url = f"http://127.0.0.1:{port}/v1"
        log = folder / "server.log"
        server = start_server(port, log)
        try:
            for repeat in range(args.repeats):
                order = ["proctor", "lm_eval"] if repeat % 2 == 0 else ["lm_eval", "proctor"]
                for side in order:
                    before = completions_posted(log)
                    where = folder / f"run-{side}-{repeat}" if side == "proctor" else folder / "tasks"
                    found = run_worker([side, url, str(args.limit), str(args.concurrency), str(where)])
                    time.sleep(1)  # the access log's last lines
                    found["requests"] = completions_posted(log) - before
                    found["requests_per_s"] = found["requests"] / found["seconds"]
                    runs[side].append(found)
                    print(
                        f"repeat {repeat + 1} {side}: {found['seconds']:.1f}s, {found['requests']} requests",
                        file=sys.stderr,
                        flush=True,
                    )
        finally:
            stop_server(server)
    median = {side: statistics.median(r["seconds"] for r in found) for side, found in runs.items()}
    ours, theirs = runs["proctor"][0]["per_sample"], runs["lm_eval"][0]["per_sample"]
    if len(ours) != len(theirs) or any(len(a) != len(b) for a, b in zip(ours, theirs)):
        raise SystemExit("the two sides scored different rows")
    worst = max(abs(x - y) for a, b in zip(ours, theirs) for x, y in zip(a, b))
    same = sum(a.index(max(a)) == b.index(max(b)) for a, b in zip(ours, theirs))
    ratio = median["proctor"] / median["lm_eval"]
    figures = {
        "machine": {**began, "cpus": os.cpu_count(), "end_load_1_5_15": os.getloadavg()},
        "rows": f"ARC-Easy-{args.limit}",
        "concurrency": args.concurrency,
        "server": "vllm serve (vllm-cpu 0.32.0), SmolLM2-135M-Instruct float32, eager, KV cache 2 GiB",
        "sides": {
            side: {
                "seconds": [r["seconds"] for r in found],
                "median_s": median[side],
                "requests": found[0]["requests"],
                "requests_per_s": [r["requests_per_s"] for r in found],
                "acc": found[0]["acc"],
            }
            for side, found in runs.items()
        },
        "ratio_vs_lm_eval": ratio,
        "target": TARGET,
        "max_abs_dlogp": worst,
        "same_prediction": same,
        "of": len(ours),
        "holds": {"time": ratio <= TARGET, "agreement": worst <= 1e-4},
    }
    print(
        f"ARC-Easy-{args.limit} at concurrency {args.concurrency}: proctor {median['proctor']:.1f}s "
        f"({runs['proctor'][0]['requests']} requests), lm-eval {median['lm_eval']:.1f}s "
        f"({runs['lm_eval'][0]['requests']} requests); ratio {ratio:.3f} (target <= {TARGET}); "
        f"max |dlogp| {worst:.2e}; same prediction {same}/{len(ours)}"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
