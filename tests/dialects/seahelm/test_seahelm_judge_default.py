"""MT-Bench pairwise judging end to end with the default model (SmolLM2) as both the evaluated model
and the judge: the real mt_bench config, a two-question local copy of its hub data."""

from __future__ import annotations

import json

import pytest

from proctor.api import evaluate
from tests.conftest import shared_path
from tests.support.seahelm_fixtures import mt_bench_copy

JUDGE_MARK = "impartial judge"  # every MT-Bench judge system prompt says it; answers never do


class _Recorder:
    """Wraps the model's generate to see every batch it is sent (the judge's are recognisable)."""

    def __init__(self, model):
        self.model, self.batches = model, []
        self._generate = model.generate
        model.generate = self

    def __call__(self, requests, progress=None):
        self.batches.append([JUDGE_MARK in r.prompt for r in requests])
        return self._generate(requests, progress)

    def judge_batches(self):
        return [sum(b) for b in self.batches if any(b)]


def _final(first: str, second: str) -> str:  # SEA-HELM's rule with ties allowed (the config's ties_allowed: true)
    return "T" if first == "T" or first != second else first


@pytest.mark.slow
def test_pairwise_judge_with_default_model_as_judge(tmp_path):
    from proctor.models.registry import load_model

    mt_bench = shared_path("examples", "seahelm", "seahelm_tasks", "multi_turn", "mt_bench")
    model = load_model("smollm2", batch_size=8)
    recorder = _Recorder(model)
    options = {
        "seahelm_data": {"aisingapore/MultiTurn-Chat-MT-Bench": str(mt_bench_copy(tmp_path))},
        "seahelm_max_tokens": 24,
        "seahelm_judge_generation": {"max_tokens": 48},
    }
    cache = tmp_path / "cache"
    first = evaluate(
        [mt_bench],
        model,
        select=["mt-bench/en"],
        output_dir=tmp_path / "run1",
        dialect_options=options,
        cache=cache,
        export=False,
    )
    metrics = first.tasks["mt-bench/en"]["metrics"]
    samples = [json.loads(line) for line in (first.run_dir / "samples.jsonl").read_text().splitlines()]

    # both orders per turn: 2 questions x 2 turns x 2 orders = 8 first-pass verdicts, sent as one batch
    judge_batches = recorder.judge_batches()
    assert judge_batches[0] == 8
    verdicts = [v for s in samples for turn in s["judgements"] for v in turn["verdicts"]]
    assert len(verdicts) == 8 and set(verdicts) <= {"W", "L", "T", "ERROR"}
    # each unparseable verdict is asked again at most 3 times, then counted as an error
    errors = verdicts.count("ERROR")
    assert metrics["judge_errors"]["value"] == errors
    assert 8 <= metrics["judge_requests"]["value"] <= 8 + 3 * 8
    assert sum(judge_batches) <= 8 + 3 * 8 and len(judge_batches) <= 4
    if errors:
        assert len(judge_batches) == 4  # the bounded retries did run
    # the consistency rule and the weighted win rate, recomputed from the stored judgements
    by_category: dict[str, list[float]] = {}
    for sample, category in zip(samples, ["writing", "math"]):
        assert len(sample["responses"]) == 2 and len(sample["judgements"]) == 2
        for turn in sample["judgements"]:
            assert turn["final"] == _final(*turn["verdicts"])
            by_category.setdefault(category, []).append({"W": 1.0, "T": 0.5}.get(turn["final"], 0.0))
    rates = {c: 100 * sum(v) / len(v) for c, v in by_category.items()}
    assert metrics["weighted_win_rate"]["value"] == pytest.approx(sum(rates.values()) / len(rates))

    # rerun in a fresh folder over the same cache: answers and verdicts come from the cache
    calls_before = len(recorder.batches)
    second = evaluate(
        [mt_bench],
        model,
        select=["mt-bench/en"],
        output_dir=tmp_path / "run2",
        dialect_options=options,
        cache=cache,
        export=False,
    )
    assert len(recorder.batches) == calls_before, "the rerun sent the model new requests"
    again = second.tasks["mt-bench/en"]["metrics"]
    assert again["weighted_win_rate"]["value"] == metrics["weighted_win_rate"]["value"]
    assert again["judge_errors"]["value"] == metrics["judge_errors"]["value"]
