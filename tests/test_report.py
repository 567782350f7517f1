"""report.html: self-contained, correct numbers, working search — checked in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from fakes import FakeModel, write_tasks
from typer.testing import CliRunner

from proctor import evaluate
from proctor.cli import app
from proctor.runs.report import calibration, fmt, write_report

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    tasks = write_tasks(tmp / "tasks", n_mc=24, n_gen=6, star_gold=True)
    # A prompt with markup and a script end tag: the page must show it as text, not run it.
    with (tasks / "mc.jsonl").open("a") as handle:
        handle.write(json.dumps({"id": "xss", "question": "</script><b>bold?</b> & more", "choices": ["a", "b"], "answer": 1}) + "\n")
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


def _browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (pip install selenium)")
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    if not binary or not driver:
        pytest.skip("needs a Chromium browser and chromedriver (Debian: apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={tempfile.mkdtemp(prefix='proctor-chromium-')}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


@pytest.fixture(scope="module")
def browser():
    driver = _browser()
    yield driver
    driver.quit()


def test_report_in_headless_chromium(run_dir, browser):
    from selenium.webdriver.common.by import By

    browser.get((run_dir / "report.html").resolve().as_uri())
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
    expected = sum(len(t["metrics"]) for t in results["tasks"].values()) + sum(len(g["metrics"]) for g in results["groups"].values())
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


def test_report_page_errors_are_caught(tmp_path, run_dir, browser):
    """The console check above can fail: a page with a script error is reported."""
    broken = tmp_path / "broken.html"
    broken.write_text((run_dir / "report.html").read_text().replace('getElementById("search")', 'getElementById("nope").x'))
    browser.get(broken.as_uri())
    assert any(e["level"] == "SEVERE" for e in browser.get_log("browser"))


def test_write_report_path(run_dir, tmp_path):
    target = write_report(run_dir, tmp_path / "r.html")
    assert target.read_text().startswith("<!DOCTYPE html>")
