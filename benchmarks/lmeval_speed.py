"""lm-eval's own task files vs proctor's native example tasks, on the same rows, in proctor.

    python benchmarks/lmeval_speed.py [--limit 300] [--repeats 3] [--model smollm2]

ARC-Easy (first 300 test questions, official answer keys) and HellaSwag (first 300 validation
items) from ../shared/data: once through examples/benchmarks/*.yaml, once through
``lm_eval:arc_easy`` / ``lm_eval:hellaswag`` with the same rows mapped in their hub schema
(``--lmeval-data``). Each measurement is its own process with the model loaded before the clock
starts; the clock covers loading the task files, data, prompts, scoring and writing the run
folder. Runs alternate native / lm-eval, ``--repeats`` times; the shared machine makes single
numbers noisy, so ranges are printed. Needs the ``lmeval`` extra.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("PROCTOR_DATA", REPO.parent / "shared" / "data")).resolve()

CHILD = r"""
import json, sys, time
from proctor.api import evaluate
from proctor.models.registry import load_model
args = json.loads(sys.argv[1])
model = load_model(args["model"], batch_size=8)
start = time.perf_counter()
lm_eval_tasks = any(t.startswith("lm_eval:") for t in args["tasks"])  # the mapping is an lm-eval option only
result = evaluate(args["tasks"], model, output_dir=args["out"], limit=args["limit"], variables={"PROCTOR_DATA": args["data"]},
                  dialect_options={"lmeval_data": args["mapping"]} if lm_eval_tasks else None)
seconds = time.perf_counter() - start
tasks = result.results["tasks"]
print(json.dumps({"seconds": seconds, "scores": {t: {k: v["value"] for k, v in r["metrics"].items()} for t, r in tasks.items()}}))
"""  # noqa: E501 (the child script's source, as it runs)


def arc_hub_rows(limit: int) -> list[dict]:
    """The native example's rows (llm-foundry copy + official keys, same filter) in ai2_arc's schema."""
    rows = [json.loads(x) for x in (DATA / "arc_easy" / "arc_easy.jsonl").read_text().splitlines()]
    keys = [json.loads(x) for x in (DATA / "arc_easy" / "question-answers.jsonl").read_text().splitlines()]
    out = []
    for row, key in zip(rows, keys):
        answer, n = key["answerKey"], len(row["choices"])
        if answer in "ABCDE" and "ABCDE".index(answer) >= n:
            continue  # the native task's filter: a fifth option missing from this copy
        labels = [str(i + 1) for i in range(n)] if answer.isdigit() else list("ABCDE"[:n])
        question = row["query"][10:] if row["query"].startswith("Question: ") else row["query"]
        out.append(
            {
                "id": key["id"],
                "question": question,
                "choices": {"text": row["choices"], "label": labels},
                "answerKey": answer,
            }
        )
        if len(out) >= limit:
            break
    return out


def measure(tasks: list[str], mapping: dict, limit: int, model: str) -> dict:
    with tempfile.TemporaryDirectory() as out:
        payload = json.dumps(
            {"tasks": tasks, "out": out + "/run", "limit": limit, "data": str(DATA), "mapping": mapping, "model": model}
        )
        env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_DATASETS_OFFLINE": "1"}
        done = subprocess.run(
            [sys.executable, "-c", CHILD, payload], capture_output=True, text=True, env=env, check=True
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="smollm2")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lmeval-speed-"))
    arc = work / "arc_easy_test.jsonl"
    arc.write_text("".join(json.dumps(r) + "\n" for r in arc_hub_rows(args.limit)))
    mapping = {
        "allenai/ai2_arc:ARC-Easy:test": str(arc),
        "Rowan/hellaswag::validation": str(DATA / "hellaswag" / "hf_arrow_validation"),
    }
    pairs = {
        "arc_easy": ([str(REPO / "examples" / "benchmarks" / "arc_easy.yaml")], ["lm_eval:arc_easy"]),
        "hellaswag": ([str(REPO / "examples" / "benchmarks" / "hellaswag.yaml")], ["lm_eval:hellaswag"]),
    }
    measure(pairs["arc_easy"][1], mapping, 5, args.model)  # warm the catalogue index cache once
    report = {}
    for name, (native, lmeval) in pairs.items():
        times: dict[str, list[float]] = {"native": [], "lmeval": []}
        scores = {}
        for _ in range(args.repeats):
            for label, tasks in (("native", native), ("lmeval", lmeval)):
                found = measure(tasks, mapping, args.limit, args.model)
                times[label].append(found["seconds"])
                scores[label] = found["scores"]
        ratios = sorted(b / a for a, b in zip(times["native"], times["lmeval"]))
        report[name] = {
            "native_s": sorted(times["native"]),
            "lmeval_s": sorted(times["lmeval"]),
            "ratio_lmeval_over_native": ratios,
            "scores": scores,
        }
        print(
            f"{name}: native {min(times['native']):.1f}-{max(times['native']):.1f}s, lm-eval files "
            f"{min(times['lmeval']):.1f}-{max(times['lmeval']):.1f}s, ratio {ratios[0]:.3f}-{ratios[-1]:.3f}",
            flush=True,
        )
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
