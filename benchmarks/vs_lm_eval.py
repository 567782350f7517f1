"""proctor vs lm-evaluation-harness 0.4.13 on SmolLM2-135M, plus a pure forward-pass lower bound.

    python benchmarks/vs_lm_eval.py            # installs lm-eval==0.4.13 if needed, then measures

Every measurement runs in its own process (so peak memory is its own), with the model loaded
before the clock starts, on the same machine in one go: ARC-Easy (first 300 test questions,
official keys), HellaSwag (first 300 validation items), NQ-open (first 100, greedy, stop at
newline), all from ../shared/data. Ratios, not absolute times, are the result.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("PROCTOR_DATA", REPO.parent / "shared" / "data")).resolve()
LM_EVAL_VERSION = "0.4.13"


def ensure_lm_eval() -> None:
    try:
        from importlib.metadata import version

        import lm_eval  # noqa: F401

        if version("lm_eval") == LM_EVAL_VERSION:
            return
    except ImportError:
        pass
    import torch

    # Pin the torch already installed, so pip never swaps in another build.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            f"lm-eval=={LM_EVAL_VERSION}",
            f"torch=={torch.__version__.split('+')[0]}",
        ],
        check=True,
    )


# ----------------------------------------------------------------------------- data for lm-eval
def write_lm_eval_tasks(folder: Path, n: dict) -> None:
    """lm-eval task YAMLs over local jsonl copies of exactly the rows proctor reads."""
    import pyarrow as pa

    rows = [json.loads(x) for x in (DATA / "arc_easy" / "arc_easy.jsonl").read_text().splitlines()]
    keys = [json.loads(x) for x in (DATA / "arc_easy" / "question-answers.jsonl").read_text().splitlines()]
    arc = []
    for row, key in zip(rows, keys):
        k = key["answerKey"]
        label = "ABCDE".index(k) if k in "ABCDE" else int(k) - 1
        if label < len(row["choices"]):  # as proctor's task file: one key points past its question's choices
            arc.append(
                {
                    "id": key["id"],
                    "question": row["query"][len("Question: ") :],
                    "choices": row["choices"],
                    "label": label,
                }
            )
    with (folder / "arc.jsonl").open("w") as out:
        for row in arc[: n["arc_easy"]]:
            out.write(json.dumps(row) + "\n")
    with pa.memory_map(str(DATA / "hellaswag" / "hf_arrow_validation" / "data-00000-of-00001.arrow")) as source:
        table = pa.ipc.open_stream(source).read_all().slice(0, n["hellaswag"])
    with (folder / "hellaswag.jsonl").open("w") as out:
        for row in table.to_pylist():
            out.write(json.dumps(row) + "\n")
    nq = (DATA / "nq_open" / "NQ-open.dev.jsonl").read_text().splitlines()[: n["nq_open"]]
    (folder / "nq.jsonl").write_text("\n".join(nq) + "\n")
    (folder / "utils.py").write_text("from lm_eval.tasks.hellaswag.utils import process_docs  # noqa: F401\n")
    common = "test_split: test\nnum_fewshot: 0\nmetadata: {version: 1.0}\n"
    (folder / "b_arc.yaml").write_text(
        "task: bench_arc_easy\ndataset_path: json\n"
        f"dataset_kwargs: {{data_files: {{test: {folder / 'arc.jsonl'}}}}}\n{common}"
        "output_type: multiple_choice\ndoc_to_text: \"Question: {{question}}\\nAnswer:\"\n"
        "doc_to_choice: \"{{choices}}\"\n"
        "doc_to_target: \"{{label}}\"\nmetric_list: [{metric: acc}, {metric: acc_norm}]\n"
    )
    (folder / "b_hellaswag.yaml").write_text(
        "task: bench_hellaswag\ndataset_path: json\n"
        f"dataset_kwargs: {{data_files: {{test: {folder / 'hellaswag.jsonl'}}}}}\n{common}"
        "output_type: multiple_choice\nprocess_docs: !function utils.process_docs\ndoc_to_text: \"{{query}}\"\n"
        "doc_to_choice: \"choices\"\ndoc_to_target: \"{{label}}\"\nmetric_list: [{metric: acc}, {metric: acc_norm}]\n"
    )
    (folder / "b_nq.yaml").write_text(
        "task: bench_nq_open\ndataset_path: json\n"
        f"dataset_kwargs: {{data_files: {{test: {folder / 'nq.jsonl'}}}}}\n{common}"
        "output_type: generate_until\ndescription: \"Answer these questions:\\n\\n\"\n"
        "doc_to_text: \"Q: {{question}}?\\nA:\"\n"
        "doc_to_target: \"{{answer}}\"\n"
        "generation_kwargs: {until: [\"\\n\"], do_sample: false, temperature: 0.0, max_gen_toks: 32}\n"
        "metric_list: [{metric: exact_match, ignore_case: true, ignore_punctuation: true}]\n"
    )


# ----------------------------------------------------------------------------- workers
def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker_proctor(task: str, limit: int, batch_size: int, out: Path) -> dict:
    from proctor import evaluate
    from proctor.models.registry import load_model

    model = load_model("smollm2", batch_size=batch_size)
    start = time.perf_counter()
    result = evaluate(
        [REPO / "examples" / "benchmarks" / f"{task}.yaml"],
        model,
        output_dir=out,
        limit=limit,
        variables={"PROCTOR_DATA": str(DATA)},
    )
    seconds = time.perf_counter() - start
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    metrics = result.tasks[task]["metrics"]
    score = metrics.get("acc", metrics.get("exact_match"))["value"]
    return {
        "seconds": seconds,
        "peak_mb": peak_mb(),
        "tokens": getattr(model, "tokens_forwarded", None),
        "score": score,
        "acc_norm": metrics.get("acc_norm", {}).get("value"),
        "per_sample": [s.get("logprobs", s.get("generation")) for s in samples],
    }


def worker_lm_eval(task: str, limit: int, batch_size: int, tasks_dir: Path) -> dict:
    import torch
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    from proctor.models.default import default_model_path

    lm = HFLM(pretrained=str(default_model_path()), dtype="float32", batch_size=batch_size, device="cpu")
    counted = {"tokens": 0}
    lm.model.register_forward_pre_hook(
        lambda m, args, kwargs: counted.__setitem__(
            "tokens", counted["tokens"] + (args[0] if args else kwargs["input_ids"]).numel()
        ),
        with_kwargs=True,
    )
    start = time.perf_counter()
    with torch.inference_mode():
        results = simple_evaluate(
            model=lm,
            tasks=[f"bench_{task}"],
            task_manager=TaskManager(include_path=str(tasks_dir)),
            limit=limit,
            log_samples=True,
            bootstrap_iters=0,
        )
    seconds = time.perf_counter() - start
    name = f"bench_{task}"
    metrics = results["results"][name]
    samples = sorted(results["samples"][name], key=lambda s: s["doc_id"])
    if task == "nq_open":
        per_sample = [s["resps"][0][0] for s in samples]
        score = metrics["exact_match,none"]
    else:
        per_sample = [[r[0][0] for r in s["resps"]] for s in samples]
        score = metrics["acc,none"]
    return {
        "seconds": seconds,
        "peak_mb": peak_mb(),
        "tokens": counted["tokens"],
        "score": score,
        "acc_norm": metrics.get("acc_norm,none"),
        "per_sample": per_sample,
    }


def worker_lower_bound(limits: dict) -> dict:
    """The model run once over exactly what the two multiple-choice tasks need.

    The decoder over every distinct input prefix, plus the vocabulary projection and log-softmax
    at every distinct position that predicts a scored token; nothing else.
    """
    import torch

    from proctor.api import load_tasks
    from proctor.engine.prepare import prepare_task
    from proctor.kinds.handlers import kind_handler
    from proctor.models.registry import load_model

    model = load_model("smollm2")
    decoder = model.model.get_decoder()
    unique: set = set()
    scored: set = set()
    for task in ("arc_easy", "hellaswag"):
        (spec,) = load_tasks([REPO / "examples" / "benchmarks" / f"{task}.yaml"])
        prepared = prepare_task(spec, {"PROCTOR_DATA": str(DATA)}, limit=limits[task])
        handler = kind_handler("multiple_choice")
        for sample in prepared.samples:
            for request in handler.requests(spec.spec, sample, sample.prompt.render(model)):
                context, continuation = model.encode_pair(request.context, request.continuation)
                tokens = context + continuation
                unique.update(tuple(tokens[: k + 1]) for k in range(len(tokens) - 1))
                scored.update(tuple(tokens[:k]) for k in range(len(context), len(tokens)))
    # That many tokens as plain causal rows of 512 (no masks), and the head at that many positions.
    n, n_scored = len(unique), len(scored)
    stream = torch.randint(100, 40000, (n,))
    head = model.model.get_output_embeddings()
    start = time.perf_counter()
    with torch.inference_mode():
        for offset in range(0, n, 512):
            hidden = decoder(input_ids=stream[offset : offset + 512][None]).last_hidden_state[0]
            take = min(len(hidden), max(0, n_scored - offset))
            if take:
                torch.log_softmax(head(hidden[:take]).float(), dim=-1)
    return {"seconds": time.perf_counter() - start, "peak_mb": peak_mb(), "tokens": n, "scored_positions": n_scored}


def run_worker(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--worker", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"worker {args} failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def max_delta(a: list, b: list) -> float:
    return max((abs(x - y) for xs, ys in zip(a, b) for x, y in zip(xs, ys)), default=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arc-easy", type=int, default=300)
    parser.add_argument("--hellaswag", type=int, default=300)
    parser.add_argument("--nq-open", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, *rest = args.worker
        if kind == "proctor":
            result = worker_proctor(rest[0], int(rest[1]), int(rest[2]), Path(rest[3]))
        elif kind == "lm_eval":
            result = worker_lm_eval(rest[0], int(rest[1]), int(rest[2]), Path(rest[3]))
        else:
            result = worker_lower_bound(json.loads(rest[0]))
        print(json.dumps(result))
        return
    if not DATA.exists():
        raise SystemExit(f"needs the benchmark data at {DATA} (set PROCTOR_DATA)")
    ensure_lm_eval()
    limits = {"arc_easy": args.arc_easy, "hellaswag": args.hellaswag, "nq_open": args.nq_open}
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        write_lm_eval_tasks(tmp_path, limits)
        for task, limit in limits.items():
            ours = run_worker(["proctor", task, str(limit), str(args.batch_size), str(tmp_path / f"run_{task}")])
            theirs = run_worker(["lm_eval", task, str(limit), str(args.batch_size), str(tmp_path)])
            rows[task] = (ours, theirs)
            print(f"measured {task}: proctor {ours['seconds']:.1f}s, lm-eval {theirs['seconds']:.1f}s", file=sys.stderr)
        bound = run_worker(["lower_bound", json.dumps(limits)])
    print(
        f"{'task':<10} {'harness':<8} {'wall s':>8} {'peak MB':>8} {'tokens':>9} "
        f"{'acc/EM':>7} {'acc_norm':>8}  agreement"
    )
    summary = {}
    for task, (ours, theirs) in rows.items():
        if task == "nq_open":
            same = sum(a == b for a, b in zip(ours["per_sample"], theirs["per_sample"]))
            agreement = f"identical outputs {same}/{len(ours['per_sample'])}"
            summary[f"{task}_identical"] = same == len(ours["per_sample"])
        else:
            delta = max_delta(ours["per_sample"], theirs["per_sample"])
            agreement = f"max |Δ logp| {delta:.2e}"
            worst = max(
                range(len(ours["per_sample"])),
                key=lambda i: max_delta([ours["per_sample"][i]], [theirs["per_sample"][i]]),
            )
            # the item that sets the maximum, both harnesses' per-choice values (for diagnosis)
            summary[f"{task}_worst"] = {
                "item": worst,
                "proctor": ours["per_sample"][worst],
                "lm_eval": theirs["per_sample"][worst],
            }
            summary["max_dlogp"] = max(summary.get("max_dlogp", 0.0), delta)
        for label, r in (("proctor", ours), ("lm-eval", theirs)):
            norm = f"{r['acc_norm']:.4f}" if r.get("acc_norm") is not None else "—"
            tokens = r["tokens"] if r["tokens"] is not None else "—"
            print(
                f"{task:<10} {label:<8} {r['seconds']:>8.1f} {r['peak_mb']:>8.0f} {tokens:>9} {r['score']:>7.4f} "
                f"{norm:>8}  {agreement if label == 'proctor' else ''}"
            )
        summary[task] = ours["seconds"] / theirs["seconds"]
        summary[f"{task}_memory"] = ours["peak_mb"] / theirs["peak_mb"]
    mc_seconds = rows["arc_easy"][0]["seconds"] + rows["hellaswag"][0]["seconds"]
    mc_tokens = rows["arc_easy"][0]["tokens"] + rows["hellaswag"][0]["tokens"]
    print(
        f"{'arc+hs':<10} {'forward':<8} {bound['seconds']:>8.1f} {bound['peak_mb']:>8.0f} {bound['tokens']:>9}   "
        f"(pure forward: unique tokens + head at {bound['scored_positions']} scored positions)"
    )
    summary["lower_bound"] = mc_seconds / bound["seconds"]
    summary["tokens_vs_unique"] = mc_tokens / bound["tokens"]
    print(f"tokens forwarded / unique tokens needed (arc+hellaswag): {summary['tokens_vs_unique']:.3f}")
    print(
        f"ratios arc_easy={summary['arc_easy']:.3f} "
        f"hellaswag={summary['hellaswag']:.3f} nq_open={summary['nq_open']:.3f} "
        f"lower_bound={summary['lower_bound']:.3f} max_dlogp={summary['max_dlogp']:.2e}"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "summary": summary,
                    "lower_bound": bound,
                    "rows": {
                        t: {
                            "proctor": {k: v for k, v in o.items() if k != "per_sample"},
                            "lm_eval": {k: v for k, v in loaded.items() if k != "per_sample"},
                        }
                        for t, (o, loaded) in rows.items()
                    },
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
