"""report.html: self-contained, correct numbers, working search — checked in headless Chromium."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from proctor import evaluate
from proctor.cli import app
from proctor.runs.report import fmt, write_report
from proctor.runs.report_data import calibration
from tests.support.browser import browser, index_drawn, open_page
from tests.support.fakes import FakeModel, write_tasks


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    tasks = write_tasks(tmp / "tasks", n_mc=24, n_gen=6, star_gold=True)
    # A prompt with markup and a script end tag: the page must show it as text, not run it.
    with (tasks / "mc.jsonl").open("a") as handle:
        handle.write(
            json.dumps({"id": "xss", "question": "</script><b>bold?</b> & more", "choices": ["a", "b"], "answer": 1})
            + "\n"
        )
    result = evaluate([tasks], FakeModel(prefer_gold=1.5), output_dir=tmp / "run")
    result = CliRunner().invoke(app, ["report", str(tmp / "run")])
    assert result.exit_code == 0, result.output
    return tmp / "run"


def test_report_is_self_contained(run_dir):
    text = (run_dir / "report.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "<script src" not in text and "<link" not in text
    assert "</script><b>bold?</b>" not in text  # escaped inside the embedded JSON


def test_calibration_bins():
    records = [{"distribution": [0.95, 0.05], "target": 0}] * 3 + [{"distribution": [0.55, 0.45], "target": 1}]
    cal = calibration(records)
    assert cal["n"] == 4
    assert {(round(b["confidence"], 2), b["accuracy"], b["n"]) for b in cal["bins"]} == {(0.95, 1.0, 3), (0.55, 0.0, 1)}
    assert cal["ece"] == pytest.approx(0.75 * 0.05 + 0.25 * 0.55)


@pytest.fixture(scope="module", name="browser")
def browser_fixture():
    driver = browser()
    yield driver
    driver.quit()


def test_report_in_headless_chromium(run_dir, browser):
    from selenium.webdriver.common.by import By

    open_page(browser, (run_dir / "report.html").resolve().as_uri())
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []

    results = json.loads((run_dir / "results.json").read_text())
    shown = 0
    for row in browser.find_elements(By.CSS_SELECTOR, "#summary tr[data-row], #groups tr[data-row]"):
        kind, name, metric = row.get_attribute("data-row").split(":")
        entry = results["tasks" if kind == "task" else "groups"][name]["metrics"][metric]
        for cls, key in (("value", "value"), ("stderr", "stderr")):
            cell = row.find_element(By.CSS_SELECTOR, f"td.{cls}")
            assert cell.text == fmt(entry[key]), (name, metric, key)
            raw = cell.get_attribute("data-value")
            assert (json.loads(raw) if raw else None) == entry[key]
        shown += 1
    expected = sum(len(t["metrics"]) for t in results["tasks"].values()) + sum(
        len(g["metrics"]) for g in results["groups"].values()
    )
    assert shown == expected and shown > 10

    assert browser.find_elements(By.CSS_SELECTOR, ".cal svg circle")  # calibration plots drawn
    assert len(browser.find_elements(By.CSS_SELECTOR, ".task-charts")) == len(results["tasks"])

    n_samples = sum(t["n_samples"] for t in results["tasks"].values())
    count = browser.find_element(By.ID, "match-count")
    assert count.get_attribute("data-matches") == str(n_samples)
    search = browser.find_element(By.ID, "search")
    search.send_keys("M7 colour")
    cards = browser.find_elements(By.CSS_SELECTOR, "#sample-list .sample")
    assert count.get_attribute("data-matches") == "2" and len(cards) == 2  # m7 in both multiple-choice tasks
    assert {c.get_attribute("data-id") for c in cards} == {"m7"}
    assert "which colour is number 7?" in cards[0].find_element(By.CSS_SELECTOR, "pre.prompt").text
    probabilities = [float(p.text) for p in cards[0].find_elements(By.CSS_SELECTOR, ".prob")]
    record = next(json.loads(line) for line in (run_dir / "samples.jsonl").open() if '"id": "m7"' in line)
    assert probabilities == [float(f"{p:.4f}") for p in record["distribution"]]
    search.clear()
    search.send_keys("bold?")
    cards = browser.find_elements(By.CSS_SELECTOR, "#sample-list .sample")
    assert [c.get_attribute("data-id") for c in cards] == ["xss", "xss"]
    assert "</script><b>bold?</b>" in cards[0].find_element(By.CSS_SELECTOR, "pre.prompt").text
    search.clear()
    search.send_keys("no sample says this")
    assert count.get_attribute("data-matches") == "0"
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []
    browser.find_element(By.ID, "nav-index").click()  # a one-run report lists its run too
    # The click changes the hash; the index is drawn on the hashchange event, after click() returns.
    index_drawn(browser)
    assert [r.get_attribute("data-run") for r in browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr")] == ["run"]


def test_report_page_errors_are_caught(tmp_path, run_dir, browser):
    """The console check above can fail: a page with a script error is reported."""
    broken = tmp_path / "broken.html"
    broken.write_text(
        (run_dir / "report.html").read_text().replace('var search = $("search")', 'var search = $("nope").x')
    )
    open_page(browser, broken.as_uri())
    assert any(e["level"] == "SEVERE" for e in browser.get_log("browser"))


def test_write_report_path(run_dir, tmp_path):
    target = write_report(run_dir, tmp_path / "r.html")
    assert target.read_text().startswith("<!DOCTYPE html>")


LONG = "a_generation_task_with_a_very_long_descriptive_name_for_error_analysis"
SHOTS = Path(tempfile.gettempdir()) / "proctor-report-screenshots"


@pytest.fixture(scope="module")
def big_run(tmp_path_factory) -> Path:
    """A run of more than 2,000 samples, with a long task name and unparsed generations."""
    tmp = tmp_path_factory.mktemp("big-report")
    tasks = write_tasks(tmp / "tasks", n_mc=800, n_gen=300, star_gold=True)
    (tasks / "long.yaml").write_text(
        f"name: {LONG}\nkind: generate\ndata: {{path: gen.jsonl, id: id}}\nprompt: 'Say: {{{{ question }}}}'\n"
        "target: '{{ answers }}'\ngeneration: {max_tokens: 8}\nextraction: {regex: '([0-4])', fallback: none}\n"
        "metrics: [exact_match, f1, null_count]\n"
    )
    evaluate([tasks], FakeModel(prefer_gold=0.8), output_dir=tmp / "run")
    write_report(tmp / "run")
    return tmp / "run"


def expected_status(records: list[dict]) -> list[str]:
    """Written out here: a task's outcome metric is its first metric that is 0 or 1 on every sample."""
    first: dict[str, str] = {}
    for task in dict.fromkeys(r["task"] for r in records):
        mine = [r for r in records if r["task"] == task]
        names = list(mine[0]["metrics"])
        first[task] = next((n for n in names if all(r["metrics"].get(n) in (None, 0, 1) for r in mine)), "")
    out = []
    for r in records:
        value = r["metrics"].get(first[r["task"]]) if first[r["task"]] else None
        out.append(
            "unparsed"
            if r.get("parsed") is False
            else "unscored"
            if value is None
            else "correct"
            if value == 1
            else "incorrect"
        )
    return out


