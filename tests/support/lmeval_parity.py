"""Shared by the lm-eval dialect tests: local copies of ../shared/data in each dataset's hub schema,
and lm-evaluation-harness 0.4.13 itself run on them (its ``datasets.load_dataset`` answered from the
same rows by a loader written here, independent of proctor's mapping code)."""

from __future__ import annotations

import contextlib
import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

N = 20  # rows per multiple-choice set: enough to see differences, fast on the tiny model

MMLU_SUBJECTS = ("abstract_algebra", "anatomy", "marketing")
XCOPA = ("zh", "ta")


# Task files beside the catalogue's (one --include_path folder for every lm-eval run here).
GROUP_YAML = """group: mmlu_some
task:
  - mmlu_abstract_algebra
  - mmlu_anatomy
  - mmlu_marketing
aggregate_metric_list:
  - metric: acc
    weight_by_size: true
metadata:
  version: 1
"""
# Corpus metrics whose standard errors lm-eval bootstraps (bleu / chrf / ter, f1 / mcc), on rows mapped below.
# The random model answers a run of 16 colons; references ending in it score differently by their length.
BLEU_YAML = """task: nq_open_bleu
dataset_path: google-research-datasets/nq_open
output_type: generate_until
validation_split: validation
doc_to_text: "Q: {{question}}?\\nA:"
doc_to_target: "{{answer[0]}} ::::::::::::::::"
generation_kwargs:
  until: ["\\n"]
  do_sample: false
  max_gen_toks: 16
metric_list:
  - metric: bleu
  - metric: chrf
  - metric: ter
metadata:
  version: 1
"""
F1_YAML = """task: boolq_f1_mcc
dataset_path: aps/super_glue
dataset_name: boolq
output_type: multiple_choice
validation_split: validation
doc_to_text: "{{passage}}\\nQuestion: {{question}}?\\nAnswer:"
doc_to_target: label
doc_to_choice: ["no", "yes"]
metric_list:
  - metric: f1
  - metric: mcc
  - metric: acc
metadata:
  version: 1
"""
# GSM8K as the catalogue has it (few-shot split, stop strings, filters), answers cut to 16 tokens: the random
# model never stops
GSM8K_SHORT_YAML = """include: {catalogue}/gsm8k/gsm8k.yaml
task: gsm8k_short
generation_kwargs:
  until: ["Question:", "</s>", "<|im_end|>"]
  do_sample: false
  temperature: 0.0
  max_gen_toks: 16
"""


@dataclass(frozen=True)
class Workspace:
    folder: Path
    model: Path  # parity_model
    rows: dict  # hub_rows
    mapping: dict  # write_copies: proctor's --lmeval-data
    tasks: Path  # the task files above


_WORKSPACE: list[Workspace] = []


def workspace(tokenizer_dir: Path, tmp_path_factory: Any) -> Workspace:
    """Built once per test process and shared by the lm-eval test modules (lm-eval indexes an include
    folder in seconds, once: see ``_manager``)."""
    if not _WORKSPACE:
        from proctor.dialects.lmeval.library import catalogue_root
        from tests.conftest import shared_path

        shared = shared_path("data")
        folder = tmp_path_factory.mktemp("lmeval-workspace")
        rows = hub_rows(shared)
        tasks = folder / "tasks"
        tasks.mkdir()
        for name, text in (
            ("mmlu_some", GROUP_YAML),
            ("nq_open_bleu", BLEU_YAML),
            ("boolq_f1_mcc", F1_YAML),
            ("gsm8k_short", GSM8K_SHORT_YAML.format(catalogue=catalogue_root())),
        ):
            (tasks / f"{name}.yaml").write_text(text)
        _WORKSPACE.append(
            Workspace(
                folder,
                parity_model(tokenizer_dir, folder / "model"),
                rows,
                write_copies(rows, folder / "copies"),
                tasks,
            )
        )
    return _WORKSPACE[0]


