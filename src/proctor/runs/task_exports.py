"""Extra files a task asks for in its run folder (``exports:`` in the spec), by registered format.

``choices_csv`` writes one row per sample and choice: ``text,query,logp,score`` (probsem's results
table): ``text`` from a template over the sample's fields, ``query`` the choice, ``logp`` the softmax
input (log-prob after per-token normalisation and temperature), ``score`` the probability. Under the
generation formulation (``mc_format: generate``) ``logp`` is NaN and ``score`` is 1 for the chosen choice.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any, Callable

Exporter = Callable[..., list[str]]  # (prepared, outcome, run_dir, model_name, **options) -> files written
EXPORTERS: dict[str, Exporter] = {}


def register_exporter(name: str) -> Callable[[Exporter], Exporter]:
    def decorator(fn: Exporter) -> Exporter:
        EXPORTERS[name] = fn
        return fn

    return decorator


def get_exporter(name: str) -> Exporter:
    if name not in EXPORTERS:
        raise KeyError(f"unknown export format '{name}'; available: {', '.join(sorted(EXPORTERS))}")
    return EXPORTERS[name]


def sanitize_filename(name: str) -> str:
    """probsem's rule (pathvalidate): characters not allowed in file names become '-'."""
    return re.sub(r'[/<>:"\\|?*\x00-\x1f]', "-", name)


def write_task_exports(prepared: Any, outcome: Any, run_dir: Path, model_name: str) -> list[str]:
    written: list[str] = []
    for export in prepared.task.spec.exports:
        written += get_exporter(export.format)(prepared, outcome, run_dir, model_name, **export.options)
    return written


@register_exporter("choices_csv")
def _choices_csv(prepared: Any, outcome: Any, run_dir: Path, model_name: str, *, file: str, text: str = "{{ text }}") -> list[str]:
    from proctor.core.templates import compile_template

    template = compile_template(text, origin=str(prepared.task.file), field="exports.text")
    name = sanitize_filename(file.replace("{model}", model_name).replace("{task}", prepared.task.name))
    path = run_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "query", "logp", "score"])
        for sample, record in zip(prepared.samples, outcome.records):
            sample_text = template.render(sample.sample.fields, file=sample.sample.file, row=sample.sample.row)
            # the generation formulation (chat-only models) has no log-probs: logp is NaN, score one-hot
            weights = record.get("weights", record.get("logprobs")) or [float("nan")] * len(record["choices"])
            for choice, logp, score in zip(record["choices"], weights, record["distribution"]):
                writer.writerow([sample_text, choice, repr(float(logp)), repr(float(score))])
    return [name]
