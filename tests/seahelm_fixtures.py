"""Small SEA-HELM-format data written by the tests themselves."""

from __future__ import annotations

import json
from pathlib import Path

MT_BENCH_ID = "aisingapore/MultiTurn-Chat-MT-Bench"
MT_BENCH_BASELINE = "gpt-4.1-2025-04-14"  # the baseline model the shared mt_bench config names


def mt_bench_copy(tmp_path: Path) -> Path:
    """A two-question, two-turn local copy of MT-Bench (writing and math) in SEA-HELM's layout."""
    copy = tmp_path / "mtbench"
    (copy / "en").mkdir(parents=True)
    rows = [
        {"question_id": 1, "prompts": [{"text": "Name one fruit."}, {"text": "Now name one colour."}],
         "baselines": {MT_BENCH_BASELINE: ["Apple.", "Blue."]}, "metadata": {"language": "en", "category": "writing"}},
        {"question_id": 2, "prompts": [{"text": "What is 2+2?"}, {"text": "And 3+3?"}], "references": ["4", "6"],
         "baselines": {MT_BENCH_BASELINE: ["4", "6"]}, "metadata": {"language": "en", "category": "math"}},
    ]
    (copy / "en" / "eval.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    return copy
