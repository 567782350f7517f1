"""SEA-HELM task sets (task_config.yaml), their aggregation, audio/image tasks and per-language data: what ``ls``
and ``run`` agree on. The tree is written in upstream's layout (seahelm_fixtures.seahelm_tree)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from proctor.api import evaluate, load_tasks
from proctor.cli import app
from proctor.core.errors import TaskDefinitionError
from tests.support.fakes import FakeModel
from tests.support.seahelm_fixtures import seahelm_tree


def _seahelm_aggregate(metrics: dict, config: dict) -> dict:
    """SEA-HELM's src/aggregate_metrics.py (non-LINDSEA part), written out: competency = mean over tasks and
    aggregation groups (macro: mean of the group's tasks), language = mean of competencies, total = mean of
    languages."""
    out = {}
    for lang, competencies in metrics.items():
        totals = {}
        for competency, tasks in competencies.items():
            scores, groups = {}, {}
            for task, results in tasks.items():
                group = config[task].get("aggregation_group")
                if group:
                    groups.setdefault(group, []).append(results[config[task]["metric"]])
                    scores[group] = sum(groups[group]) / len(groups[group])
                else:
                    scores[task] = results[config[task]["metric"]]
            totals[competency] = sum(scores.values()) / len(scores)
        out[lang] = {"competencies": totals, "total": sum(totals.values()) / len(totals)}
    out_total = sum(v["total"] for v in out.values()) / len(out)
    return {"langs": out, "total": out_total}


def _seahelm_metrics_dict(result) -> tuple[dict, dict]:
    """proctor's per-task results in SEA-HELM's {lang: {competency: {task: {metric: value}}}} shape."""
    metrics, config = {}, {}
    for name, task in result.tasks.items():
        task_id, lang = name.rsplit("/", 1)
        competency = task["rollup"]["levels"]["competency"]
        metrics.setdefault(lang, {}).setdefault(competency, {})[task_id] = {
            k: v["value"] for k, v in task["metrics"].items()
        }
    return metrics, config


@pytest.mark.parametrize(
    "task_set, expected",
    [
        (None, {"causal/id", "nli/id", "nli/vi", "sentiment/id"}),  # SEA-HELM's default set 'seahelm'
        ("seahelm_logprobs", {"causal-logprobs/id", "nli-logprobs/id", "nli-logprobs/vi", "sentiment/id"}),
        ("everything_id", {"causal/id", "causal-logprobs/id", "nli/id", "nli-logprobs/id", "sentiment/id"}),
        (
            "seahelm,seahelm_logprobs",
            {
                "causal/id",
                "causal-logprobs/id",
                "nli/id",
                "nli/vi",
                "nli-logprobs/id",
                "nli-logprobs/vi",
                "sentiment/id",
            },
        ),
        (
            "all",
            {
                "causal/id",
                "causal-logprobs/id",
                "nli/id",
                "nli/vi",
                "nli-logprobs/id",
                "nli-logprobs/vi",
                "sentiment/id",
            },
        ),
    ],
)
def test_task_set_chooses_tasks(tmp_path, task_set, expected):
    tasks, options = seahelm_tree(tmp_path)
    if task_set is not None:
        options["seahelm_tasks"] = task_set
    assert {t.name for t in load_tasks([tasks], options=options)} == expected


def test_unknown_task_set_is_an_error_naming_the_sets(tmp_path):
    tasks, options = seahelm_tree(tmp_path)
    with pytest.raises(TaskDefinitionError, match="unknown SEA-HELM task set 'nope'.*seahelm, seahelm_logprobs"):
        load_tasks([tasks], options={**options, "seahelm_tasks": "nope"})


def test_default_set_aggregates_as_seahelm(tmp_path):
    """No generative task is averaged with its -logprobs twin: the competency, language and overall scores are
    SEA-HELM's aggregate_metrics over the 'seahelm' set."""
    from proctor.dialects.seahelm.config import load_tree

    tasks, options = seahelm_tree(tmp_path)
    result = evaluate([tasks], FakeModel(), output_dir=tmp_path / "run", export=False, dialect_options=options)
    assert not any("logprobs" in name for name in result.tasks)
    metrics, _ = _seahelm_metrics_dict(result)
    config = load_tree(tasks).tasks
    want = _seahelm_aggregate(metrics, config)
    roll = result.results["rollup"]
    assert roll["value"] == pytest.approx(want["total"])
    for lang, node in want["langs"].items():
        assert roll["children"][lang]["value"] == pytest.approx(node["total"])
        for competency, value in node["competencies"].items():
            assert roll["children"][lang]["children"][competency]["value"] == pytest.approx(value)
    # id has nlr (causal group + nli) and nlu (sentiment); vi only nlr
    assert set(roll["children"]["id"]["children"]) == {"nlr", "nlu"}


def test_logprobs_set_aggregates_the_twins_only(tmp_path):
    tasks, options = seahelm_tree(tmp_path)
    result = evaluate(
        [tasks],
        FakeModel(),
        output_dir=tmp_path / "run",
        export=False,
        dialect_options={**options, "seahelm_tasks": "seahelm_logprobs"},
    )
    nlr = result.results["rollup"]["children"]["id"]["children"]["nlr"]
    lp = [result.metric(f"{t}/id", "average_cumulative_probabilities") for t in ("causal-logprobs", "nli-logprobs")]
    assert nlr["value"] == pytest.approx(sum(lp) / 2)


def test_audio_task_is_reported_by_name_in_ls_and_run_and_image_tasks_are_listed(tmp_path):
    tasks, options = seahelm_tree(tmp_path)
    cli = CliRunner()
    listed = cli.invoke(app, ["ls", str(tasks), "--seahelm-tasks", "audio"])
    shown = " ".join((listed.output + str(listed.exception or "")).split())  # the CLI's error line, or the raised error
    assert listed.exit_code != 0 and "speechqa/en: audio task (SpeechQADataloader)" in shown
    with pytest.raises(TaskDefinitionError, match=r"speechqa/en: audio task \(SpeechQADataloader\)"):
        evaluate(
            [tasks],
            FakeModel(),
            output_dir=tmp_path / "run",
            export=False,
            dialect_options={**options, "seahelm_tasks": "audio"},
        )
    # beside runnable tasks it is left out of both, with the reason kept; image tasks run (vision-language models)
    notes: list[str] = []
    names = {t.name for t in load_tasks([tasks], options={**options, "seahelm_tasks": "all"}, notes=notes)}
    assert "speechqa/en" not in names and any("speechqa/en: audio task" in s for s in notes)
    # an image task is not refused for its modality: here only its hub data is missing (ls and run alike)
    images = cli.invoke(app, ["ls", str(tasks), "--seahelm-tasks", "vision"])
    shown = " ".join((images.output + str(images.exception or "")).split())
    assert "mmstar/en: dataset not available offline: Lin-Chen/MMStar" in shown and "image task" not in shown


def test_mapped_folder_lacking_a_language_is_skipped_alike_by_ls_and_run(tmp_path):
    tasks, options = seahelm_tree(tmp_path, nli_langs=("id",))
    notes: list[str] = []
    listed = {t.name for t in load_tasks([tasks], options=options, notes=notes)}
    assert "nli/vi" not in listed and "nli/id" in listed
    assert any("nli/vi" in s and "no 'eval' data for language 'vi'" in s for s in notes)
    result = evaluate([tasks], FakeModel(), output_dir=tmp_path / "run", export=False, dialect_options=options)
    assert set(result.tasks) == listed
    # nothing left to run: ls and run stop with the same reason
    (tasks / "task_config.yaml").write_text("vi_only:\n  vi: [nli]\n", encoding="utf-8")
    only_vi = {**options, "seahelm_tasks": "vi_only"}
    with pytest.raises(TaskDefinitionError, match="no 'eval' data for language 'vi'"):
        load_tasks([tasks], options=only_vi)
    with pytest.raises(TaskDefinitionError, match="no 'eval' data for language 'vi'"):
        evaluate([tasks], FakeModel(), output_dir=tmp_path / "run2", export=False, dialect_options=only_vi)