def test_report_pages_filters_and_plots_on_2000_samples(big_run, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    records = [json.loads(line) for line in (big_run / "samples.jsonl").open()]
    assert len(records) >= 2000
    SHOTS.mkdir(exist_ok=True)
    browser.set_window_size(1400, 1000)
    open_page(browser, (big_run / "report.html").resolve().as_uri())
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []
    browser.save_screenshot(str(SHOTS / "top.png"))

    def cards():
        return browser.find_elements(By.CSS_SELECTOR, "#sample-list .sample")

    info = browser.find_element(By.ID, "page-info")
    count = browser.find_element(By.ID, "match-count")
    assert count.get_attribute("data-matches") == str(len(records))
    assert info.get_attribute("data-pages") == str(-(-len(records) // 50)) and len(cards()) == 50
    browser.find_element(By.ID, "next").click()
    assert info.get_attribute("data-page") == "2"
    assert [c.get_attribute("data-id") for c in cards()] == [str(r["id"]) for r in records[50:100]]
    browser.find_element(By.ID, "last").click()
    assert len(cards()) == len(records) - 50 * (int(info.get_attribute("data-pages")) - 1)

    # outcome filters: counts equal the statuses computed in this test
    statuses = expected_status(records)
    assert statuses.count("unparsed") > 0 and statuses.count("correct") > 0 and statuses.count("incorrect") > 0
    for value in ("correct", "incorrect", "unparsed"):
        Select(browser.find_element(By.ID, "status-filter")).select_by_value(value)
        assert count.get_attribute("data-matches") == str(statuses.count(value)), value
        assert {c.get_attribute("data-status") for c in cards()} == {value}
    browser.execute_script("document.getElementById('controls').scrollIntoView()")
    browser.save_screenshot(str(SHOTS / "unparsed.png"))
    Select(browser.find_element(By.ID, "status-filter")).select_by_value("")

    # metric value filter: f1 between 0.2 and 0.8
    Select(browser.find_element(By.ID, "metric-filter")).select_by_visible_text("f1")
    browser.find_element(By.ID, "metric-min").send_keys("0.2")
    browser.find_element(By.ID, "metric-max").send_keys("0.8")
    within = [
        r for r in records if isinstance(r["metrics"].get("f1"), (int, float)) and 0.2 <= r["metrics"]["f1"] <= 0.8
    ]
    assert count.get_attribute("data-matches") == str(len(within))
    browser.find_element(By.ID, "metric-min").clear()
    browser.find_element(By.ID, "metric-max").clear()
    Select(browser.find_element(By.ID, "metric-filter")).select_by_value("")

    # predictions as text, numbers rounded
    Select(browser.find_element(By.ID, "task-filter")).select_by_visible_text("mc_alpha")
    card = cards()[0]
    record = next(r for r in records if r["task"] == "mc_alpha")
    assert (
        card.find_element(By.CSS_SELECTOR, ".prediction").text
        == f"{record['prediction']}: {record['choices'][record['prediction']]}"
    )
    for value in re.findall(r"= (\S+)", card.find_element(By.CSS_SELECTOR, ".metrics").text):
        assert re.fullmatch(r"-?\d+(\.\d{4})?", value), value
    assert record["metrics"]["brier_score"] != round(record["metrics"]["brier_score"], 4)  # a long float, shown rounded
    browser.execute_script("document.getElementById('controls').scrollIntoView()")
    browser.save_screenshot(str(SHOTS / "samples.png"))

    # every plot has axis values; no label runs outside its chart (long names are not cut)
    for svg in browser.find_elements(By.CSS_SELECTOR, "svg.chart"):
        assert len(svg.find_elements(By.CSS_SELECTOR, ".tick")) >= 2
    overflow = browser.execute_script("""
        var bad = [];
        document.querySelectorAll('svg.chart text').forEach(function (t) {
          var b = t.getBoundingClientRect(), box = t.ownerSVGElement.getBoundingClientRect();
          if (b.left < box.left - 0.5 || b.right > box.right + 0.5 || b.top < box.top - 0.5 || b.bottom > box.bottom + 0.5)
            bad.push(t.textContent);
        });
        return bad;""")  # noqa: E501 (JavaScript the browser runs, as written)
    assert overflow == []
    labels = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "svg.chart .ctitle, svg.chart .lbl, .cname")]
    assert any(LONG in label for label in labels)
    browser.execute_script("document.querySelector('.task-charts[data-task=\"%s\"]').scrollIntoView()" % LONG)
    browser.save_screenshot(str(SHOTS / "charts.png"))
    browser.execute_script("document.querySelector('.cal').scrollIntoView()")
    browser.save_screenshot(str(SHOTS / "calibration.png"))
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []


def test_chart_ticks():
    from proctor.runs.report_charts import nice_ticks

    assert nice_ticks(0, 0.45) == [0, 0.2, 0.4, 0.6] and nice_ticks(0, 300) == [0, 100, 200, 300]
