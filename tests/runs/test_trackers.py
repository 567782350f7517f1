"""Experiment trackers (``proctor run --log-to``, ``proctor log RUN_DIR --to``; src/proctor/runs/trackers/) and a
run's samples as a DataFrame: the quickstart run on the tiny model in a fresh ``proctor`` process, logged to
W&B (offline) and MLflow (a local file store), then read back with the real libraries (MLflow's client; the
offline run's records decoded with wandb's own protobuf) and compared number for number with results.json and
samples.jsonl; malformed ``--log-to`` values in-process, each refused before any task is read."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLES
from tests.support import wandb_records
from tests.support.cli_runs import QUESTIONS, QUIZ, jsonl, proctor, results, run_in_process, samples, write
from tests.support.lmeval_quiz import JSON_TASK

pytest.importorskip("wandb", reason="needs the wandb extra (pip install 'proctor[wandb]')")
pytest.importorskip("mlflow", reason="needs the mlflow extra (pip install 'proctor[mlflow]')")
pytest.importorskip("pandas", reason="needs pandas (pip install 'proctor[pandas]')")

QUICKSTART = EXAMPLES / "quickstart"
TASKS = ("quickstart_science_mc", "quickstart_short_answers")


def expected_metrics(run: Path) -> dict[str, float]:
    """results.json's numbers under the trackers' names, written out here: TASK/METRIC and TASK/METRIC_stderr."""
    out = {}
    for task, entry in results(run)["tasks"].items():
        for metric, m in entry["metrics"].items():
            out[f"{task}/{metric}"] = m["value"]
            if m["stderr"] is not None:
                out[f"{task}/{metric}_stderr"] = m["stderr"]
    return out


def per_sample(run: Path) -> dict[tuple[str, str], dict[str, float]]:
    """samples.jsonl's metric values by (task, id)."""
    return {(r["task"], str(r["id"])): r["metrics"] for r in samples(run)}


def table_metrics(columns: list[str], rows: list[list]) -> dict[tuple[str, str], dict[str, float]]:
    """A samples table's metric columns by (task, id), the empty cells left out (a metric of the other task)."""
    out = {}
    for row in rows:
        cells = dict(zip(columns, row))
        out[(cells["task"], str(cells["id"]))] = {
            c.removeprefix("metric_"): v
            for c, v in cells.items()
            if c.startswith("metric_") and v is not None and v == v  # NaN: a pandas table's empty cell
        }
    return out


def saved_spec(run: Path, task: str) -> dict:
    return yaml.safe_load((run / "tasks" / f"{task}.yaml").read_text())["spec"]


@pytest.fixture(scope="module")
def logged(tiny_model_dir, tmp_path_factory):
    """The quickstart run by ``proctor run ... --log-to wandb --log-to mlflow:...`` in a fresh process, with
    $WANDB_MODE=online and $MLFLOW_TRACKING_URI a server: the run must stay offline and on disk anyway."""
    home = tmp_path_factory.mktemp("trackers")
    store = home / "mlruns"
    done = proctor(
        "run",
        str(QUICKSTART),
        "--model",
        str(tiny_model_dir),
        "-o",
        "run",
        "--log-to",
        "wandb:project=quickstart,tags=tiny;cpu",
        "--log-to",
        f"mlflow:tracking_uri=file:{store},experiment=quickstart",
        cwd=home,
        env={
            "WANDB_MODE": "online",
            "WANDB_CONFIG_DIR": str(home / "wandb-config"),
            "WANDB_CACHE_DIR": str(home / "wandb-cache"),
            "MLFLOW_TRACKING_URI": "http://127.0.0.1:9",
        },
    )
    return home / "run", store, done.stdout


