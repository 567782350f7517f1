"""Every dialect's samples look alike in the report and the viewer: choices with per-choice probabilities,
prediction and gold as text, calibration; generations with output, extracted answer and references.

Runs of native, lm-eval, SEA-HELM, GLM-130B and probsem tasks (FakeModel), exported by `proctor view --export`
in a fresh process, checked card by card in headless Chromium against samples.jsonl."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from proctor.api import evaluate, load_tasks
from tests.conftest import shared_path
from tests.support.browser import browser, open_page
from tests.support.fakes import FakeModel, write_tasks


def _lmeval_run(tmp: Path) -> Path:
    pytest.importorskip("lm_eval")
    import tests.support.lmeval_quiz as quiz

    folder, data = tmp / "lmeval_tasks", tmp / "lmeval_data"
    folder.mkdir()
    data.mkdir()
    (folder / "_template_yaml").write_text(quiz.TEMPLATE)
    (folder / "quiz_plain.yaml").write_text(quiz.TASK_A)
    (folder / "quiz_gen.yaml").write_text(
        "task: quiz_gen\ndataset_path: example/quiz\ndataset_name: small\ntest_split: test\n"
        "doc_to_text: 'Q: {{question}}\\nA:'\noutput_type: generate_until\ndoc_to_target: answer\n"
        "generation_kwargs: {until: ['\\n'], max_gen_toks: 8}\n"
        "filter_list:\n  - name: first_word\n    filter:\n      - function: regex\n"
        "        regex_pattern: '(b\\w+)'\n      - function: take_first\n"
        "metric_list:\n  - metric: exact_match\n    aggregation: mean\n    higher_is_better: true\n"
    )
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in quiz.ROWS))
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in quiz.SHOTS))
    tasks = load_tasks([folder], options={"lmeval_data": {"example/quiz:small": str(data)}})
    evaluate(tasks, FakeModel(), output_dir=tmp / "runs" / "lmeval", export=False)
    return tmp / "runs" / "lmeval"


@pytest.fixture(scope="module")
def dialect_runs(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("dialects")
    runs = tmp / "runs"
    evaluate(
        [write_tasks(tmp / "native", n_mc=6, n_gen=4, star_gold=True)],
        FakeModel(prefer_gold=1.5),
        output_dir=runs / "native",
        export=False,
    )
    _lmeval_run(tmp)
    seahelm = shared_path("examples", "seahelm", "seahelm_tasks", "nlu", "paraphrase_identification")
    evaluate([seahelm], FakeModel(), output_dir=runs / "seahelm", limit=4, export=False)
    glm = shared_path("examples", "glm130b", "SYNTHETIC_data_examples", "mytask_mul.yaml")
    evaluate([glm], FakeModel(), output_dir=runs / "glm", export=False)
    shutil.copytree(shared_path("examples", "probsem", "inputs"), tmp / "probsem")
    evaluate([tmp / "probsem"], FakeModel(), output_dir=runs / "probsem", export=False)
    return runs


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]


def test_every_dialect_writes_the_shared_fields(dialect_runs):
    kinds = {}
    for run in sorted(dialect_runs.iterdir()):
        for r in records(run):
            if r.get("choices") is not None:
                n = len(r["choices"])
                golds = r["target"] if isinstance(r["target"], list) else [r["target"]]
                assert all(isinstance(g, int) and 0 <= g < n for g in golds if g is not None), (run.name, r["task"])
                assert r.get("prediction") is None or 0 <= r["prediction"] < n
                if "distribution" in r:
                    assert len(r["distribution"]) == n and sum(r["distribution"]) == pytest.approx(1.0)
                kinds.setdefault(run.name, set()).add("choices+probs" if "distribution" in r else "choices")
            elif "generation" in r:
                assert isinstance(r["generation"], str) and isinstance(r["target"], list), (run.name, r["task"])
                kinds.setdefault(run.name, set()).add("generation")
    assert kinds == {
        "native": {"choices+probs", "generation"},
        "lmeval": {"choices+probs", "generation"},
        "seahelm": {"choices", "generation"},  # SEA-HELM classifies by generation: labels, no probabilities
        "glm": {"choices+probs"},
        "probsem": {"choices+probs"},
    }


def _expected_card(r: dict) -> dict:
    """What a card must show for a record, written out here from the record's fields."""
    if r.get("choices") is not None:
        choices = r["choices"]
        golds = [g for g in (r["target"] if isinstance(r["target"], list) else [r["target"]]) if g is not None]
        pred = r.get("prediction")
        return {
            "choices": [str(c) for c in choices],
            "probs": [f"{p:.4f}" for p in r["distribution"]] if "distribution" in r else ["—"] * len(choices),
            "prediction": f"{pred}: {choices[pred]}" if pred is not None else "(no answer found)",
            "target": " | ".join(f"{g}: {choices[g]}" for g in golds) if golds else "—",
            "generation": r.get("generation"),
            "gold": [str(choices[g]) for g in golds],
        }
    if "generation" not in r:  # a perplexity: its log-likelihood
        return {
            "choices": [],
            "probs": [],
            "gold": [],
            "generation": None,
            "target": "—",
            "prediction": f"logprob={r['logprob']:.4f}, n_tokens={r['n_tokens']}",
        }
    return {
        "choices": [],
        "probs": [],
        "gold": [],
        "generation": r["generation"],
        "target": " | ".join(r["target"]),
        "prediction": "(no answer found)"
        if r.get("parsed") is False
        else "—"
        if r.get("extracted") is None
        else str(r["extracted"]),
    }


