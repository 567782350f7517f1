"""One way into a run: ``evaluate``'s keywords and ``proctor run``'s flags build the same typed ``RunConfig``,
run by ``api.run_evaluation``; results.json is built as typed ``RunResults`` and written in the file's order."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from proctor.api import evaluate, run_evaluation
from proctor.core.errors import ProctorError
from proctor.core.run_overrides import RunOverrides
from proctor.engine.run_config import ModelConfig, OutputOptions, PrepareOptions, RowLimit, RunConfig
from proctor.runs.results_schema import Environment, GroupResult, RollupNode, RunTiming
from proctor.runs.run_results import RunResults
from proctor.runs.task_result import TaskResult
from tests.support.fakes import FakeModel, write_tasks

pytestmark = pytest.mark.fast


def _masked(run_dir) -> str:
    """results.json with what differs between two runs (times, the folder) masked, its order kept."""
    data = json.loads((run_dir / "results.json").read_text())
    data["created"] = data["run_id"] = "X"
    data["timing"] = {k: "X" for k in data["timing"]}
    for task in data["tasks"].values():
        task["timing"] = {k: "X" for k in task["timing"]}
    return json.dumps(data, indent=2).replace(str(run_dir), "RUN")


def test_the_keywords_and_a_run_config_write_the_same_results(tmp_path):
    tasks = write_tasks(tmp_path / "tasks")
    keywords = dict(limit="0.5", limit_per_part=True, mc_format="generate", mc_shuffle_seed=3, variables={"A": "b"})
    by_keywords = evaluate([tasks], FakeModel(), output_dir=tmp_path / "a", **keywords)
    run_evaluation(
        RunConfig(
            tasks=(tasks,),
            model=ModelConfig(FakeModel()),
            limit=RowLimit.parse("0.5", per_part=True),
            prepare=PrepareOptions({"A": "b"}, None, None, "generate", 3, RunOverrides()),
            output=OutputOptions(output_dir=tmp_path / "b"),
        )
    )
    assert by_keywords.results["limit"] == 0.5 and by_keywords.results["limit_per_part"] is True
    assert _masked(tmp_path / "a").replace("/a", "/b") == _masked(tmp_path / "b")
    assert (
        json.loads((tmp_path / "a" / "results.json").read_text()) == by_keywords.results
    )  # the dict returned is the file


def test_the_limit_is_parsed_when_the_configuration_is_built():
    assert RowLimit.parse("0.25", per_part=True) == RowLimit(0.25, True)
    assert RowLimit.parse("3") == RowLimit(3, False)
    assert RowLimit.parse(None, per_part=True) == RowLimit(None, False)  # no limit: nothing is cut per part either
    with pytest.raises(ProctorError, match="--limit takes a count or a fraction"):
        RowLimit.parse("1.5")
    with pytest.raises(ProctorError, match="--limit takes a count or a fraction"):
        evaluate([], FakeModel(), limit=1.5)  # refused before anything runs
    config = RunConfig(tasks=("x.yaml",), model=ModelConfig("smollm2", {"dtype": "float16"}), select=("a*",))
    assert (
        config.limit == RowLimit(None, False)
        and config.output.runs_root.name == "runs"
        and config.prepare.mc_format == "auto"
    )
    with pytest.raises(AttributeError):
        config.limit = RowLimit(2)  # frozen: the run cannot change what it was asked


def test_a_run_goes_to_ray_only_with_replicas_or_an_address():
    from proctor.engine.distributed import ClusterOptions

    assert ModelConfig("smollm2").cluster_options() is None
    assert ModelConfig("smollm2", workers=1).cluster_options() is None
    assert ModelConfig("smollm2", workers=3).cluster_options() == ClusterOptions(workers=3)
    assert ModelConfig(
        "smollm2", workers=2, cluster={"workers": 5, "cpus_per_worker": 2.0}
    ).cluster_options() == ClusterOptions(workers=2, cpus_per_worker=2.0)
    assert ModelConfig("smollm2", cluster={"address": "auto"}).cluster_options() == ClusterOptions(address="auto")


def _record(**fields) -> RunResults:
    fields = {"limit": None, **fields}
    return RunResults(
        proctor_version="0",
        created="c",
        command=None,
        model={},
        model_info={},
        chat_applied=False,
        environment=Environment(python="3", platform="p", git_hash=None),
        overrides={},
        timing=RunTiming(model_load_seconds=0.5),
        **fields,
    )


def test_run_results_lists_the_fields_in_the_files_order():
    record = _record()
    assert list(record.as_dict()) == [
        "proctor_version",
        "created",
        "command",
        "model",
        "model_info",
        "chat_applied",
        "environment",
        "status",
        "limit",
        "overrides",
        "tasks",
        "groups",
        "timing",
    ]
    assert record.as_dict()["timing"] == {"model_load_seconds": 0.5}  # the total only once the run finished
    record.add_task(
        "t",
        TaskResult.model_validate(
            {
                "kind": "generate",
                "dialect": "native",
                "source": None,
                "version": "1",
                "hash": "h",
                "n_samples": 1,
                "metrics": {},
                "requests": {"unique": 1},
                "timing": {"total_seconds": 0.1},
                "warnings": ["w"],
            }
        ),
    )
    record.add_skipped({"task": "u", "file": "f", "error": "e", "stage": "run"})
    record.finish({}, {"value": 1.0, "stderr": None}, 2.0)
    out = record.as_dict()
    # warnings and skipped in the order they first had an entry, the roll-up last
    assert list(out)[-4:] == ["timing", "warnings", "skipped", "rollup"]
    assert (
        out["status"] == "partial"
        and out["warnings"] == ["t: w"]
        and out["timing"] == {"model_load_seconds": 0.5, "total_seconds": 2.0}
    )
    assert list(_record(skipped=[{"file": "f", "error": "e"}], limit=3, limit_per_part=True).as_dict())[8:10] == [
        "limit",
        "limit_per_part",
    ]
    with pytest.raises(ValueError):
        record.status = "done"  # the schema's statuses only


def test_group_scores_and_the_rollup_are_typed_when_the_run_finishes():
    record = _record()
    group = {
        "tasks": ["a", "b"],
        "n_samples": 7,
        "metrics": {"acc": {"value": 1, "stderr": None, "micro": 0.75, "micro_stderr": None}},
    }
    record.finish(
        {"g": group},
        {
            "value": 0.5,
            "stderr": 0.1,
            "levels": ["group", "task"],
            "children": {"g": {"value": 0.5, "stderr": None, "type": "macro", "my_rule_note": "kept"}},
        },
        1.0,
    )
    assert isinstance(record.groups["g"], GroupResult) and isinstance(record.rollup, RollupNode)
    out = record.as_dict()
    assert (
        out["groups"] == {"g": group} and type(out["groups"]["g"]["metrics"]["acc"]["value"]) is int
    )  # written as computed
    assert out["rollup"]["children"]["g"] == {"value": 0.5, "stderr": None, "type": "macro", "my_rule_note": "kept"}
    with pytest.raises(ValidationError, match=r"g\.metrics\.acc\.micro"):
        _record().finish({"g": {**group, "metrics": {"acc": {"value": 1.0, "stderr": None}}}}, None, 1.0)
    with pytest.raises(ValidationError, match="type"):
        _record().finish({}, {"value": 0.5, "stderr": None, "type": "median"}, 1.0)