def test_mlflow_holds_the_runs_numbers_configuration_files_and_samples(logged, monkeypatch):
    from mlflow.tracking import MlflowClient

    run_dir, store, stdout = logged
    assert "mlflow: run " in stdout
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3's opt-in to read a file store
    client = MlflowClient(tracking_uri=store.as_uri())
    experiment = client.get_experiment_by_name("quickstart")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED" and run.info.run_name == "run"
    assert run.data.metrics == expected_metrics(run_dir)  # every value and stderr, bit for bit, nothing else
    written = results(run_dir)
    params = run.data.params
    assert params["model.content"] == written["model"]["content"]
    assert params["environment.python"] == written["environment"]["python"]
    assert params["tasks.quickstart_short_answers.settings.fewshot"] == "3"
    assert params["tasks.quickstart_science_mc.spec.prompt"] == saved_spec(run_dir, TASKS[0])["prompt"]
    assert run.data.tags["proctor.run_dir"] == str(run_dir.resolve())
    listed = {a.path for a in client.list_artifacts(run.info.run_id)}
    listed |= {a.path for a in client.list_artifacts(run.info.run_id, "tasks")}
    assert {"results.json", "run.json", "samples.parquet", *(f"tasks/{t}.yaml" for t in TASKS)} <= listed
    copy = client.download_artifacts(run.info.run_id, "results.json", str(store.parent / "download"))
    assert Path(copy).read_bytes() == (run_dir / "results.json").read_bytes()
    frame = client.load_table(experiment.experiment_id, "samples.parquet", run_ids=[run.info.run_id])
    table = table_metrics(list(frame.columns), frame.values.tolist())
    assert table == per_sample(run_dir) and len(table) == 50


def test_wandb_offline_run_holds_the_runs_numbers_configuration_files_and_samples(logged):
    run_dir, _, stdout = logged
    (offline,) = (run_dir / "wandb").glob("offline-run-*")
    assert f"wandb sync {offline}" in stdout
    (path,) = offline.glob("run-*.wandb")
    assert all(t.feature.offline for t in wandb_records.of_type(path, "telemetry"))
    (record,) = wandb_records.of_type(path, "run")
    assert (record.project, record.display_name, list(record.tags)) == ("quickstart", "run", ["tiny", "cpu"])
    logged_values = {
        k: v for h in wandb_records.history(path) for k, v in h.items() if "/" in k and not k.startswith("_")
    }
    assert logged_values == expected_metrics(run_dir)
    config = wandb_records.config(path)
    written = results(run_dir)
    assert config["model"] == written["model"] and config["environment"] == written["environment"]
    for task in TASKS:
        assert config["tasks"][task]["spec"] == saved_spec(run_dir, task)
        assert config["tasks"][task]["settings"] == written["tasks"][task]["settings"]
    (artifact,) = [a for a in wandb_records.of_type(path, "artifact") if a.type == "proctor-run"]
    files = {c.path: c.digest for c in artifact.manifest.contents}
    assert set(files) == {"results.json", "run.json", *(f"tasks/{t}.yaml" for t in TASKS)}
    md5 = base64.b64encode(hashlib.md5((run_dir / "results.json").read_bytes()).digest()).decode()
    assert files["results.json"] == md5  # the file as the run wrote it
    (table_file,) = (offline / "files" / "media" / "table").glob("samples_*.table.json")
    table = json.loads(table_file.read_text())
    metrics = table_metrics(table["columns"], table["data"])
    assert metrics == per_sample(run_dir) and len(metrics) == 50


def test_a_task_folder_holding_tracker_stores_lists_only_its_tasks(logged, tmp_path, monkeypatch):
    """``--log-to mlflow``'s default store is ./mlruns, so a later ``proctor run .`` meets it (and a W&B folder):
    their YAML files (experiments' meta.yaml, copies of tasks/*.yaml) are passed over, not warned about."""
    run_dir, _, _ = logged
    monkeypatch.chdir(tmp_path)
    shutil.copytree(QUICKSTART, tmp_path, dirs_exist_ok=True)
    code, output = run_in_process(["log", str(run_dir), "--to", "mlflow", "--to", "wandb:dir=."])
    assert code == 0 and (tmp_path / "mlruns").is_dir() and (tmp_path / "wandb").is_dir(), output
    assert list((tmp_path / "mlruns").rglob("*.yaml")), "the store's own YAML files, which the listing passes over"
    code, output = run_in_process(["ls", "."])
    assert code == 0 and "skipping" not in output, output
    assert "2 task(s)" in output and all(task in output for task in TASKS), output


