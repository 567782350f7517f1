"""Shared by the lm-eval dialect tests: local copies of ../shared/data in each dataset's hub schema,
and lm-evaluation-harness 0.4.13 itself run on them (its ``datasets.load_dataset`` answered from the
same rows by a loader written here, independent of proctor's mapping code)."""

from __future__ import annotations

import contextlib
import csv
import json
from pathlib import Path
from typing import Any

N = 20  # rows per multiple-choice set: enough to see differences, fast on the tiny model

MMLU_SUBJECTS = ("abstract_algebra", "anatomy", "marketing")


def _arrow(shared: Path, name: str, n: int) -> list[dict]:
    import datasets

    return [dict(row) for row in datasets.load_from_disk(str(shared / name / "hf_arrow_validation")).select(range(n))]


def _jsonl(path: Path, n: int | None = None, start: int = 0) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for i, line in enumerate(handle):
            if i < start:
                continue
            if n is not None and len(rows) >= n:
                break
            rows.append(json.loads(line))
    return rows


def hub_rows(shared: Path) -> dict[tuple[str, str | None, str], list[dict]]:
    """(hub id, config, split) -> rows in the hub's schema, converted from the shared copies."""
    out: dict[tuple[str, str | None, str], list[dict]] = {}
    out[("allenai/ai2_arc", "ARC-Easy", "test")] = _arrow(shared, "arc_easy", N)
    out[("allenai/ai2_arc", "ARC-Challenge", "test")] = _arrow(shared, "arc_challenge", N)
    out[("Rowan/hellaswag", None, "validation")] = _arrow(shared, "hellaswag", N)
    out[("allenai/winogrande", "winogrande_xl", "validation")] = _arrow(shared, "winogrande", N)
    out[("allenai/openbookqa", "main", "test")] = _arrow(shared, "openbookqa", N)
    boolq = _arrow(shared, "boolq", N)  # google/boolq fields -> super_glue's (label 0 = no, 1 = yes)
    out[("aps/super_glue", "boolq", "validation")] = [
        {"question": r["question"], "passage": r["passage"], "idx": i, "label": int(str(r["answer"]) == "True")} for i, r in enumerate(boolq)
    ]
    labels = (shared / "piqa" / "valid-labels.lst").read_text().split()
    out[("baber/piqa", None, "validation")] = [
        {"goal": r["goal"], "sol1": r["sol1"], "sol2": r["sol2"], "label": int(labels[i])}
        for i, r in enumerate(_jsonl(shared / "piqa" / "valid.jsonl", N))
    ]
    for subject in MMLU_SUBJECTS:
        with (shared / "mmlu" / f"{subject}_test.csv").open(encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle))[:8]
        out[("cais/mmlu", subject, "test")] = [
            {"question": q, "subject": subject, "choices": [a, b, c, d], "answer": "ABCD".index(k)} for q, a, b, c, d, k in rows
        ]
    out[("EleutherAI/lambada_openai", "default", "test")] = _jsonl(shared / "lambada_openai" / "lambada_test.jsonl", N)
    out[("openai/gsm8k", "main", "test")] = _jsonl(shared / "gsm8k" / "test.jsonl", 3)
    out[("openai/gsm8k", "main", "train")] = _jsonl(shared / "gsm8k" / "test.jsonl", 10, start=500)  # few-shot pool
    out[("google-research-datasets/nq_open", None, "validation")] = _jsonl(shared / "nq_open" / "NQ-open.dev.jsonl", 4)
    out[("EleutherAI/wikitext_document_level", "wikitext-2-raw-v1", "test")] = [
        {"page": r["text"]} for r in _jsonl(shared / "lambada_openai" / "lambada_test.jsonl", 4, start=100)
    ]
    return out


def write_copies(rows: dict, folder: Path) -> dict[str, str]:
    """The rows as local files (jsonl, one save_to_disk folder, one parquet) and the proctor mapping."""
    import datasets

    folder.mkdir(parents=True, exist_ok=True)
    mapping = {}
    for i, ((dataset, config, split), items) in enumerate(sorted(rows.items(), key=lambda kv: str(kv[0]))):
        base = folder / f"{i:02d}_{dataset.replace('/', '_')}_{config}_{split}"
        if dataset == "Rowan/hellaswag":
            datasets.DatasetDict({split: datasets.Dataset.from_list(items)}).save_to_disk(str(base))
            mapping[dataset] = str(base)  # the whole DatasetDict
            continue
        if dataset == "aps/super_glue":
            path = base.with_suffix(".parquet")
            datasets.Dataset.from_list(items).to_parquet(str(path))
        else:
            path = base.with_suffix(".jsonl")
            path.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
        mapping[f"{dataset}:{config or ''}:{split}"] = str(path)
    return mapping


@contextlib.contextmanager
def lm_eval_reads(rows: dict):
    """lm-eval's ``datasets.load_dataset`` answered from ``rows`` (a split with no rows is empty)."""
    import datasets

    real = datasets.load_dataset

    class Splits(dict):
        def __missing__(self, split):
            return datasets.Dataset.from_list([])

    def fake(path=None, name=None, **kwargs: Any):
        found = {s: datasets.Dataset.from_list(r) for (d, c, s), r in rows.items() if d == path and c == name}
        if not found:
            raise AssertionError(f"the test has no rows for {path} {name}")
        return Splits(found)

    datasets.load_dataset = fake
    try:
        yield
    finally:
        datasets.load_dataset = real


def run_lm_eval(model_dir: Path, tasks: list[str], rows: dict, limit: int, include: Path | None = None) -> dict:
    import lm_eval
    from lm_eval.tasks import TaskManager

    with lm_eval_reads(rows):
        return lm_eval.simple_evaluate(
            model="hf", model_args={"pretrained": str(model_dir), "dtype": "float32"}, tasks=tasks, limit=limit,
            device="cpu", batch_size=4, bootstrap_iters=0, log_samples=True,
            task_manager=TaskManager(include_path=str(include) if include else None),
        )
