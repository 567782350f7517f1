"""Few-shot examples from a separate file (``fewshot.source``): its row ids name other rows than the task's, so a
dev set of exactly ``count`` rows (MMLU's five per subject) gives every sample all of them, the task's own data
still never shows a sample itself."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import pytest

DEV = [{"q": f"dev question {i}?", "options": ["yes", "no"], "label": i % 2} for i in range(5)]
TEST = [{"q": f"test question {i}?", "options": ["yes", "no"], "label": 0} for i in range(4)]


def write(folder, source: str) -> None:
    (folder / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in DEV))
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in TEST))
    (folder / "task.yaml").write_text(
        textwrap.dedent(f"""
        tasks:
          - name: five_shot
            kind: multiple_choice
            data: {{path: test.jsonl}}
            prompt: "Q: {{{{ q }}}}\\nA:"
            choices: "{{{{ options }}}}"
            target: "{{{{ label }}}}"
            fewshot: {{count: 5, {source}}}
            metrics: [acc]
        """).lstrip()
    )


def test_a_dev_file_of_exactly_count_rows_gives_every_sample_all_of_them(tiny_model_dir, tmp_path):
    write(tmp_path, "source: {path: dev.jsonl}")
    done = subprocess.run(
        [sys.executable, "-m", "proctor.cli", "run", "task.yaml", "--model", str(tiny_model_dir), "-o", "out", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    samples = [json.loads(line) for line in (tmp_path / "out" / "samples.jsonl").read_text().splitlines()]
    assert [s["id"] for s in samples] == ["0", "1", "2", "3"]
    for s in samples:  # ids 0-3 are also dev ids: no dev row is skipped for them
        assert sorted(s["fewshot_ids"]) == ["0", "1", "2", "3", "4"], s["fewshot_ids"]
        prompt = s["prompt"]
        assert all(f"dev question {i}?" in prompt for i in range(5)) and prompt.endswith(
            f"Q: {TEST[int(s['id'])]['q']}\nA:"
        )
        assert s["metrics"]["acc"] == float(s["logprobs"][0] > s["logprobs"][1])
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    acc = results["tasks"]["five_shot"]["metrics"]["acc"]["value"]
    assert math.isclose(acc, sum(s["metrics"]["acc"] for s in samples) / 4)


@pytest.mark.fast
def test_the_tasks_own_data_never_shows_a_sample_itself(tmp_path):
    from proctor import load_tasks
    from proctor.engine.prepare import prepare_task

    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in DEV + TEST))
    write(tmp_path, "seed: 3")
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in DEV + TEST))
    (task,) = load_tasks([tmp_path / "task.yaml"])
    prepared = prepare_task(task, {})
    assert len(prepared.samples) == 9
    for s in prepared.samples:
        assert len(s.shots) == 5 and s.sample.id not in s.shots