def test_samples_frame_and_logging_from_python(tiny_model_dir, tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    from proctor import evaluate

    result = evaluate([QUICKSTART], str(tiny_model_dir), output_dir=tmp_path / "run")
    frame = result.samples_frame()
    records = samples(result.run_dir)
    assert len(frame) == len(records) == 50
    rows = {(r["task"], r["id"]): r for r in frame.to_dict("records")}
    for record in records:
        row = rows[(record["task"], record["id"])]
        for metric, value in record["metrics"].items():
            assert row[f"metric_{metric}"] == value
        if record["task"] == TASKS[0]:  # multiple choice: the choices' texts
            assert row["prediction"] == record["choices"][record["prediction"]]
            assert list(row["target"]) == [record["choices"][record["target"]]]
            assert row["metric_f1"] != row["metric_f1"]  # NaN: the other task's metric
        else:
            assert row["prediction"] == record["extracted"]
            assert list(row["target"]) == record["target"]
    line = result.log_to(f"mlflow:tracking_uri={tmp_path / 'mlruns'},name=from-python")
    assert line.startswith("mlflow: run ")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    client = MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri())
    (run,) = client.search_runs([client.get_experiment_by_name("proctor").experiment_id])
    assert run.info.run_name == "from-python"
    assert run.data.metrics == expected_metrics(result.run_dir)


def test_samples_frame_without_pandas_says_how_to_install_it(tmp_path, monkeypatch):
    from proctor.core.errors import MissingDependencyError
    from proctor.runs.samples_frame import samples_frame

    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingDependencyError, match=r"pandas.*-m pip install pandas"):
        samples_frame(tmp_path)


def test_a_tracker_that_fails_after_the_run_keeps_the_run_and_names_the_command_that_logs_it(
    tiny_model_dir, tmp_path, monkeypatch
):
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("not a folder")
    bad = f"mlflow:tracking_uri={tmp_path / 'a-file' / 'mlruns'}"
    code, output = run_in_process(
        ["run", str(QUICKSTART), "--model", str(tiny_model_dir), "-o", "run", "-q", "--log-to", bad]
    )
    assert code == 1, output
    assert "Traceback" not in output and "internal error" not in output, output
    assert f"to MLflow ({bad}) failed" in output and "The run is complete in run" in output, output
    assert f"proctor log run --to {bad}" in output, output
    assert results(tmp_path / "run")["status"] == "complete" and len(samples(tmp_path / "run")) == 50
    code, output = run_in_process(["log", "run", "--to", f"mlflow:tracking_uri={tmp_path / 'mlruns'}"])
    assert code == 0, output
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    client = MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri())
    (run,) = client.search_runs([client.get_experiment_by_name("proctor").experiment_id])
    assert run.data.metrics == expected_metrics(tmp_path / "run")
    # a run that did not finish (interrupted: results.json still says running) is not logged as if it had
    shutil.copytree(tmp_path / "run", tmp_path / "unfinished")
    written = results(tmp_path / "unfinished")
    (tmp_path / "unfinished" / "results.json").write_text(json.dumps({**written, "status": "running"}))
    code, output = run_in_process(["log", "unfinished", "--to", f"mlflow:tracking_uri={tmp_path / 'mlruns'}"])
    assert code == 2 and "unfinished is not a finished run (results.json's status is 'running'" in output, output
    assert len(client.search_runs([client.get_experiment_by_name("proctor").experiment_id])) == 1


