"""Real questions that share passages: BoolQ's validation rows (../shared/data/boolq), several per passage."""

from __future__ import annotations

import json
from collections import Counter

from tests.conftest import shared_path


def boolq_rows(n_shared: int = 24, n_alone: int = 12) -> list[dict]:
    """BoolQ rows as {id, passage, question, choices, gold}: the first ``n_shared`` rows whose passage other rows
    share (kept together, as they come) and the first ``n_alone`` rows whose passage is theirs alone."""
    path = shared_path("data", "boolq", "boolq.jsonl")
    rows = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        raw = json.loads(line)
        passage, _, question = raw["query"].partition("\nQuestion:")
        rows.append({"id": f"q{i}", "passage": passage, "question": question.strip(), **raw})
    counts = Counter(r["passage"] for r in rows)
    shared = sorted((r for r in rows if counts[r["passage"]] > 1), key=lambda r: r["passage"])[:n_shared]
    alone = [r for r in rows if counts[r["passage"]] == 1][:n_alone]
    return [{k: r[k] for k in ("id", "passage", "question", "query", "choices", "gold")} for r in shared + alone]