def parity_model(tokenizer_dir: Path, folder: Path) -> Path:
    """A 2-layer random Llama (hidden 64, SmolLM2 tokenizer) at the default initialisation.

    Its predictions are near-uniform, so a token's log-probability is about -log(49152) = -10.8:
    larger in magnitude than a trained LM's (about -2 to -4 per token), never smaller. The shared
    ``tiny_model`` fixture multiplies the embeddings by 40 (peaked predictions, -25 to -56 per token,
    sums down to -5,200); at such sums one float32 unit in the last place of lm-eval's own result is
    2.4e-4 to 4.9e-4, so no float32 implementation could agree with it to 1e-4 (docs/lmeval.md)."""
    from transformers import AutoTokenizer

    from tests.support.random_llama import TINY, save_random_llama

    return save_random_llama(folder, AutoTokenizer.from_pretrained(tokenizer_dir), **TINY)


def _arrow(shared: Path, name: str, n: int, start: int = 0) -> list[dict]:
    import datasets

    data = datasets.load_from_disk(str(shared / name / "hf_arrow_validation"), keep_in_memory=True)
    return [dict(row) for row in data.select(range(start, start + n))]


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
    # few-shot pools (train splits), from rows the evaluated splits above do not use
    out[("allenai/ai2_arc", "ARC-Easy", "train")] = _arrow(shared, "arc_easy", 10, start=100)
    out[("allenai/winogrande", "winogrande_xl", "train")] = _arrow(shared, "winogrande", 10, start=100)
    out[("allenai/openbookqa", "main", "test")] = _arrow(shared, "openbookqa", N)
    boolq = _arrow(shared, "boolq", N)  # google/boolq fields -> super_glue's (label 0 = no, 1 = yes)
    out[("aps/super_glue", "boolq", "validation")] = [
        {"question": r["question"], "passage": r["passage"], "idx": i, "label": int(str(r["answer"]) == "True")}
        for i, r in enumerate(boolq)
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
            {"question": q, "subject": subject, "choices": [a, b, c, d], "answer": "ABCD".index(k)}
            for q, a, b, c, d, k in rows
        ]
    for language in XCOPA:  # the two tasks whose numbers once moved with the run's size (issue 47)
        for split, stem in (("test", "test"), ("validation", "val")):
            out[("cambridgeltl/xcopa", language, split)] = _jsonl(shared / "xcopa" / f"{stem}.{language}.jsonl", N)
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


_MANAGERS: dict = {}


def _manager(TaskManager, include: Path | None):
    """lm-eval's task index, built once per include folder (indexing the catalogue takes seconds)."""
    key = str(include) if include else None
    if key not in _MANAGERS:
        _MANAGERS[key] = TaskManager(include_path=key)
    return _MANAGERS[key]


def run_lm_eval(
    model_dir: Path,
    tasks: list[str],
    rows: dict,
    limit: int,
    include: Path | None = None,
    bootstrap_iters: int = 0,
    **options: Any,
) -> dict:
    """lm-eval's ``simple_evaluate`` (``hf`` model, float32, CPU); ``options``: its other arguments
    (``apply_chat_template``, ``fewshot_as_multiturn``, ``system_instruction``, ``num_fewshot``)."""
    import os

    import lm_eval
    from lm_eval.tasks import TaskManager

    saved = os.environ.get("DISABLE_MULTIPROC")
    os.environ["DISABLE_MULTIPROC"] = "1"  # lm-eval's bootstrap in this process (the same resamples as its pool's)
    try:
        with lm_eval_reads(rows):
            return lm_eval.simple_evaluate(
                model="hf",
                model_args={"pretrained": str(model_dir), "dtype": "float32"},
                tasks=tasks,
                limit=limit,
                device="cpu",
                batch_size=4,
                bootstrap_iters=bootstrap_iters,
                log_samples=True,
                task_manager=_manager(TaskManager, include),
                **options,
            )
    finally:
        if saved is None:
            os.environ.pop("DISABLE_MULTIPROC", None)
        else:
            os.environ["DISABLE_MULTIPROC"] = saved