def test_report_shows_every_dialect_alike(dialect_runs, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    page = tmp_path / "all.html"
    done = subprocess.run(
        [sys.executable, "-m", "proctor.cli", "view", str(dialect_runs), "--export", str(page)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "viewer:" in done.stdout and page.exists()
    driver = browser()
    try:
        driver.set_window_size(1400, 1000)
        for run in sorted(dialect_runs.iterdir()):
            open_page(driver, page.as_uri() + f"#run={run.name}")
            mine = records(run)
            results = json.loads((run / "results.json").read_text())
            for task in results["tasks"]:
                Select(driver.find_element(By.ID, "task-filter")).select_by_visible_text(task)
                expected = [r for r in mine if r["task"] == task]
                cards = driver.find_elements(By.CSS_SELECTOR, "#sample-list .sample")
                assert len(cards) == min(len(expected), 50), (run.name, task)
                for card, r in zip(cards, expected):
                    want = _expected_card(r)
                    assert card.get_attribute("data-id") == str(r["id"])
                    shown = [c.text for c in card.find_elements(By.CSS_SELECTOR, ".choice span:last-child")]
                    assert shown == want["choices"], (run.name, task, r["id"])
                    assert [p.text for p in card.find_elements(By.CSS_SELECTOR, ".prob")] == want["probs"]
                    assert card.find_element(By.CSS_SELECTOR, ".prediction").text == want["prediction"], (
                        run.name,
                        task,
                    )
                    assert card.find_element(By.CSS_SELECTOR, ".target").text == want["target"], (run.name, task)
                    if want["generation"] is not None:
                        assert card.find_element(By.CSS_SELECTOR, "pre.generation").text == want["generation"].strip()
                    assert [c.text for c in card.find_elements(By.CSS_SELECTOR, ".choice .gold")] == want["gold"]
                # calibration: drawn for every task whose records carry probabilities, a note for the others
                with_choices = [r for r in expected if r.get("choices") is not None]
                if any("distribution" in r and r["target"] is not None for r in with_choices):
                    assert driver.find_elements(By.CSS_SELECTOR, f'.cal[data-task="{task}"] svg circle'), (
                        run.name,
                        task,
                    )
                elif with_choices:
                    assert driver.find_element(By.CSS_SELECTOR, f'.cal[data-task="{task}"] .cal-note').text
            assert [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == [], run.name
        # lm-eval: a word that is only in a choice is found by the search
        open_page(driver, page.as_uri() + "#run=lmeval")
        driver.find_element(By.ID, "search").send_keys("steam")
        cards = driver.find_elements(By.CSS_SELECTOR, "#sample-list .sample")
        assert [(c.get_attribute("data-task"), c.get_attribute("data-id")) for c in cards] == [("quiz_plain", "3")]
    finally:
        driver.quit()


def test_lm_eval_report_has_calibration_and_text_gold(dialect_runs, tmp_path):
    """`proctor report` on an lm-eval run: not the degraded page of issue 27 (bare index, empty prediction)."""
    done = subprocess.run(
        [sys.executable, "-m", "proctor.cli", "report", str(dialect_runs / "lmeval"), "-o", str(tmp_path / "r.html")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "r.html").read_text()
    assert "No task in this run has choices" not in text and 'class="cal" data-task="quiz_plain"' in text
    mc = [r for r in records(dialect_runs / "lmeval") if r["task"] == "quiz_plain"]
    assert [r["choices"][r["target"]] for r in mc] == ["four", "blue", "four", "ice"]  # gold as the choice's text
    gen = [r for r in records(dialect_runs / "lmeval") if r["task"] == "quiz_gen"]
    assert {r["extracted"] for r in gen} <= {"blue", "[invalid]"} and any(
        r["parsed"] is False for r in gen
    )  # the regex filter's answer
