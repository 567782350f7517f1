"""``--sample-id`` (engine/sample_selection.py): each task keeps the samples with the ids named, whose numbers are
their own (equal, per sample, to those of a run over every row); an id no task holds is an error before the model
loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.api import evaluate
from proctor.core.errors import ProctorError
from proctor.engine.sample_selection import parse_sample_ids
from proctor.runs.manifest import RunMismatchError
from tests.support.fakes import FakeModel, write_tasks

pytestmark = pytest.mark.fast


def _by_id(run: Path) -> dict[tuple[str, str], dict]:
    lines = (run / "samples.jsonl").read_text().splitlines()
    return {(r["task"], r["id"]): r for r in map(json.loads, lines)}


def test_the_selected_samples_numbers_are_their_own(tmp_path):
    folder = write_tasks(tmp_path / "tasks", n_mc=8, n_gen=6)
    full = evaluate([folder], FakeModel(), output_dir=tmp_path / "full")
    chosen = evaluate([folder], FakeModel(), output_dir=tmp_path / "chosen", sample_ids=["m1", "m6", "g[24]"])
    results = chosen.results
    assert results["sample_ids"] == ["m1", "m6", "g[24]"]
    assert {name: t["n_samples"] for name, t in results["tasks"].items()} == {
        "mc_alpha": 2,
        "mc_beta": 2,
        "gen_gamma": 2,
        "ppl_delta": 2,
    }
    assert all(t["settings"]["sample_ids"] == ["m1", "m6", "g[24]"] for t in results["tasks"].values())
    everything, kept = _by_id(tmp_path / "full"), _by_id(tmp_path / "chosen")
    assert set(kept) == {(task, i) for task in ("mc_alpha", "mc_beta") for i in ("m1", "m6")} | {
        (task, i) for task in ("gen_gamma", "ppl_delta") for i in ("g2", "g4")
    }
    for key, record in kept.items():
        assert record["metrics"] == everything[key]["metrics"], key
    # each task's value: the mean of its selected samples' own (perplexity is a corpus metric)
    for name, metric in (("mc_alpha", "acc"), ("mc_alpha", "brier_score"), ("gen_gamma", "f1")):
        values = [r["metrics"][metric] for (t, _), r in kept.items() if t == name]
        assert results["tasks"][name]["metrics"][metric]["value"] == pytest.approx(sum(values) / 2), name
    assert results["tasks"]["mc_alpha"]["metrics"] != full.results["tasks"]["mc_alpha"]["metrics"]
    assert full.results["tasks"]["mc_alpha"]["n_samples"] == 8
    assert "sample_ids" not in full.results and full.results["tasks"]["mc_alpha"]["settings"]["sample_ids"] is None


def test_a_task_holding_none_of_the_ids_does_not_run_and_a_warning_says_so(tmp_path):
    folder = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=3)
    results = evaluate([folder], FakeModel(), output_dir=tmp_path / "run", sample_ids=["m2"]).results
    assert sorted(results["tasks"]) == ["mc_alpha", "mc_beta"]
    assert results["tasks"]["mc_alpha"]["n_samples"] == 1
    assert "gen_gamma: holds none of the --sample-id ids, so it did not run" in results["warnings"]


def test_an_id_no_task_holds_is_an_error_before_the_model_is_called(tmp_path):
    folder = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=3)
    model = FakeModel()
    with pytest.raises(ProctorError) as raised:
        evaluate([folder], model, output_dir=tmp_path / "run", sample_ids=["m1", "nope", "x*"])
    message = str(raised.value)
    assert "'nope', 'x*'" in message and "'m1'" not in message.partition("has ids")[0]
    assert "mc_alpha, mc_beta, gen_gamma, ppl_delta" in message and "'m0', 'm1', 'm2'" in message
    assert model.calls == [] and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "given, says",
    [
        (["a,,b"], "names an empty id"),
        (["a", "b,a"], "id 'a' is given twice"),
        ([" , "], "names an empty id"),
    ],
)
def test_malformed_id_lists_are_refused(given, says):
    with pytest.raises(ProctorError, match=says):
        parse_sample_ids(given)


def test_ids_are_split_on_commas_and_stripped():
    assert parse_sample_ids(["a, b", "c"]) == ("a", "b", "c")


def test_sample_ids_and_a_limit_exclude_each_other(tmp_path):
    folder = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=3)
    with pytest.raises(ProctorError, match="--sample-id and --limit exclude each other"):
        evaluate([folder], FakeModel(), output_dir=tmp_path / "run", sample_ids=["m1"], limit=2)


def test_other_ids_in_the_same_folder_are_a_change_the_resume_check_names(tmp_path):
    folder = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=3)
    evaluate([folder], FakeModel(), output_dir=tmp_path / "run", sample_ids=["m1"])
    with pytest.raises(RunMismatchError, match=r"option sample_ids changed \(\['m1'\] -> \['m2'\]\)"):
        evaluate([folder], FakeModel(), output_dir=tmp_path / "run", sample_ids=["m2"])


def test_one_string_of_ids_is_a_comma_list_not_its_letters(tmp_path):
    folder = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=3)
    results = evaluate([folder], FakeModel(), output_dir=tmp_path / "run", sample_ids="m1,g2").results
    assert results["sample_ids"] == ["m1", "g2"]
    assert {name: t["n_samples"] for name, t in results["tasks"].items()} == dict.fromkeys(
        ("mc_alpha", "mc_beta", "gen_gamma", "ppl_delta"), 1
    )
