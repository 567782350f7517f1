"""Exports of a run folder: lm-evaluation-harness's results layout, and samples as parquet."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from proctor.errors import ProctorError
from proctor.runs.lm_eval_layout import SourceRows, results_file, sample_line, stamp, task_specs
from proctor.runs.results import write_json_atomic

LM_EVAL_DIR = "lm_eval"  # lm-eval's EvaluationTracker layout (runs/lm_eval_layout.py)
PARQUET_FILE = "samples.parquet"


def load_results(run_dir: Path) -> dict:
    path = Path(run_dir) / "results.json"
    if not path.exists():
        raise ProctorError(f"{run_dir} is not a run folder: no results.json")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ProctorError(f"{path} is not valid JSON: {exc}") from None


def iter_samples(run_dir: Path) -> Iterator[dict]:
    path = Path(run_dir) / "samples.jsonl"
    if not path.exists():
        return
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except ValueError:
                raise ProctorError(f"{path}:{number}: not a JSON line (an interrupted write? re-run to rebuild it)") from None


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def write_parquet(run_dir: Path, path: Path | None = None) -> Path:
    """samples.jsonl as a flat table: one row per sample, a float column per metric."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    run_dir = Path(run_dir)
    records = list(iter_samples(run_dir))
    metric_names = sorted({m for r in records for m in (r.get("metrics") or {})})
    columns: dict[str, list] = {
        name: []
        for name in ("task", "id", "source_file", "source_row", "prompt", "target", "prediction", "choices", "distribution", "generation", "record")
    }
    metric_columns: dict[str, list] = {f"metric_{m}": [] for m in metric_names}
    for r in records:
        prompt = r.get("rendered_prompt") or r.get("prompt")
        columns["task"].append(r.get("task"))
        columns["id"].append(str(r.get("id")))
        columns["source_file"].append((r.get("source") or {}).get("file"))
        columns["source_row"].append((r.get("source") or {}).get("row"))
        columns["prompt"].append(prompt if isinstance(prompt, str) or prompt is None else json.dumps(prompt, ensure_ascii=False))
        columns["target"].append(_json_or_none(r.get("target")))
        columns["prediction"].append(_json_or_none(r.get("prediction", r.get("extracted"))))
        columns["choices"].append([str(c) for c in r["choices"]] if r.get("choices") is not None else None)
        columns["distribution"].append([float(x) for x in r["distribution"]] if r.get("distribution") is not None else None)
        columns["generation"].append(r.get("generation"))
        columns["record"].append(json.dumps(r, ensure_ascii=False))
        for m in metric_names:
            value = (r.get("metrics") or {}).get(m)
            metric_columns[f"metric_{m}"].append(float(value) if isinstance(value, (int, float)) else None)
    schema = pa.schema(
        [
            ("task", pa.string()), ("id", pa.string()), ("source_file", pa.string()), ("source_row", pa.int64()),
            ("prompt", pa.string()), ("target", pa.string()), ("prediction", pa.string()),
            ("choices", pa.list_(pa.string())), ("distribution", pa.list_(pa.float64())), ("generation", pa.string()),
            ("record", pa.string()),
            *[(name, pa.float64()) for name in metric_columns],
        ]
    )
    table = pa.table({**columns, **metric_columns}, schema=schema)
    target = path or run_dir / PARQUET_FILE
    tmp = target.with_name(f".{target.name}.tmp")
    pq.write_table(table, tmp)
    tmp.replace(target)
    return target


def write_lm_eval(run_dir: Path, folder: Path | None = None) -> Path:
    """lm-eval's layout under ``RUN_DIR/lm_eval/<model>/``: results_<date>.json and samples_<task>_<date>.jsonl.

    The date is the run's start, so exporting again rewrites the same files; other files that an
    earlier export of this run left there are removed.
    """
    run_dir = Path(run_dir)
    results = load_results(run_dir)
    specs = task_specs(run_dir, results.get("tasks", {}))
    layout = results_file(results, specs)
    target = folder or run_dir / LM_EVAL_DIR / layout["model_name_sanitized"]
    date = stamp(results.get("created"))
    target.mkdir(parents=True, exist_ok=True)
    keep = {f"results_{date}.json"}
    rows = SourceRows()
    by_task: dict[str, list[dict]] = {}
    for record in iter_samples(run_dir):
        by_task.setdefault(record.get("task"), []).append(record)
    for name, records in by_task.items():
        file = target / f"samples_{re.sub(r'[^A-Za-z0-9_.-]', '_', str(name))}_{date}.jsonl"
        keep.add(file.name)
        with file.open("w", encoding="utf-8") as handle:
            for i, record in enumerate(records):
                handle.write(json.dumps(sample_line(i, record, specs.get(name) or {}, rows.doc(record)), ensure_ascii=False, default=str) + "\n")
    for old in target.glob("*.json*"):
        if old.name not in keep and (old.name.startswith("results_") or old.name.startswith("samples_")):
            old.unlink()
    path = target / f"results_{date}.json"
    write_json_atomic(path, layout)
    return path


def write_exports(run_dir: Path, formats: tuple[str, ...] = ("lm-eval", "parquet")) -> list[Path]:
    written = []
    for fmt in formats:
        if fmt == "lm-eval":
            written.append(write_lm_eval(run_dir))
        elif fmt == "parquet":
            written.append(write_parquet(run_dir))
        else:
            raise ProctorError(f"unknown export format '{fmt}'; choose lm-eval or parquet")
    return written
