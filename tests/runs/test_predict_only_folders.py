"""A ``--predict-only`` run folder (answers kept, no metric) read by ``report``, ``compare`` and the viewer: no crash,
and each says what the run is: the report's warning, compare's refusal naming how to score it, the viewer's runs
table and run page."""

from __future__ import annotations

from pathlib import Path

import pytest

from proctor import evaluate
from proctor.core.errors import ProctorError
from proctor.engine.predict_only import NOTE
from proctor.runs.compare import compare_runs
from proctor.runs.report_data import run_entry
from proctor.runs.viewer import export_folder
from tests.support.browser import browser, index_drawn, open_page, wait_until
from tests.support.cli_runs import run_in_process
from tests.support.fakes import FakeModel, write_tasks


@pytest.fixture(scope="module", name="chromium")
def chromium_fixture():
    driver = browser()
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("predict-only")
    tasks = write_tasks(tmp / "tasks", n_mc=6, n_gen=3)
    evaluate([tasks], FakeModel(), output_dir=tmp / "runs" / "answers", predict_only=True)
    evaluate([tasks], FakeModel(), output_dir=tmp / "runs" / "scored")
    return tmp / "runs"


def test_the_report_of_a_predict_only_run_says_so(runs):
    code, output = run_in_process(["report", str(runs / "answers")])
    assert code == 0, output
    page = (runs / "answers" / "report.html").read_text()
    assert NOTE in page and "predict-only" in page


def test_compare_and_power_refuse_a_predict_only_run_naming_how_to_score_it(runs):
    with pytest.raises(ProctorError, match="is a predict-only run") as raised:
        compare_runs([runs / "scored", runs / "answers"])
    assert "without --predict-only" in str(raised.value) and f"-o {runs / 'answers'}" in str(raised.value)
    code, output = run_in_process(["compare", str(runs / "answers"), str(runs / "scored")])
    assert code == 2 and "is a predict-only run" in output and "Traceback" not in output
    code, output = run_in_process(["power", str(runs / "answers"), "--effect", "0.1"])
    assert code == 2 and "nothing to measure" in output and "without --predict-only" in output, output


def test_the_viewer_shows_a_predict_only_run_with_a_note(runs, tmp_path, chromium):
    from selenium.webdriver.common.by import By

    assert run_entry(runs / "answers", "answers")["predict_only"] is True
    assert run_entry(runs / "answers", "answers")["key_metrics"] == []
    assert run_entry(runs / "scored", "scored")["predict_only"] is False
    page = export_folder(runs, tmp_path / "runs.html")
    open_page(chromium, page.as_uri())
    index_drawn(chromium)
    row = chromium.find_element(By.CSS_SELECTOR, '#runs tbody tr[data-run="answers"]')
    assert row.find_element(By.CSS_SELECTOR, ".predict-only").text == "predict-only: answers kept, not scored"
    assert not chromium.find_elements(By.CSS_SELECTOR, '#runs tbody tr[data-run="scored"] .predict-only')
    open_page(chromium, page.as_uri() + "#run=answers")
    wait_until(chromium, lambda d: NOTE in d.find_element(By.TAG_NAME, "body").text)
    severe = [e for e in chromium.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []
