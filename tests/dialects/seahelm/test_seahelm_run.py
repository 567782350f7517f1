"""SEA-HELM task folders run unmodified: local data, hub data offline, the NusaX roll-up, MT-Bench judging."""

from __future__ import annotations

import json

import pytest

from proctor.api import evaluate, load_tasks
from proctor.core.errors import TaskDefinitionError
from tests.conftest import EXAMPLES, shared_path
from tests.support.fakes import FakeModel
from tests.support.seahelm_fixtures import mt_bench_copy


def _tree():
    return shared_path("examples", "seahelm", "seahelm_tasks")


def test_local_data_folder_runs_on_tiny_model(tiny_model, tmp_path):
    folder = _tree() / "nlu" / "paraphrase_identification"
    result = evaluate([folder], tiny_model, output_dir=tmp_path / "run", limit=4, export=False)
    assert set(result.tasks) == {"paraphrase/my", "paraphrase-logprobs/my"}  # tl's data file is absent: skipped
    gen = result.tasks["paraphrase/my"]["metrics"]
    assert 0 <= gen["normalized_accuracy"]["value"] <= 100 and gen["null_count"]["value"] <= 4
    lp = result.tasks["paraphrase-logprobs/my"]["metrics"]
    assert 0 <= lp["average_cumulative_probabilities"]["value"] <= 100
    roll = result.results["rollup"]
    assert set(roll["children"]) == {"my"} and set(roll["children"]["my"]["children"]) == {"nlu"}


def test_hub_folders_fail_offline_with_clear_message():
    with pytest.raises(TaskDefinitionError, match="dataset not available offline: aisingapore/NLU-Sentiment-Analysis"):
        load_tasks([_tree() / "nlu" / "sentiment_analysis"])
    with pytest.raises(TaskDefinitionError, match="dataset not available offline: aisingapore/MultiTurn-Chat-MT-Bench"):
        load_tasks([_tree() / "multi_turn" / "mt_bench" / "config.yaml"])


def test_whole_tree_loads_and_skips_what_is_unavailable():
    # the whole tree runs SEA-HELM's default set 'seahelm': none of its tasks has data in the shared copy
    with pytest.raises(TaskDefinitionError, match="not in task set 'seahelm'"):
        load_tasks([_tree()])
    names = [t.name for t in load_tasks([_tree()], options={"seahelm_tasks": "all"})]
    assert names == ["paraphrase/my", "paraphrase-logprobs/my"]


def test_hub_dataset_mapped_to_local_copy_runs(tmp_path):
    copy = tmp_path / "senti"
    (copy / "id").mkdir(parents=True)
    rows = [
        {"id": i, "label": label, "prompts": [{"text": t}], "metadata": {"language": "id"}}
        for i, (label, t) in enumerate([("Positif", "Bagus sekali"), ("Negatif", "Buruk"), ("Netral", "Biasa saja")])
    ]
    (copy / "id" / "eval.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (copy / "id" / "examples.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    options = {"seahelm_data": {"aisingapore/NLU-Sentiment-Analysis": str(copy)}}
    result = evaluate(
        [_tree() / "nlu" / "sentiment_analysis"],
        FakeModel(),
        select=["sentiment/id"],
        output_dir=tmp_path / "run",
        dialect_options=options,
        export=False,
    )
    assert result.tasks["sentiment/id"]["n_samples"] == 3
    assert "normalized_accuracy" in result.tasks["sentiment/id"]["metrics"]


def test_task_code_needs_trust_flag():
    folder = EXAMPLES / "seahelm" / "seahelm_tasks" / "nlu" / "nusax_sentiment"
    tasks = load_tasks([folder])
    from proctor.engine.prepare import prepare_task

    with pytest.raises(TaskDefinitionError, match="--trust-task-code"):
        prepare_task(tasks[0], {})


def test_nusax_sentiment_per_language_and_rollup(tmp_path):
    data = shared_path("data", "nusax_senti").parent  # the example's data, given as the run's data folder
    folder = EXAMPLES / "seahelm" / "seahelm_tasks" / "nlu" / "nusax_sentiment"
    result = evaluate(
        [folder],
        FakeModel(),
        select=["nusax-sentiment/*"],
        output_dir=tmp_path / "run",
        limit=12,
        variables={"PROCTOR_DATA": str(data)},
        dialect_options={"trust_task_code": True, "seahelm_runs": 3, "is_base_model": True},
        export=False,
    )
    roll = result.results["rollup"]
    assert set(roll["children"]) == {"id", "jv", "su", "en"}
    for lang, node in roll["children"].items():
        task = result.tasks[f"nusax-sentiment/{lang}"]["metrics"]["normalized_accuracy"]
        assert node["children"]["nlu"]["value"] == pytest.approx(task["value"])
        assert len(task["bootstrap"]) == 30 and task["n_runs"] == 3
    assert roll["value"] == pytest.approx(sum(n["value"] for n in roll["children"].values()) / 4)
    assert roll["stderr"] is not None


def test_pairwise_judge_mt_bench_end_to_end(tiny_model, tmp_path):
    options = {
        "seahelm_data": {"aisingapore/MultiTurn-Chat-MT-Bench": str(mt_bench_copy(tmp_path))},
        "seahelm_judge_generation": {"max_tokens": 8},
    }
    folder = _tree() / "multi_turn" / "mt_bench" / "config.yaml"
    tasks = [t for t in load_tasks([folder], options=options) if t.name == "mt-bench/en"]
    import dataclasses

    spec = tasks[0].spec.with_handler_options(config=_short(tasks[0].spec.handler.options.config))
    task = dataclasses.replace(tasks[0], spec=spec)
    result = evaluate([task], tiny_model, output_dir=tmp_path / "run", export=False)
    metrics = result.tasks["mt-bench/en"]["metrics"]
    # 2 questions x 2 turns x 2 orders = 8 verdicts; a random judge rarely writes [[A]]: retried, then errors
    assert metrics["judge_requests"]["value"] >= 8
    assert 0 <= metrics["weighted_win_rate"]["value"] <= 100
    assert metrics["judge_errors"]["value"] <= 8
    samples = [json.loads(line) for line in (result.run_dir / "samples.jsonl").read_text().splitlines()]
    assert len(samples[0]["responses"]) == 2 and len(samples[0]["judgements"]) == 2


def _short(config):
    lang = dict(config["languages"]["en"])
    lang["max_tokens"] = 8
    return {**config, "languages": {"en": lang}}


@pytest.mark.slow
def test_local_folder_on_default_model(tmp_path):
    folder = _tree() / "nlu" / "paraphrase_identification"
    result = evaluate([folder], "smollm2", select=["paraphrase/my"], output_dir=tmp_path / "run", limit=2, export=False)
    assert result.tasks["paraphrase/my"]["n_samples"] == 2
    assert "rollup" in result.results
