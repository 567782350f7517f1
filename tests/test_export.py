"""Exports (lm-evaluation-harness results layout, parquet samples) and the run command's flags."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
from fakes import FakeModel, write_tasks
from typer.testing import CliRunner

from proctor import evaluate
from proctor.cli import app


def test_lm_eval_layout_and_parquet(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=6, n_gen=3)
    result = evaluate([tasks], FakeModel(), output_dir=tmp_path / "run")
    (lm_file,) = (tmp_path / "run" / "lm_eval").glob("*/results_*.json")
    lm = json.loads(lm_file.read_text())
    for key in ("results", "groups", "group_subtasks", "configs", "versions", "n-shot", "higher_is_better", "n-samples", "config"):
        assert key in lm
    acc = result.tasks["mc_alpha"]["metrics"]["acc"]
    assert lm["results"]["mc_alpha"]["acc,none"] == acc["value"]
    assert lm["results"]["mc_alpha"]["acc_stderr,none"] == acc["stderr"]
    assert lm["results"]["ppl_delta"]["word_perplexity_stderr,none"] == "N/A"
    assert lm["groups"]["science"]["acc,none"] == result.results["groups"]["science"]["metrics"]["acc"]["value"]
    assert lm["group_subtasks"]["science"] == ["mc_alpha", "mc_beta"]
    assert lm["n-samples"]["mc_alpha"] == {"original": 6, "effective": 6}

    table = pq.read_table(tmp_path / "run" / "samples.parquet")
    records = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").open()]
    assert table.num_rows == len(records) == 6 + 6 + 3 + 3
    rows = table.to_pylist()
    assert [(r["task"], r["id"]) for r in rows] == [(r["task"], str(r["id"])) for r in records]
    assert [r["metric_acc"] for r in rows if r["task"] == "mc_alpha"] == [r["metrics"]["acc"] for r in records if r["task"] == "mc_alpha"]
    assert rows[0]["distribution"] == records[0]["distribution"] and rows[0]["choices"] == records[0]["choices"]


def test_export_command_rewrites_the_files(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=2)
    evaluate([tasks], FakeModel(), output_dir=tmp_path / "run", export=False)
    assert not (tmp_path / "run" / "samples.parquet").exists()
    result = CliRunner().invoke(app, ["export", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "samples.parquet").exists() and len(list((tmp_path / "run" / "lm_eval").glob("*/results_*.json"))) == 1


def test_cli_refuses_a_changed_task_then_updates(tiny_model_dir, tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=3, n_gen=2)
    run = ["run", str(tasks), "--model", str(tiny_model_dir), "--output", str(tmp_path / "run"), "--quiet", "-b", "4"]
    runner = CliRunner()
    first = runner.invoke(app, run)
    assert first.exit_code == 0, first.output
    write_tasks(tasks, n_mc=3, n_gen=2, mc_prompt="Changed: {{ question }}")
    refused = runner.invoke(app, run)
    assert refused.exit_code != 0
    assert "task 'mc_alpha' changed" in str(refused.exception) and "--update" in str(refused.exception)
    updated = runner.invoke(app, run + ["--update"])
    assert updated.exit_code == 0, updated.output
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    changes = manifest["attempts"][-1]["changes"]
    assert len(changes) == 1 and changes[0].startswith("task 'mc_alpha' changed")
    assert manifest["attempts"][-1]["responses"]["computed"] == 3 * 4  # only mc_alpha's requests


def test_lm_eval_original_counts_rows_before_the_filter(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"q": f"q{i}", "c": ["a", "b"], "y": i % 2}) + "\n" for i in range(10)))
    (tmp_path / "t.yaml").write_text(
        f"name: filt\nkind: multiple_choice\ndata: {{path: {data}, filter: 'y == 1'}}\n"
        "prompt: '{{ q }}'\nchoices: '{{ c }}'\ntarget: '{{ y }}'\nfewshot: {count: 2}\n"
    )
    evaluate([tmp_path / "t.yaml"], FakeModel(), output_dir=tmp_path / "run", limit=3)
    (lm_file,) = (tmp_path / "run" / "lm_eval").glob("*/results_*.json")
    lm = json.loads(lm_file.read_text())
    assert lm["n-samples"]["filt"] == {"original": 10, "effective": 3}  # 10 rows read, 5 kept by the filter, 3 run
    assert lm["n-shot"]["filt"] == 2 and lm["configs"]["filt"]["num_fewshot"] == 2
    assert lm["results"]["filt"]["sample_len"] == 3 and lm["results"]["filt"]["name"] == "filt"
