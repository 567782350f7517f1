"""Multiple choice by lettered generation is reported honestly: unparsed replies counted (with a
warning above 10% recorded in results.json), the formulation shown in the table, results.json, the
report and compare, and the report shows the prompt sent and the raw reply, not one-hot
"probabilities" or a calibration plot."""

from __future__ import annotations

import json

import pytest

from proctor import evaluate
from proctor.core.model_requests import GenerateResult
from proctor.runs.compare import compare_runs
from proctor.runs.report import render_report
from tests.support.fakes import FakeModel, _unit, write_tasks


class LetterModel(FakeModel):
    """Answers 'B' to some prompts and nothing to the others (a chat server that often says nothing)."""

    supports_loglikelihood = False

    def __init__(self, *args, share: float = 0.5, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.share = share

    def generate(self, requests, progress=None):
        self._log("generate", len(requests))
        out = [GenerateResult("B" if _unit("letter", r.prompt) < self.share else "", "stop", 1, 1) for r in requests]
        if progress:
            progress(len(requests))
        return out


def records(run_dir, task):
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["task"] == task]


@pytest.mark.fast
def test_unparsed_replies_are_counted_warned_about_and_recorded(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=40, n_gen=0)
    result = evaluate([tasks], LetterModel(share=0.5), output_dir=tmp_path / "run", select=["mc_alpha"], export=False)
    task = result.tasks["mc_alpha"]
    rows = records(tmp_path / "run", "mc_alpha")
    empty = sum(r["generation"] == "" for r in rows)  # counted from the raw replies, independently
    assert 0 < empty < len(rows)
    assert task["mc_format"] == "generate"
    assert task["unparsed"] == {"count": empty, "n": 40, "rate": empty / 40}
    # an empty reply scores as wrong; 'B' is right exactly when the gold answer is choice 1 (no shuffle)
    answers = {f"m{i}": i % 4 for i in range(40)}
    expected_acc = sum(r["generation"] == "B" and answers[r["id"]] == 1 for r in rows) / 40
    assert task["metrics"]["acc"]["value"] == expected_acc
    # the unparsed replies' warning, and (the model answers only 'B') the constant replies' (runs/outcome_tally.py)
    unread = [w for w in task["warnings"] if "named no option letter" in w]
    assert empty / 40 > 0.10 and len(unread) == 1 and f"{empty} of 40 replies" in unread[0]
    assert any("lettered replies all named option B" in w for w in task["warnings"])
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert f"mc_alpha: {unread[0]}" in saved["warnings"]
    # the record keeps the lettered prompt that was sent and the raw reply
    first = rows[0]
    assert "A. " in first["prompt_sent"] and "Answer with the letter" in first["prompt_sent"]
    assert first["generation"] in ("B", "")


@pytest.mark.fast
def test_no_warning_at_or_below_ten_percent(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=40, n_gen=0)
    result = evaluate([tasks], LetterModel(share=1.0), output_dir=tmp_path / "run", select=["mc_alpha"], export=False)
    assert result.tasks["mc_alpha"]["unparsed"] == {"count": 0, "n": 40, "rate": 0.0}
    said = result.tasks["mc_alpha"].get("warnings", [])
    assert not any("named no option letter" in w for w in said)  # (only the constant 'B' replies are news)


def test_report_shows_prompt_sent_and_reply_and_no_calibration_for_lettered_tasks(tmp_path):
    from selenium.webdriver.common.by import By

    from tests.support.browser import browser

    tasks = write_tasks(tmp_path / "tasks", n_mc=12, n_gen=0)
    evaluate([tasks], LetterModel(share=0.5), output_dir=tmp_path / "run", select=["mc_alpha"], export=False)
    page = render_report(tmp_path / "run")
    rows = records(tmp_path / "run", "mc_alpha")
    assert 'class="chart calibration"' not in page  # no one-hot calibration plot (it would show ECE 1.0)
    assert "lettered generation: a letter is no probability" in page
    assert "lettered generation" in page and "unparsed" in page and "warning:" in page
    (tmp_path / "report.html").write_text(page)
    driver = browser()
    try:
        driver.get((tmp_path / "report.html").as_uri())
        cards = {c.get_attribute("data-id"): c for c in driver.find_elements(By.CSS_SELECTOR, "#sample-list .sample")}
        assert len(cards) == len(rows)
        for r in rows:
            card = cards[r["id"]]
            assert card.find_element(By.CSS_SELECTOR, "pre.prompt").text == r["prompt_sent"].strip()
            assert card.find_element(By.CSS_SELECTOR, "pre.generation").text == r["generation"].strip()
            assert {p.text for p in card.find_elements(By.CSS_SELECTOR, ".prob")} == {"—"}  # a letter is no probability
            # no letter read: unparsed, whatever the accuracy says
            assert card.get_attribute("data-status") == (
                "unparsed" if r["extracted"] is None else "correct" if r["metrics"]["acc"] == 1 else "incorrect"
            )
    finally:
        driver.quit()


def test_compare_flags_runs_whose_formulations_differ(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=12, n_gen=0)
    evaluate([tasks], FakeModel(), output_dir=tmp_path / "ll", select=["mc_alpha"], export=False)
    evaluate([tasks], LetterModel(), output_dir=tmp_path / "gen", select=["mc_alpha"], export=False)
    found = compare_runs([tmp_path / "ll", tmp_path / "gen"], n_boot=200)
    entry = found["comparisons"][0]["tasks"]["mc_alpha"]
    assert entry["mc_format"] == {"a": "loglikelihood", "b": "generate"} and entry["formulation_differs"] is True
    # a second log-likelihood run (a run compared with itself is refused)
    evaluate([tasks], FakeModel(), output_dir=tmp_path / "ll2", select=["mc_alpha"], export=False)
    same = compare_runs([tmp_path / "ll", tmp_path / "ll2"], n_boot=200)["comparisons"][0]["tasks"]["mc_alpha"]
    assert "formulation_differs" not in same


def test_cli_table_shows_the_formulation():
    from proctor.cli.display import formulation

    assert (
        formulation({"mc_format": "generate", "unparsed": {"count": 3, "n": 10, "rate": 0.3}})
        == "lettered generation (3/10 unparsed, 30%)"
    )
    assert formulation({"mc_format": "loglikelihood"}) == "log-likelihood"
    assert formulation({"kind": "generate"}) == ""


@pytest.mark.fast
def test_cli_compare_warns_when_formulations_differ(tmp_path, capsys):
    from proctor.cli import main

    tasks = write_tasks(tmp_path / "tasks", n_mc=12, n_gen=0)
    evaluate([tasks], FakeModel(), output_dir=tmp_path / "ll", select=["mc_alpha"], export=False)
    evaluate([tasks], LetterModel(), output_dir=tmp_path / "gen", select=["mc_alpha"], export=False)
    main(["compare", str(tmp_path / "ll"), str(tmp_path / "gen"), "--resamples", "200", "-o", str(tmp_path / "c.json")])
    err = " ".join(capsys.readouterr().err.split())
    assert "mc_alpha: scored by loglikelihood in A but generate in B" in err
