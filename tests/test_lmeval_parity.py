"""Exact parity with lm-evaluation-harness 0.4.13 on its own task files: both harnesses run the same
catalogue tasks on the same rows (../shared/data converted to each dataset's hub schema) with the tiny
random Llama in float32 on the CPU. Prompts must be byte-identical, log-likelihoods within 1e-4,
per-sample metrics, task scores, group scores and greedy outputs identical."""

from __future__ import annotations

import json
import math

import pytest

from lmeval_parity import N, hub_rows, run_lm_eval, write_copies
from conftest import shared_path

pytest.importorskip("lm_eval")

TASKS = [
    "arc_easy", "arc_challenge", "hellaswag", "boolq", "piqa", "winogrande", "openbookqa",
    "lambada_openai", "gsm8k", "nq_open", "wikitext",
]
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


@pytest.fixture(scope="module")
def both(tiny_model_dir, tmp_path_factory):
    shared = shared_path("data")
    folder = tmp_path_factory.mktemp("lmeval-parity")
    rows = hub_rows(shared)
    mapping = write_copies(rows, folder / "copies")
    groups = folder / "groups"
    groups.mkdir()
    (groups / "mmlu_some.yaml").write_text(GROUP_YAML)
    theirs = run_lm_eval(tiny_model_dir, [*TASKS, "mmlu_some"], rows, limit=N, include=groups)

    from proctor.api import evaluate
    from proctor.models.hf import HFModel

    model = HFModel(tiny_model_dir, batch_size=4, name="tiny-llama")
    result = evaluate(
        [*(f"lm_eval:{t}" for t in TASKS), groups / "mmlu_some.yaml"], model, output_dir=folder / "run", limit=N,
        dialect_options={"lmeval_data": mapping},
    )
    samples: dict[str, dict] = {}
    for line in (folder / "run" / "samples.jsonl").read_text().splitlines():
        record = json.loads(line)
        samples.setdefault(record["task"], {})[record["doc_id"]] = record
    return theirs, result.results, samples


def _close(a, b, tol=1e-4):
    """Within 1e-4; a sum of log-probs above ~500 in magnitude is compared at float32's resolution
    (lm-eval sums in float32: one unit in the last place of -1800.0 is 1.2e-4)."""
    return abs(float(a) - float(b)) <= tol + 4e-7 * abs(float(a))


def _check_task(both, task: str) -> None:
    theirs, ours, samples = both
    logged = theirs["samples"][task]
    assert logged, task
    mine = samples[task]
    assert len(mine) == len({s["doc_id"] for s in logged})
    worst = 0.0
    for sample in logged:
        record = mine[sample["doc_id"]]
        filter_key = sample["filter"]
        # prompts byte-identical: every request's arguments (context, continuation / generation kwargs)
        assert json.loads(json.dumps(sample["arguments"])) == record["arguments"], (task, sample["doc_id"])
        for their_resps, our_resps in zip(sample["resps"], record["resps"], strict=True):
            for a, b in zip(their_resps, our_resps, strict=True):
                if isinstance(a, (list, tuple)):  # (log-likelihood, is_greedy)
                    assert _close(a[0], b[0]), (task, sample["doc_id"], a, b)
                    worst = max(worst, abs(a[0] - b[0]))
                    assert bool(a[1]) == bool(b[1]), (task, sample["doc_id"])
                elif isinstance(a, float):  # rolling log-likelihood: a sum over a whole document
                    assert _close(a, b), (task, sample["doc_id"], a, b)
                    worst = max(worst, abs(a - b))
                else:  # greedy output
                    assert a == b, (task, sample["doc_id"], a, b)
        for metric in sample["metrics"]:
            value, our = sample[metric], record["lmeval_metrics"][f"{metric},{filter_key}"]
            if isinstance(value, (list, tuple)):
                assert all(_close(x, y) for x, y in zip(value, our, strict=True)), (task, metric)
            elif metric in ("acc", "acc_norm", "exact_match"):
                assert value == our, (task, sample["doc_id"], metric)
            else:
                assert _close(value, our), (task, metric)
    print(f"{task}: max |Δ log-likelihood| = {worst:.2e}")
    their_scores = theirs["results"][task]
    our_scores = ours["tasks"][task]["metrics"]
    compared = 0
    for key, value in their_scores.items():
        if "," not in key or "_stderr" in key or not isinstance(value, (int, float)):
            continue
        our = our_scores[key]["value"]
        compared += 1
        if key.split(",")[0] in ("acc", "acc_norm", "exact_match"):
            assert our == value, (task, key, our, value)
        else:  # perplexities: exponentials of the log-likelihoods
            assert math.isclose(our, value, rel_tol=1e-4), (task, key, our, value)
    assert compared, task


@pytest.mark.parametrize("task", TASKS)
def test_task_matches_lm_eval(both, task):
    _check_task(both, task)


def test_mmlu_group_matches_lm_eval(both):
    theirs, ours, _ = both
    for task in ("mmlu_abstract_algebra", "mmlu_anatomy", "mmlu_marketing"):
        _check_task(both, task)
    group = ours["groups"]["mmlu_some"]
    assert sorted(group["tasks"]) == ["mmlu_abstract_algebra", "mmlu_anatomy", "mmlu_marketing"]
    # weight_by_size: true -> lm-eval's size-weighted mean, proctor's "micro"
    assert group["metrics"]["acc,none"]["micro"] == pytest.approx(theirs["results"]["mmlu_some"]["acc,none"], abs=1e-12)


def test_generation_outputs_are_not_trivial(both):
    """The greedy outputs compared above are real text (a check that the comparison is not vacuous)."""
    _, _, samples = both
    outputs = [r["resps"][0][0] for r in samples["gsm8k"].values()]
    assert any(len(o) > 5 for o in outputs)