def test_groups_are_logged_with_their_macro_and_micro_means(tiny_model_dir, tmp_path, monkeypatch):
    """Two tasks of one group (3 and 5 questions, so the micro mean differs from the macro): ``proctor log`` to
    MLflow and to W&B under ``dir=``, each holding the group's four numbers as results.json has them."""
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(tmp_path)
    jsonl(tmp_path / "tasks" / "data.jsonl", QUESTIONS)
    task = QUIZ.replace("metrics: [acc]", "metrics: [acc, brier_score]\ngroup: quiz")
    write(tmp_path / "tasks" / "quiz_a.yaml", task.replace("name: quiz", "name: quiz_a") + "limit: 3\n")
    write(tmp_path / "tasks" / "quiz_b.yaml", task.replace("name: quiz", "name: quiz_b"))
    code, output = run_in_process(["run", "tasks", "--model", str(tiny_model_dir), "-o", "run", "-q"])
    assert code == 0, output
    want = expected_metrics(tmp_path / "run")
    for metric, group in results(tmp_path / "run")["groups"]["quiz"]["metrics"].items():
        want |= {f"quiz/{metric}": group["value"], f"quiz/{metric}_stderr": group["stderr"]}
        want |= {f"quiz/{metric}_micro": group["micro"], f"quiz/{metric}_micro_stderr": group["micro_stderr"]}
    assert want["quiz/brier_score"] != want["quiz/brier_score_micro"]  # the check below tells the two apart
    assert len(want) == 2 * 2 * 2 + 2 * 4  # two tasks' and the group's value and stderr per metric, and micro ones
    store = f"mlflow:tracking_uri={tmp_path / 'mlruns'},experiment=groups"
    code, output = run_in_process(["log", "run", "--to", store, "--to", f"wandb:dir={tmp_path / 'wb'}"])
    assert code == 0, output
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    client = MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri())
    (run,) = client.search_runs([client.get_experiment_by_name("groups").experiment_id])
    assert run.data.metrics == want
    (path,) = (tmp_path / "wb" / "wandb").glob("offline-run-*/run-*.wandb")
    assert f"wandb: run {path.stem.removeprefix('run-')} in {path.parent}" in " ".join(output.split())
    logged_values = {k: v for h in wandb_records.history(path) for k, v in h.items() if "/" in k}
    assert logged_values == want
    assert not (tmp_path / "run" / "wandb").exists()  # dir= says where


