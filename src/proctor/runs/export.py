"""Exports of a run folder: lm-evaluation-harness's results layout, and samples as parquet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from proctor.errors import ProctorError
from proctor.runs.results import write_json_atomic

LM_EVAL_FILE = "results_lm_eval.json"
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


def _metric_block(metrics: dict, alias: str) -> dict:
    block: dict[str, Any] = {"alias": alias}
    for name, entry in metrics.items():
        block[f"{name},none"] = entry["value"]
        block[f"{name}_stderr,none"] = entry["stderr"] if entry["stderr"] is not None else "N/A"
    return block


def _original(task: dict) -> int:
    data = task.get("data") or {}
    if "n_rows" in data:
        return int(data["n_rows"]) - int(data.get("n_filtered") or 0)
    return int(task["n_samples"])


def lm_eval_results(results: dict) -> dict:
    """The results in lm-evaluation-harness 0.4's results JSON layout (``results``, ``groups``, ...)."""
    tasks = results.get("tasks", {})
    groups = results.get("groups", {})
    model = results.get("model", {})
    out: dict[str, Any] = {
        "results": {name: _metric_block(t["metrics"], name) for name, t in tasks.items()},
        "groups": {name: _metric_block(g["metrics"], name) for name, g in groups.items()},
        "group_subtasks": {**{name: list(g["tasks"]) for name, g in groups.items()}, **{n: [] for n in tasks if n not in groups}},
        "configs": {
            name: {
                "task": name,
                "output_type": {"loglikelihood": "multiple_choice", "generate": "generate_until", "rolling_loglikelihood": "loglikelihood_rolling"}.get(
                    t.get("requests", {}).get("type"), t.get("kind")
                ),
                "metadata": {"version": t.get("version"), "proctor_hash": t.get("hash"), "dialect": t.get("dialect")},
            }
            for name, t in tasks.items()
        },
        "versions": {name: t.get("version") for name, t in tasks.items()},
        "n-shot": {name: 0 for name in tasks},
        "higher_is_better": {name: t.get("higher_is_better", {}) for name, t in tasks.items()},
        "n-samples": {
            name: {"original": _original(t), "effective": t["n_samples"]} for name, t in tasks.items()
        },
        "config": {
            "model": model.get("backend", "proctor"),
            "model_args": f"pretrained={model.get('path', model.get('model'))},dtype={model.get('dtype')}",
            "model_num_parameters": None,
            "model_dtype": model.get("dtype"),
            "model_revision": model.get("revision"),
            "batch_size": None,
            "device": None,
        },
        "git_hash": None,
        "date": results.get("created"),
        "model_name": model.get("model"),
        "model_name_sanitized": str(model.get("model", "")).replace("/", "__"),
        "total_evaluation_time_seconds": str(results.get("timing", {}).get("total_seconds", "")),
        "proctor": {"version": results.get("proctor_version"), "model_fingerprint": model},
    }
    return out


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


def write_lm_eval(run_dir: Path, path: Path | None = None) -> Path:
    target = path or Path(run_dir) / LM_EVAL_FILE
    write_json_atomic(target, lm_eval_results(load_results(Path(run_dir))))
    return target


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
