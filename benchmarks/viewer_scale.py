"""How fast `proctor view` is on many runs and on one big run, in headless Chromium.

    python benchmarks/viewer_scale.py [--runs 50] [--samples 100000] [--repeat 3]

Writes, in a temporary folder, ``--runs`` small run folders (results.json + samples.jsonl of 200
multiple-choice samples each, made directly, no model) and one run of ``--samples`` samples (4 choices
each, probabilities, three metrics). Then, with `proctor view --port 0` started in a fresh process:

- start: from starting the process until the runs table shows every run in the browser;
- open: from asking for the big run until its first page of samples is drawn (the server reads and
  converts samples.jsonl once, then answers from memory; a second open is timed too);
- interactions on the big run, timed in the page (performance.now around the synchronous redraw):
  sort "most confident wrong", a word search, an outcome filter, a confidence range, the next page;
- export: `proctor view --export` of the big run's folder (seconds, file size) and opening that file.

Prints a table; asserts nothing (docs/performance.md records the figures).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root, for tests.support
from tests.support.browser import browser  # noqa: E402

WORDS = "red green blue amber violet teal ochre umber river stone cloud paper".split()


def write_run(folder: Path, n: int, seed: int, model: str) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    lines, correct = [], 0
    for i in range(n):
        logits = [rng.gauss(0, 1.5) for _ in range(4)]
        top = max(logits)
        weights = [2.718281828 ** (x - top) for x in logits]
        dist = [w / sum(weights) for w in weights]
        gold = rng.randrange(4)
        pred = dist.index(max(dist))
        correct += pred == gold
        words = " ".join(rng.choice(WORDS) for _ in range(12))
        lines.append(
            json.dumps(
                {
                    "task": f"task_{i % 4}",
                    "id": f"s{i}",
                    "source": {"file": "data.jsonl", "row": i + 1},
                    "prompt": f"Question {i}: which word follows {words}?\nAnswer:",
                    "rendered_prompt": None,
                    "fewshot_ids": [],
                    "choices": [f"{rng.choice(WORDS)} {k}" for k in range(4)],
                    "target": gold,
                    "logprobs": logits,
                    "n_tokens": [2] * 4,
                    "is_greedy": [k == pred for k in range(4)],
                    "distribution": dist,
                    "prediction": pred,
                    "correct": pred == gold,
                    "metrics": {
                        "acc": float(pred == gold),
                        "acc_norm": float(pred == gold),
                        "brier_score": sum((d - (k == gold)) ** 2 for k, d in enumerate(dist)),
                    },
                }
            )
        )
    data = "\n".join(lines) + "\n"
    (folder / "samples.jsonl").write_text(data)
    tasks = {
        f"task_{t}": {
            "kind": "multiple_choice",
            "dialect": "native",
            "source": None,
            "version": "1",
            "hash": "x",
            "n_samples": len(range(t, n, 4)),
            "metrics": {"acc": {"value": correct / n, "stderr": 0.01}},
            "requests": {"unique": len(range(t, n, 4))},
            "timing": {"total_seconds": 1.0},
        }
        for t in range(4)
    }
    results = {
        "proctor_version": "bench",
        "created": f"2026-01-{1 + seed % 28:02d}T00:00:00+00:00",
        "command": None,
        "model": {"backend": "fake", "model": model},
        "status": "complete",
        "tasks": tasks,
        "groups": {},
        "samples_bytes": len(data.encode()),
    }
    (folder / "results.json").write_text(json.dumps(results))


def start_server(folder: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "proctor.cli", "view", str(folder), "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    line = proc.stdout.readline()
    return proc, re.search(r"http://127\.0\.0\.1:\d+/", line).group(0)


def wait(browser, script: str, timeout: float = 300) -> None:
    end = time.perf_counter() + timeout
    while not browser.execute_script(script):
        if time.perf_counter() > end:
            raise TimeoutError(script)
        time.sleep(0.01)


TIMED = """
var el = document.getElementById(arguments[0]), t0 = performance.now();
if (el.tagName === 'BUTTON') el.click(); else { el.value = arguments[1]; el.dispatchEvent(new Event(el.tagName === 'SELECT' ? 'change' : 'input')); }
return [performance.now() - t0, document.getElementById('match-count').getAttribute('data-matches')];
"""  # noqa: E501 (JavaScript the browser runs, as written)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="proctor-viewer-bench-") as tmp:
        many, big = Path(tmp) / "many", Path(tmp) / "big"
        for i in range(args.runs):
            write_run(many / f"group{i % 5}" / f"run{i:03d}", 200, i, f"model-{i % 7}")
        write_run(big / "big", args.samples, 1, "big-model")
        size = (big / "big" / "samples.jsonl").stat().st_size
        driver = browser()
        driver.set_window_size(1400, 1000)
        try:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "proctor.cli", "--version"], check=True, capture_output=True)
            rows.append(("`proctor --version` (the command's own start)", f"{time.perf_counter() - t0:.2f} s"))
            starts = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                proc, url = start_server(many)
                driver.get(url)
                wait(driver, f"return document.querySelectorAll('#runs tbody tr').length === {args.runs}")
                starts.append(time.perf_counter() - t0)
                proc.terminate()
                proc.wait()
            rows.append(
                (
                    f"start, {args.runs} runs: process start to table drawn (best of {args.repeat})",
                    f"{min(starts):.2f} s",
                )
            )

            proc, url = start_server(big)
            try:
                driver.get(url)
                wait(driver, "return document.querySelectorAll('#runs tbody tr').length === 1")
                for attempt in ("first", "second"):
                    driver.get(url + "#")
                    t0 = time.perf_counter()
                    driver.get(url + "#run=big")
                    wait(driver, "return document.getElementById('run-view').getAttribute('data-samples') === 'big'")
                    drawn = time.perf_counter() - t0
                    wait(driver, "return document.getElementById('run-view').getAttribute('data-loaded') === 'big'")
                    rows.append(
                        (
                            f"open a run of {args.samples:,} samples "
                            f"({size / 1e6:.0f} MB samples.jsonl), {attempt} time: "
                            "samples drawn / summary too",
                            f"{drawn:.2f} s / {time.perf_counter() - t0:.2f} s",
                        )
                    )
                for label, element, value in (
                    ("sort: most confident wrong first", "sort", "confident-wrong"),
                    ("search one word (every sample's text)", "search", "ochre"),
                    ("search two words", "search", "ochre river"),
                    ("outcome: incorrect", "status-filter", "incorrect"),
                    ("confidence from 0.9", "conf-min", "0.9"),
                    ("next page", "next", None),
                    ("sort: file order", "sort", ""),
                ):
                    best = min(driver.execute_script(TIMED, element, value)[0] for _ in range(args.repeat))
                    rows.append((f"{label}", f"{best:.0f} ms"))
            finally:
                proc.terminate()
                proc.wait()

            page = Path(tmp) / "big.html"
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "proctor.cli", "view", str(big), "--export", str(page)],
                check=True,
                capture_output=True,
            )
            rows.append(
                (
                    f"export {args.samples:,} samples to one file",
                    f"{time.perf_counter() - t0:.2f} s, {page.stat().st_size / 1e6:.0f} MB",
                )
            )
            t0 = time.perf_counter()
            driver.get(page.as_uri() + "#run=big")
            wait(driver, "return document.getElementById('run-view').getAttribute('data-loaded') === 'big'")
            rows.append(("open that file at the run", f"{time.perf_counter() - t0:.2f} s"))
        finally:
            driver.quit()
    width = max(len(r[0]) for r in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")


if __name__ == "__main__":
    main()
