"""`proctor view`: every run under a folder, served on 127.0.0.1 (or exported as one file), driven in headless Chromium.

The runs table, a run's samples sorted "most confident wrong" first and filtered by confidence, a per-sample
link, two runs side by side on their shared samples (disagreements first, means over the shared samples), hostile
strings shown as text, corrupt and partial run folders named in the table, and a clean stop."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from proctor import evaluate
from proctor.runs.compare import compare_runs
from proctor.runs.viewer import export_folder
from tests.support.browser import browser, index_drawn, open_page, wait_until
from tests.support.fakes import FakeModel, write_tasks

HOSTILE = [
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=1">',
    '<svg onload="window.__pwned=1">',
]


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("view")
    tasks = write_tasks(tmp / "tasks", n_mc=60, n_gen=10, star_gold=True)
    runs = tmp / "runs"
    evaluate([tasks], FakeModel("model-a", prefer_gold=1.5), output_dir=runs / "a", export=False)
    evaluate(
        [tasks],
        FakeModel("model-b", salt="b", prefer_gold=0.5),
        output_dir=runs / "nested" / "b",
        limit=40,
        export=False,
    )
    # hostile strings everywhere a run's text reaches the page: model, task, ids, prompts, choices, generations
    hostile = tmp / "hostile"
    hostile.mkdir()
    rows = [
        {
            "id": HOSTILE[i % 3] + str(i),
            "question": HOSTILE[(i + 1) % 3],
            "choices": [HOSTILE[2], "*" + HOSTILE[0]],
            "answer": 1,
        }
        for i in range(6)
    ]
    (hostile / "mc.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (hostile / "t.yaml").write_text(
        "name: 'x<script>window.__pwned=1</script>'\nkind: multiple_choice\ndata: {path: mc.jsonl, id: id}\n"
        "prompt: '{{ question }}'\nchoices: '{{ choices }}'\ntarget: '{{ answer }}'\n"
    )
    evaluate([hostile], FakeModel(HOSTILE[1], prefer_gold=1.0), output_dir=runs / "hostile", export=False)
    # corrupt and partial folders: not JSON, a torn samples.jsonl, a run that has not finished a task
    (runs / "broken").mkdir()
    (runs / "broken" / "results.json").write_text("{not json")
    (runs / "torn").mkdir()
    (runs / "torn" / "results.json").write_text(
        (runs / "a" / "results.json").read_text().replace('"samples_bytes"', '"was_samples_bytes"')
    )
    (runs / "torn" / "samples.jsonl").write_text((runs / "a" / "samples.jsonl").read_text()[:5000])
    (runs / "started").mkdir()
    (runs / "started" / "run.json").write_text("{}")
    return runs


@pytest.fixture(scope="module")
def server(folder):
    """`proctor view FOLDER --port 0` in a fresh process; its URL from the line it prints."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "proctor.cli", "view", str(folder), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    match = re.search(r"http://127\.0\.0\.1:\d+/", line)
    if not match:
        proc.kill()
        pytest.fail(f"no address printed: {line!r} {proc.stderr.read()}")
    assert "6 run(s)" in line
    yield proc, match.group(0)
    if proc.poll() is None:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module", name="browser")
def browser_fixture():
    driver = browser()
    driver.set_window_size(1400, 1000)
    yield driver
    driver.quit()


def loaded(browser, view: str = "run-view") -> None:
    """The served page reads a run when it is opened: wait until it is drawn."""
    from selenium.webdriver.common.by import By

    wait_until(browser, lambda d: d.find_element(By.ID, view).get_attribute("data-loaded"), timeout=60)


def no_errors(browser) -> None:
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []


