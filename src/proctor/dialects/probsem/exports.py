"""probsem's results table as a task export (``exports: [{format: choices_csv, ...}]``).

``choices_csv`` writes one row per sample and choice: ``text,query,logp,score`` (probsem's results
table): ``text`` from a template over the sample's fields (``text``), joined by newlines between the
``pretext`` and ``posttext`` options where they are not empty (probsem's suite text), ``query`` the
choice, ``logp`` the softmax input (log-prob after per-token normalisation and temperature), ``score``
the probability. Under the generation formulation (``mc_format: generate``) ``logp`` is NaN and
``score`` is 1 for the chosen choice.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any


def sanitize_filename(name: str) -> str:
    """probsem's rule (pathvalidate): characters not allowed in file names become '-'."""
    return re.sub(r'[/<>:"\\|?*\x00-\x1f]', "-", name)


def choices_csv(
    prepared: Any,  # engine.prepare.PreparedTask (a dialect imports no engine module)
    outcome: Any,  # engine.outcomes.TaskOutcome
    run_dir: Path,
    model_name: str,
    *,
    file: str,
    text: str = "{{ text }}",
    pretext: str = "",
    posttext: str = "",
) -> list[str]:
    from proctor.core.templates import compile_template

    template = compile_template(text, origin=str(prepared.task.file), field="exports.text")
    name = sanitize_filename(file.replace("{model}", model_name).replace("{task}", prepared.task.name))
    path = run_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "query", "logp", "score"])
        for sample, record in zip(prepared.samples, outcome.records):
            rendered = template.render(sample.sample.fields, file=sample.sample.file, row=sample.sample.row)
            sample_text = "\n".join(part for part in (pretext, rendered, posttext) if part)
            # the generation formulation (chat-only models) has no log-probs: logp is NaN, score one-hot
            weights = record.get("weights", record.get("logprobs")) or [float("nan")] * len(record["choices"])
            for choice, logp, score in zip(record["choices"], weights, record["distribution"]):
                writer.writerow([sample_text, choice, repr(float(logp)), repr(float(score))])
    return [name]
