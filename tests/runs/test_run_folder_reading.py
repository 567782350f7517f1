"""Run folders read back as a user may have left them: files an editor saved with a byte-order mark are read,
a run's samples.jsonl that is a folder is named (in the viewer's row of that run, the other runs still shown),
and runs that share nothing to compare are an error rather than an empty table."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from proctor import evaluate
from proctor.core.errors import ProctorError
from proctor.runs.compare import compare_runs
from proctor.runs.report import render_report
from proctor.runs.run_exports import iter_samples, load_results, samples_text
from proctor.runs.viewer import export_folder, serve
from tests.support.fakes import FakeModel, write_tasks

BOM = b"\xef\xbb\xbf"


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> Path:
    return write_tasks(tmp_path_factory.mktemp("reading") / "tasks", n_mc=6, n_gen=3)


@pytest.fixture(scope="module")
def run(tasks) -> Path:
    return evaluate([tasks], FakeModel(), output_dir=tasks.parent / "run", export=False).run_dir


def _copy(run: Path, to: Path) -> Path:
    to.mkdir()
    for name in ("results.json", "samples.jsonl", "run.json", "store.sqlite"):
        (to / name).write_bytes((run / name).read_bytes())
    return to


def test_results_and_samples_saved_with_a_byte_order_mark_read_as_without(run, tmp_path):
    marked = _copy(run, tmp_path / "marked")
    (marked / "results.json").write_bytes(BOM + (run / "results.json").read_bytes())
    results = json.loads((run / "results.json").read_text())
    samples = (run / "samples.jsonl").read_bytes()
    results["samples_bytes"] = len(BOM + samples)  # the file as the editor saved it, results.json describing it
    results["run_id"] = "another"  # compared below as another run holding the same answers (a copy is refused)
    (marked / "results.json").write_bytes(BOM + json.dumps(results).encode())
    (marked / "samples.jsonl").write_bytes(BOM + samples)
    assert load_results(marked)["tasks"] == load_results(run)["tasks"]
    assert list(iter_samples(marked)) == list(iter_samples(run))
    assert samples_text(marked) == samples_text(run)  # the viewer's page reads the lines: no mark before the first
    render_report(marked)  # strict, as `proctor report`: a line that does not read would be an error
    pair = compare_runs([run, marked], n_boot=100)["comparisons"][0]
    diffs = {(n, m): e["diff"] for n, t in pair["tasks"].items() for m, e in t["metrics"].items() if e["n_shared"]}
    assert diffs and set(diffs.values()) == {0.0}, pair


def test_a_run_continues_in_a_folder_whose_run_json_has_a_byte_order_mark(tasks, run, tmp_path):
    folder = _copy(run, tmp_path / "again")
    (folder / "run.json").write_bytes(BOM + (run / "run.json").read_bytes())
    model = FakeModel()
    again = evaluate([tasks], model, output_dir=folder, export=False)
    assert model.calls == []  # every answer read back from the store: no work lost
    assert again.results["tasks"] == load_results(run)["tasks"] | {
        name: {**task, "timing": again.results["tasks"][name]["timing"]}
        for name, task in load_results(run)["tasks"].items()
    }


def test_a_samples_folder_is_named_in_its_row_and_the_other_runs_are_still_shown(run, tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    good, bad = _copy(run, runs / "good"), _copy(run, runs / "bad")
    (bad / "samples.jsonl").unlink()
    (bad / "samples.jsonl").mkdir()
    with pytest.raises(ProctorError, match="samples.jsonl is a folder"):
        render_report(bad)
    page = export_folder(runs, tmp_path / "page.html").read_text()
    assert "samples.jsonl is a folder" in page  # the bad run's row
    assert samples_text(good).splitlines()[0][:30] in page  # the good run's samples, embedded
    server = serve(runs, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        urllib.request.urlopen(url).read()
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(url + "api/samples?key=bad")
        assert answer.value.code == 500 and b"samples.jsonl is a folder" in answer.value.read()
        assert urllib.request.urlopen(url + "api/samples?key=good").read().decode() == samples_text(good)
    finally:
        server.shutdown()
        server.server_close()


def test_runs_with_no_task_or_no_metric_in_common_have_nothing_to_compare(run, tmp_path):
    other = _copy(run, tmp_path / "other")
    results = json.loads((run / "results.json").read_text())
    results["tasks"] = {f"renamed_{k}": v for k, v in results["tasks"].items()}
    results["groups"] = {}
    for digest in ("numbers_digest", "samples_digest"):  # a folder made by hand: it vouches for nothing
        results.pop(digest)
    (other / "results.json").write_text(json.dumps(results))
    (other / "samples.jsonl").write_text("")
    results["samples_bytes"] = 0
    (other / "results.json").write_text(json.dumps(results))
    with pytest.raises(ProctorError, match="share no task"):
        compare_runs([run, other])
