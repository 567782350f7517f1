"""Exports (lm-evaluation-harness results layout, parquet samples) and the run command's flags."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from proctor import evaluate
from proctor.cli import app
from tests.support.fakes import FakeModel, write_tasks


def test_lm_eval_layout_and_parquet(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=6, n_gen=3)
    result = evaluate([tasks], FakeModel(), output_dir=tmp_path / "run")
    (lm_file,) = (tmp_path / "run" / "lm_eval").glob("*/results_*.json")
    lm = json.loads(lm_file.read_text())
    for key in (
        "results",
        "groups",
        "group_subtasks",
        "configs",
        "versions",
        "n-shot",
        "higher_is_better",
        "n-samples",
        "config",
    ):
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
    assert [r["metric_acc"] for r in rows if r["task"] == "mc_alpha"] == [
        r["metrics"]["acc"] for r in records if r["task"] == "mc_alpha"
    ]
    assert rows[0]["distribution"] == records[0]["distribution"] and rows[0]["choices"] == records[0]["choices"]
    for row, record in zip(rows, records):  # typed target / prediction, per-choice log-likelihoods, run and model
        assert row["run"] == "run" and row["model"] == "fake" and row["model_backend"] == "fake"
        if record.get("choices") is not None:
            assert row["target_index"] == [record["target"]] and row["target"] == [record["choices"][record["target"]]]
            assert (
                row["prediction_index"] == record["prediction"]
                and row["prediction"] == record["choices"][record["prediction"]]
            )
            assert row["logprobs"] == record["logprobs"]
            assert [row[f"logprob_{i}"] for i in range(len(record["logprobs"]))] == record["logprobs"]
            assert row["correct"] == record["correct"]
        elif "generation" in record:
            assert (
                row["target"] == record["target"]
                and row["prediction"] == record["extracted"]
                and row["target_index"] is None
            )
    schema = table.schema
    import pyarrow as pa

    assert pa.types.is_list(schema.field("target").type) and pa.types.is_string(schema.field("target").type.value_type)
    assert pa.types.is_int64(schema.field("prediction_index").type) and pa.types.is_float64(
        schema.field("logprob_0").type
    )


def test_export_command_rewrites_the_files(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=2)
    evaluate([tasks], FakeModel(), output_dir=tmp_path / "run", export=False)
    assert not (tmp_path / "run" / "samples.parquet").exists()
    result = CliRunner().invoke(app, ["export", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "samples.parquet").exists() and len(
        list((tmp_path / "run" / "lm_eval").glob("*/results_*.json"))
    ) == 1


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
        f"name: filt\nkind: multiple_choice\ndata: {{path: {data}, filter: '{{{{ y == 1 }}}}'}}\n"
        "prompt: '{{ q }}'\nchoices: '{{ c }}'\ntarget: '{{ y }}'\nfewshot: {count: 2}\n"
    )
    evaluate([tmp_path / "t.yaml"], FakeModel(), output_dir=tmp_path / "run", limit=3)
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert [s["target"] for s in samples] == [1, 1, 1]  # only rows with y == 1 were kept
    (lm_file,) = (tmp_path / "run" / "lm_eval").glob("*/results_*.json")
    lm = json.loads(lm_file.read_text())
    assert lm["n-samples"]["filt"] == {"original": 10, "effective": 3}  # 10 rows read, 5 kept by the filter, 3 run
    assert lm["n-shot"]["filt"] == 2 and lm["configs"]["filt"]["num_fewshot"] == 2
    assert lm["results"]["filt"]["sample_len"] == 3 and lm["results"]["filt"]["name"] == "filt"


def test_duckdb_stacks_runs_and_the_documented_sql_reads_them(tmp_path):
    duckdb = pytest.importorskip("duckdb", reason="needs the duckdb extra (pip install 'proctor[duckdb]')")
    tasks = write_tasks(tmp_path / "tasks", n_mc=8, n_gen=3)
    runs = {
        "run_a": evaluate([tasks], FakeModel("model-a"), output_dir=tmp_path / "runs" / "run_a"),
        "run_b": evaluate(
            [tasks], FakeModel("model-b", salt="b", prefer_gold=1.0), output_dir=tmp_path / "runs" / "run_b"
        ),
    }
    database = tmp_path / "all.duckdb"
    for _ in range(2):  # exporting again replaces a run's rows
        result = CliRunner().invoke(
            app, ["export", *(str(tmp_path / "runs" / n) for n in runs), "--to", "duckdb", "--database", str(database)]
        )
        assert result.exit_code == 0, result.output
    con = duckdb.connect(str(database))
    got = dict(
        ((run, task), acc)
        for run, task, acc in con.execute(
            "SELECT run, task, avg(metric_acc) FROM samples WHERE metric_acc IS NOT NULL GROUP BY ALL"
        ).fetchall()
    )
    for name, run in runs.items():
        for task in ("mc_alpha", "mc_beta"):
            assert got[(name, task)] == pytest.approx(run.tasks[task]["metrics"]["acc"]["value"])
    assert con.execute("SELECT count(*) FROM samples").fetchone()[0] == sum(
        r.tasks[t]["n_samples"] for r in runs.values() for t in r.tasks
    )
    stored = con.execute(
        "SELECT value FROM metrics WHERE run = 'run_b' AND task = 'mc_alpha' AND metric = 'acc'"
    ).fetchall()
    assert stored == [(runs["run_b"].tasks["mc_alpha"]["metrics"]["acc"]["value"],)]
    assert {m for (m,) in con.execute("SELECT DISTINCT model FROM samples").fetchall()} == {"model-a", "model-b"}
    con.close()
    # docs/runs.md: the same stack straight from the parquet files
    sql = (
        "SELECT run, model, task, avg(metric_acc) AS acc FROM "
        "read_parquet('{root}/*/samples.parquet', union_by_name = true) "
        "WHERE metric_acc IS NOT NULL GROUP BY ALL ORDER BY run, task"
    )
    rows = duckdb.sql(sql.format(root=tmp_path / "runs")).fetchall()
    assert [(r[0], r[2]) for r in rows] == [(n, t) for n in ("run_a", "run_b") for t in ("mc_alpha", "mc_beta")]
    assert all(r[3] == pytest.approx(runs[r[0]].tasks[r[2]]["metrics"]["acc"]["value"]) for r in rows)


def test_duckdb_reads_the_runs_samples_not_a_stale_parquet_beside_them(tmp_path):
    """A samples.parquet left in a run folder from before a resumed or updated run (here: another run's) is
    not what `proctor export --to duckdb` stacks: the run's own samples.jsonl is."""
    duckdb = pytest.importorskip("duckdb", reason="needs the duckdb extra (pip install 'proctor[duckdb]')")
    import shutil

    from tests.support.cli_runs import proctor

    tasks = write_tasks(tmp_path / "tasks", n_mc=8, n_gen=3)
    run_a = evaluate([tasks], FakeModel("model-a"), output_dir=tmp_path / "run_a")
    evaluate([tasks], FakeModel("model-b", salt="b", prefer_gold=1.0), output_dir=tmp_path / "run_b")
    shutil.copy(tmp_path / "run_b" / "samples.parquet", tmp_path / "run_a" / "samples.parquet")
    stale = (tmp_path / "run_a" / "samples.parquet").read_bytes()
    proctor("export", "run_a", "--to", "duckdb", "--database", "all.duckdb", cwd=tmp_path)
    con = duckdb.connect(str(tmp_path / "all.duckdb"))
    rows = con.execute("SELECT run, model, task, avg(metric_acc) FROM samples GROUP BY ALL").fetchall()
    con.close()
    assert {(run, model) for run, model, *_ in rows} == {("run_a", "model-a")}
    acc = {task: value for *_, task, value in rows}
    for task in ("mc_alpha", "mc_beta"):
        assert acc[task] == pytest.approx(run_a.tasks[task]["metrics"]["acc"]["value"])
    assert (tmp_path / "run_a" / "samples.parquet").read_bytes() == stale  # the run folder is only read


def test_duckdb_export_is_one_transaction(tmp_path):
    """A run that fails part way (here the last one's samples.jsonl, damaged after its first line) leaves the database
    as it was: no rows of the runs before it, and the rows an earlier export wrote are still there."""
    duckdb = pytest.importorskip("duckdb", reason="needs the duckdb extra (pip install 'proctor[duckdb]')")
    from tests.support.cli_runs import proctor, run_proctor

    tasks = write_tasks(tmp_path / "tasks", n_mc=8, n_gen=3)
    run_a = evaluate([tasks], FakeModel("model-a"), output_dir=tmp_path / "run_a")
    evaluate([tasks], FakeModel("model-b", salt="b"), output_dir=tmp_path / "run_b")
    evaluate([tasks], FakeModel("model-c", salt="c"), output_dir=tmp_path / "run_c")
    proctor("export", "run_a", "--to", "duckdb", "--database", "all.duckdb", cwd=tmp_path)
    lines = (tmp_path / "run_c" / "samples.jsonl").read_text().splitlines(keepends=True)
    damaged = "{" + "x" * (len(lines[1].encode()) - 2) + "\n"  # as long as the line it replaces
    (tmp_path / "run_c" / "samples.jsonl").write_text(lines[0] + damaged + "".join(lines[2:]))
    done = run_proctor("export", "run_b", "run_c", "--to", "duckdb", "--database", "all.duckdb", cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "run_c/samples.jsonl:2" in done.stderr, done.stderr
    con = duckdb.connect(str(tmp_path / "all.duckdb"))
    assert con.execute("SELECT DISTINCT run FROM samples").fetchall() == [("run_a",)]
    assert con.execute("SELECT DISTINCT run FROM metrics").fetchall() == [("run_a",)]
    acc = dict(
        con.execute("SELECT task, avg(metric_acc) FROM samples WHERE metric_acc IS NOT NULL GROUP BY ALL").fetchall()
    )
    con.close()
    for task in ("mc_alpha", "mc_beta"):
        assert acc[task] == pytest.approx(run_a.tasks[task]["metrics"]["acc"]["value"])


def test_correct_is_never_read_from_a_count_or_a_lower_is_better_metric():
    """A generation has no ``correct`` of its own: samples.parquet (and DuckDB, samples_frame, the viewer) take
    the task's first metric that is 0 or 1 on every row. null_count is such a metric, and 1 means *no answer*:
    taken as the verdict it marked every empty answer correct (review of session 12, finding 1)."""
    from proctor.runs.run_exports import _correct, _primary_metrics

    empty = {"task": "nq", "metrics": {"f1": 0.0, "null_count": 1.0}}
    found = {"task": "nq", "metrics": {"f1": 0.36, "null_count": 0.0}}
    assert _primary_metrics([empty, found]) == {"nq": ""}  # f1 is graded, null_count a count: no verdict
    assert _correct(empty, "") is None and _correct(found, "") is None
    both = [
        {"task": "t", "metrics": {"ter_hit": 1.0, "em": 1.0}},
        {"task": "t", "metrics": {"ter_hit": 0.0, "em": 0.0}},
    ]
    lower = {"tasks": {"t": {"higher_is_better": {"ter_hit": False, "em": True}}}}
    assert _primary_metrics(both, lower) == {"t": "em"}  # results.json says ter_hit is better low
    assert _primary_metrics(both) == {"t": "ter_hit"}  # without it, the first 0/1 metric, as before