def test_runs_table(server, folder, browser):
    from selenium.webdriver.common.by import By

    _, url = server
    open_page(browser, url)
    no_errors(browser)
    rows = {r.get_attribute("data-run"): r for r in browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr")}
    assert set(rows) == {"a", "nested/b", "hostile", "broken", "torn", "started"}
    results = json.loads((folder / "a" / "results.json").read_text())
    row = rows["a"]
    assert row.find_element(By.CSS_SELECTOR, ".model").text == "model-a"
    assert row.find_element(By.CSS_SELECTOR, ".samples").text == str(
        sum(t["n_samples"] for t in results["tasks"].values())
    )
    assert row.find_element(By.CSS_SELECTOR, ".created").text == results["created"]
    shown = {s.text.rsplit(" ", 1)[0]: s.text.rsplit(" ", 1)[1] for s in row.find_elements(By.CSS_SELECTOR, ".km")}
    acc = results["tasks"]["mc_alpha"]["metrics"]["acc"]["value"]
    assert shown["mc_alpha acc"] == f"{acc:.4f}"
    assert shown["group science acc"] == f"{results['groups']['science']['metrics']['acc']['value']:.4f}"
    assert rows["broken"].find_element(By.CSS_SELECTOR, ".status").text == "unreadable"
    assert "not valid JSON" in rows["broken"].find_element(By.CSS_SELECTOR, ".key-metrics").text
    assert rows["started"].find_element(By.CSS_SELECTOR, ".status").text == "started (no results yet)"
    # sort by model: a click sorts ascending, a second click descending
    header = browser.find_element(By.CSS_SELECTOR, '#runs th[data-sort="model"]')
    header.click()
    models = [
        r.find_element(By.CSS_SELECTOR, ".model").text for r in browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
    ]
    assert models == sorted(models)
    header.click()
    models = [
        r.find_element(By.CSS_SELECTOR, ".model").text for r in browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
    ]
    assert models == sorted(models, reverse=True)
    no_errors(browser)


def test_run_samples_sorted_most_confident_wrong_and_filtered(server, folder, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _, url = server
    open_page(browser, url + "#run=a")
    loaded(browser)
    no_errors(browser)
    mine = records(folder / "a")
    count = browser.find_element(By.ID, "match-count")
    assert count.get_attribute("data-matches") == str(len(mine))
    Select(browser.find_element(By.ID, "task-filter")).select_by_visible_text("mc_alpha")
    Select(browser.find_element(By.ID, "sort")).select_by_value("confident-wrong")
    alpha = [r for r in mine if r["task"] == "mc_alpha"]
    wrong = sorted((r for r in alpha if r["metrics"]["acc"] == 0), key=lambda r: -max(r["distribution"]))
    cards = browser.find_elements(By.CSS_SELECTOR, "#sample-list .sample")
    assert [c.get_attribute("data-id") for c in cards[: len(wrong)]] == [r["id"] for r in wrong]
    assert {c.get_attribute("data-status") for c in cards[: len(wrong)]} == {"incorrect"}
    assert float(cards[0].get_attribute("data-confidence")) == pytest.approx(max(wrong[0]["distribution"]))
    # a confidence range
    browser.find_element(By.ID, "conf-min").send_keys("0.5")
    browser.find_element(By.ID, "conf-max").send_keys("0.9")
    within = [r for r in alpha if 0.5 <= max(r["distribution"]) <= 0.9]
    assert count.get_attribute("data-matches") == str(len(within)) and 0 < len(within) < len(alpha)
    no_errors(browser)


def test_per_sample_link(server, folder, browser):
    from selenium.webdriver.common.by import By

    _, url = server
    open_page(browser, url + "#run=a&task=mc_beta&id=m57")  # past the first page of 50
    loaded(browser)
    card = browser.find_element(By.CSS_SELECTOR, "#sample-list .sample.target-sample")
    assert (card.get_attribute("data-task"), card.get_attribute("data-id")) == ("mc_beta", "m57")
    assert browser.find_element(By.ID, "page-info").get_attribute("data-page") == "2"
    assert browser.execute_script(
        "var b = arguments[0].getBoundingClientRect(); return b.top >= 0 && b.top < innerHeight;", card
    )
    # the card's own link is that address
    href = card.find_element(By.CSS_SELECTOR, "a.permalink").get_attribute("href")
    assert href.endswith("#run=a&task=mc_beta&id=m57")
    no_errors(browser)


def test_two_runs_side_by_side(server, folder, browser):
    from selenium.webdriver.common.by import By

    _, url = server
    open_page(browser, url)
    for key in ("a", "nested/b"):
        browser.find_element(By.CSS_SELECTOR, f'#runs tr[data-run="{key}"] input[type=checkbox]').click()
    browser.find_element(By.ID, "compare-button").click()
    loaded(browser, "compare-view")
    a = {r["id"]: r for r in records(folder / "a") if r["task"] == "mc_alpha"}
    b = {r["id"]: r for r in records(folder / "nested" / "b") if r["task"] == "mc_alpha"}
    shared = [i for i in a if i in b]
    assert 0 < len(shared) < len(a)  # b ran with --limit 40
    disagree = [
        i
        for i in shared
        if a[i]["metrics"]["acc"] != b[i]["metrics"]["acc"] or a[i]["prediction"] != b[i]["prediction"]
    ]
    summary = browser.find_element(By.ID, "compare-summary")
    assert summary.get_attribute("data-shared") == str(len(shared)) and summary.get_attribute("data-disagree") == str(
        len(disagree)
    )
    rows = browser.find_elements(By.CSS_SELECTOR, "#compare-table tbody tr")
    assert [r.get_attribute("data-id") for r in rows[: len(disagree)]] == disagree  # disagreements first, in file order
    assert {r.get_attribute("class") for r in rows[: len(disagree)]} == {"disagree"}
    # means over the shared samples only, for both runs
    for key, run in (("a", a), ("nested/b", b)):
        cell = browser.find_element(By.CSS_SELECTOR, f'#compare-means tr[data-run="{key}"] td[data-metric="acc"]')
        assert float(cell.get_attribute("data-value")) == pytest.approx(
            sum(run[i]["metrics"]["acc"] for i in shared) / len(shared)
        )
    browser.find_element(By.ID, "compare-disagree").click()
    assert browser.find_element(By.ID, "compare-page").get_attribute("data-rows") == str(len(disagree))
    # b ran with --limit 40: the banner names that setting for every shared task it cut (the 60-row ones; the
    # others kept every row, the same content and as many samples: no difference), as `proctor compare` does
    banner = browser.find_element(By.ID, "compare-settings")
    comparison = compare_runs([folder / "a", folder / "nested" / "b"], n_boot=100)["comparisons"][0]
    named = comparison["settings_differ"]
    assert {(d["task"], d["setting"], d["a"], d["b"]) for d in named} == {
        (t, "limit", None, 40) for t in ("mc_alpha", "mc_beta")
    }
    assert banner.is_displayed() and banner.get_attribute("data-differ") == str(len(named))
    assert "Not comparable as they stand" in banner.text
    items = banner.find_elements(By.CSS_SELECTOR, "li")
    assert {(li.get_attribute("data-task"), li.get_attribute("data-setting")) for li in items} == {
        (d["task"], d["setting"]) for d in named
    }
    assert all(li.text.endswith(": limit: a none \u00b7 nested/b 40") for li in items)
    # the paired difference B - A with its standard error, p and minimum detectable effect: `proctor compare`'s
    paired = comparison["tasks"]["mc_alpha"]["metrics"]["acc"]["paired"]
    row = browser.find_element(By.CSS_SELECTOR, '#compare-paired tr[data-run="nested/b"][data-metric="acc"]')
    assert paired["stderr"] > 0 and paired["n"] == len(shared)
    for attribute, field in (("data-diff", "diff"), ("data-se", "stderr"), ("data-mde", "mde")):
        assert float(row.get_attribute(attribute)) == pytest.approx(paired[field], rel=1e-9, abs=1e-12)
    assert float(row.get_attribute("data-p")) == pytest.approx(paired["p_value"], abs=2e-7)  # erfc to 1.2e-7
    assert row.find_elements(By.TAG_NAME, "td")[-1].text == str(len(shared))
    no_errors(browser)


def test_a_run_side_by_side_with_itself_is_refused(server, browser):
    from selenium.webdriver.common.by import By

    _, url = server
    open_page(browser, url + "#compare=a&compare=a")
    loaded(browser, "compare-view")
    summary = browser.find_element(By.ID, "compare-summary")
    assert summary.get_attribute("data-refused") == "same-run" and "comparing a run with itself" in summary.text
    assert browser.find_elements(By.CSS_SELECTOR, "#compare-table tbody tr") == []
    assert not browser.find_element(By.ID, "compare-settings").is_displayed()
    no_errors(browser)


def test_hostile_strings_stay_text(server, folder, browser):
    from selenium.webdriver.common.by import By

    _, url = server
    open_page(browser, url + "#run=hostile")
    loaded(browser)
    cards = browser.find_elements(By.CSS_SELECTOR, "#sample-list .sample")
    assert len(cards) == 6
    assert HOSTILE[1] in cards[0].find_element(By.CSS_SELECTOR, "pre.prompt").text
    assert [c.text for c in cards[0].find_elements(By.CSS_SELECTOR, ".choice span:last-child")] == [
        HOSTILE[2],
        "*" + HOSTILE[0],
    ]
    assert browser.execute_script(
        "return window.__pwned === undefined && document.querySelectorAll('img, script[src], svg[onload]').length === 0"
    )
    open_page(browser, url + "#compare=hostile&compare=a")
    loaded(browser, "compare-view")
    assert browser.find_element(By.ID, "compare-summary").text == "These runs share no task."
    assert browser.execute_script("return window.__pwned === undefined")
    no_errors(browser)


def test_corrupt_folders_are_named_not_fatal(server, folder, browser):
    from selenium.webdriver.common.by import By

    _, url = server
    open_page(browser, url + "#run=torn")
    loaded(browser)
    error = browser.find_element(By.ID, "run-error")
    assert error.is_displayed() and "not a JSON line" in error.text  # a torn last line, named with its line number
    assert int(browser.find_element(By.ID, "match-count").get_attribute("data-matches")) > 0  # the lines before it
    with urllib.request.urlopen(url + "api/run?key=broken") as answer:
        payload = json.loads(answer.read())
    assert "not valid JSON" in payload["error"] and payload["summary"] == ""
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(url + "api/run?key=nope")
    assert missing.value.code == 404


def test_stops_cleanly(server):
    proc, url = server
    with urllib.request.urlopen(url) as answer:
        assert answer.status == 200 and b"proctor runs" in answer.read()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "stopped" in out and "Traceback" not in err, err


def test_export_is_one_offline_file(folder, tmp_path, browser):
    from selenium.webdriver.common.by import By

    page = tmp_path / "runs.html"
    done = subprocess.run(
        [sys.executable, "-m", "proctor.cli", "view", str(folder), "--export", str(page)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    text = page.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text) and "<link" not in text
    for payload in HOSTILE:
        assert payload not in text  # escaped in the markup and in the embedded JSON
    open_page(browser, page.as_uri() + "#run=a")
    browser.find_element(By.ID, "nav-index").click()  # back to the runs (drawn on hashchange, after the click)
    index_drawn(browser)
    assert (
        browser.find_element(By.ID, "index-view").is_displayed()
        and not browser.find_element(By.ID, "run-view").is_displayed()
    )
    assert len(browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr")) == 6
    open_page(browser, page.as_uri() + "#compare=a&compare=nested%2Fb&task=mc_beta")
    assert int(browser.find_element(By.ID, "compare-summary").get_attribute("data-shared")) == 40
    open_page(browser, page.as_uri() + "#run=hostile")
    assert browser.execute_script(
        "return window.__pwned === undefined && document.querySelectorAll('img').length === 0"
    )
    no_errors(browser)


def test_side_by_side_with_a_run_of_an_earlier_version_names_what_it_did_not_record(folder, tmp_path, browser):
    from selenium.webdriver.common.by import By

    runs = tmp_path / "runs"
    old = runs / "old"
    old.mkdir(parents=True)
    results = json.loads((folder / "nested" / "b" / "results.json").read_text())
    for task in results["tasks"].values():
        del task["settings"]  # as proctor wrote it before settings were recorded
    (old / "results.json").write_text(json.dumps(results))
    (old / "samples.jsonl").write_bytes((folder / "nested" / "b" / "samples.jsonl").read_bytes())
    shutil.copytree(folder / "a", runs / "new")
    pair = compare_runs([runs / "new", old], n_boot=100)["comparisons"][0]
    assert pair["settings_unknown"] and all(u["unknown_in"] == ["b"] for u in pair["settings_unknown"])
    page = tmp_path / "runs.html"
    export_folder(runs, page)
    open_page(browser, page.as_uri() + "#compare=new&compare=old")
    banner = browser.find_element(By.ID, "compare-settings")
    assert banner.is_displayed() and banner.get_attribute("data-unknown") == str(len(pair["settings_unknown"]))
    assert banner.get_attribute("data-differ") == str(len(pair["settings_differ"])) == "2"  # --limit 40 where it cut
    note = banner.find_element(By.CSS_SELECTOR, 'div[data-run="old"]').text
    names = list(dict.fromkeys(u["setting"] for u in pair["settings_unknown"]))
    assert note == f"Not recorded in old (written by an earlier proctor), so not compared: {', '.join(names)}"
    no_errors(browser)


def test_command_errors_are_one_line(tmp_path):
    def run(*args):
        done = subprocess.run(
            [sys.executable, "-m", "proctor.cli", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "COLUMNS": "200"},
        )
        return done.returncode, done.stdout + done.stderr

    code, out = run("view", str(tmp_path / "nowhere"))
    assert code == 2 and "is not a folder" in out and "Traceback" not in out
    (tmp_path / "empty").mkdir()
    code, out = run("view", str(tmp_path / "empty"), "--export", str(tmp_path / "x.html"))
    assert code == 2 and "no run folder" in out
    code, out = run("report", str(tmp_path / "empty"))
    assert code == 2 and "not a run folder" in out