def test_lm_eval_metric_keys_keep_their_filter_last_and_mlflow_gets_a_name_it_takes(
    tiny_model_dir, tmp_path, monkeypatch
):
    """An lm-eval task's ``acc,none``: ``acc,none`` and ``acc_stderr,none`` in W&B (lm-eval's own spelling),
    ``acc_none`` and ``acc_stderr_none`` in MLflow, which refuses a comma in a name."""
    pytest.importorskip("lm_eval", reason="needs the lmeval extra")
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(tmp_path)  # lm-eval reads data_files from the working folder
    write(tmp_path / "quiz.yaml", JSON_TASK)
    jsonl(tmp_path / "data.jsonl", QUESTIONS)
    code, output = run_in_process(
        ["run", str(tmp_path / "quiz.yaml"), "--model", str(tiny_model_dir), "-o", str(tmp_path / "run"), "-q"]
    )
    assert code == 0, output
    acc = results(tmp_path / "run")["tasks"]["quiz"]["metrics"]["acc,none"]
    store = tmp_path / "mlruns"
    code, output = run_in_process(
        ["log", str(tmp_path / "run"), "--to", f"mlflow:tracking_uri={store}", "--to", "wandb"]
    )
    assert code == 0, output
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    client = MlflowClient(tracking_uri=store.as_uri())
    (run,) = client.search_runs([client.get_experiment_by_name("proctor").experiment_id])
    assert run.data.metrics["quiz/acc_none"] == acc["value"]
    assert run.data.metrics["quiz/acc_stderr_none"] == acc["stderr"]
    (path,) = (tmp_path / "run" / "wandb").glob("offline-run-*/run-*.wandb")
    logged_values = {k: v for h in wandb_records.history(path) for k, v in h.items() if "/" in k}
    assert logged_values["quiz/acc,none"] == acc["value"] and logged_values["quiz/acc_stderr,none"] == acc["stderr"]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--log-to", "wandbx"], "--log-to 'wandbx': unknown tracker 'wandbx' (did you mean 'wandb'?)"),
        (["--log-to", "wandb:projekt=x"], "wandb takes no option 'projekt' (did you mean 'project'?)"),
        (["--log-to", "wandb:project"], "'project' is not KEY=VALUE"),
        (["--log-to", "wandb:"], "no KEY=VALUE after 'wandb:'"),
        (["--log-to", "wandb:project=a,project=b"], "option 'project' is given twice"),
        (["--log-to", "wandb:project="], "option 'project' has no value"),
        (["--log-to", "wandb,mlflow"], "one tracker per --log-to"),
        (["--log-to", "wandb", "--log-to", "wandb:project=x"], "wandb is named twice"),
        (["--log-to", "mlflow:tracking_uri=http://127.0.0.1:5000"], "is not a local file store"),
        (["--log-to", "mlflow:tracking_uri=sqlite:///m.db"], "is not a local file store"),
        (["--log-to", "mlflow:tracking_uri=databricks"], "is not a local file store"),
        (["--wandb_args", "project=x"], "--log-to wandb:project=NAME"),
    ],
)
def test_a_malformed_log_to_is_refused_before_any_task_is_read(flags, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, output = run_in_process(["run", "no-such-tasks.yaml", *flags])  # the tasks' error would come later
    assert code == 2, output
    assert message in " ".join(output.split()), output
    assert "Traceback" not in output and "no-such-tasks" not in output, output


def test_a_server_in_the_environment_is_refused_for_mlflow(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "https://mlflow.example.com")
    code, output = run_in_process(["run", "no-such-tasks.yaml", "--log-to", "mlflow"])
    assert code == 2 and "$MLFLOW_TRACKING_URI 'https://mlflow.example.com' is not a local file store" in output


@pytest.mark.parametrize("tracker, module", [("wandb", "wandb"), ("mlflow", "mlflow"), ("mlflow", "pandas")])
def test_a_missing_tracker_library_is_named_with_this_pythons_pip(tracker, module, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, module, None)  # not installed, as far as this process can tell
    for args in (["run", "no-such-tasks.yaml", "--log-to", tracker], ["log", str(tmp_path), "--to", tracker]):
        code, output = run_in_process(args)
        flat = " ".join(output.split())
        assert code == 2 and f"needs the '{module}' package" in flat, output
        assert f"pip install 'proctor[{tracker}]'" in flat and f"{sys.executable} -m pip install" in flat, output


def test_proctor_log_refuses_a_folder_that_is_not_a_finished_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, output = run_in_process(["log", str(tmp_path), "--to", "wandb"])
    assert code == 2 and "is not a run folder: no results.json" in output, output
    code, output = run_in_process(["log", str(tmp_path)])
    assert code == 2 and "--to" in output, output
    assert not (tmp_path / "wandb").exists()


def test_a_metric_that_is_no_number_is_logged_as_nan_not_left_out():
    """A NaN metric (results.json writes null, and warns) reaches the tracker as NaN: absent, it would look as if
    the task never computed it (red team 12, 205). A stderr that could not be computed stays out."""
    import math

    from proctor.runs.trackers.contents import metric_values

    document = {"tasks": {"g": {"metrics": {"exact_match": {"value": None, "stderr": None}, "f1": {"value": 0.5}}}}}
    logged = metric_values(document)
    assert set(logged) == {"g/exact_match", "g/f1"}
    assert math.isnan(logged["g/exact_match"]) and logged["g/f1"] == 0.5
