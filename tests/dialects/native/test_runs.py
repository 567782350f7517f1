"""End-to-end runs on the tiny model: run folders, prompts, few-shot, chat, perplexity, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from proctor import evaluate, load_tasks
from proctor.engine.prepare import prepare_task
from tests.conftest import EXAMPLES


def read_samples(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


def test_quickstart_run_folder(tiny_model, tmp_path):
    result = evaluate([EXAMPLES / "quickstart"], tiny_model, output_dir=tmp_path / "run")
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["status"] == "complete" and results["proctor_version"]
    assert results["model"]["backend"] == "hf" and results["model"]["dtype"] == "float32"
    mc = results["tasks"]["quickstart_science_mc"]
    assert mc["n_samples"] == 30 and mc["version"] == "1" and len(mc["hash"]) == 16
    assert set(mc["metrics"]) == {"acc", "acc_norm", "acc_per_token", "brier_score"}
    assert 0 <= mc["metrics"]["acc"]["value"] <= 1 and mc["metrics"]["acc"]["stderr"] > 0
    samples = read_samples(tmp_path / "run")
    assert len(samples) == 50
    first = samples[0]
    assert first["id"] == "mc-01" and len(first["logprobs"]) == len(first["choices"]) == 4
    assert all(isinstance(x, float) for x in first["logprobs"])
    assert sum(first["distribution"]) == pytest.approx(1.0)
    assert first["metrics"]["acc"] == float(first["prediction"] == first["target"])
    gen = [s for s in samples if s["task"] == "quickstart_short_answers"]
    assert all("generation" in s and "extracted" in s for s in gen) and len(gen[0]["fewshot_ids"]) == 3
    # The mean over samples is the task metric.
    acc = [s["metrics"]["acc"] for s in samples if s["task"] == "quickstart_science_mc"]
    assert mc["metrics"]["acc"]["value"] == pytest.approx(sum(acc) / len(acc))
    configs = sorted(p.name for p in (tmp_path / "run" / "tasks").iterdir())
    assert configs == ["quickstart_science_mc.yaml", "quickstart_short_answers.yaml"]
    assert yaml.safe_load((tmp_path / "run" / "tasks" / configs[0]).read_text())["hash"] == mc["hash"]
    assert result.metric("quickstart_science_mc", "acc") == mc["metrics"]["acc"]["value"]


@pytest.mark.fast
def test_fewshot_choice_does_not_depend_on_other_samples():
    (task,) = load_tasks([EXAMPLES / "quickstart"], select=["quickstart_short_answers"])
    full = prepare_task(task, {})
    part = prepare_task(task, {}, limit=5)
    for a, b in zip(full.samples, part.samples):
        assert a.prompt == b.prompt and a.shots == b.shots
    assert all(s.sample.id not in s.shots for s in full.samples)
    assert len({s.shots for s in full.samples}) > 5  # shots differ between samples


def write_task(folder: Path, text: str) -> Path:
    path = folder / "task.yaml"
    path.write_text(textwrap.dedent(text).lstrip())
    return path


@pytest.mark.fast
def test_content_hash_follows_template_and_data(tmp_path):
    (tmp_path / "d.jsonl").write_text('{"q": "a", "c": ["x", "y"], "t": 0}\n')
    base = """
    name: t
    kind: multiple_choice
    data: d.jsonl
    prompt: "{{ q }}"
    choices: "{{ c }}"
    target: "{{ t }}"
    """
    hash_of = lambda: prepare_task(load_tasks([write_task(tmp_path, base)])[0], {}).content_hash  # noqa: E731
    first = hash_of()
    assert hash_of() == first
    base = base.replace('prompt: "{{ q }}"', 'prompt: "Q: {{ q }}"')
    second = hash_of()
    assert second != first
    (tmp_path / "d.jsonl").write_text('{"q": "b", "c": ["x", "y"], "t": 0}\n')
    assert hash_of() != second


def test_chat_template_and_system_prompt(tiny_model, tmp_path):
    (tmp_path / "d.jsonl").write_text('{"q": "Capital of France?", "c": ["Paris", "Rome"], "t": 0}\n')
    path = write_task(
        tmp_path,
        """
        name: chat_mc
        kind: multiple_choice
        data: d.jsonl
        chat: {system: "Answer briefly."}
        prompt: "{{ q }}"
        choices: "{{ c }}"
        target: "{{ t }}"
        target_delimiter: ""
        """,
    )
    evaluate([path], tiny_model, output_dir=tmp_path / "run")
    (sample,) = read_samples(tmp_path / "run")
    assert sample["prompt"] == [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Capital of France?"},
    ]
    assert sample["rendered_prompt"].startswith("<|im_start|>system\nAnswer briefly.<|im_end|>")
    assert sample["rendered_prompt"].endswith("<|im_start|>assistant\n")


def test_perplexity_task_over_a_text_file(tiny_model, tmp_path):
    text = "A short document about evaluation. " * 20
    (tmp_path / "doc.txt").write_text(text)
    path = write_task(
        tmp_path,
        """
        name: ppl
        kind: perplexity
        data: doc.txt
        text: "{{ text }}"
        perplexity: {window: 32, stride: 16}
        """,
    )
    result = evaluate([path], tiny_model, output_dir=tmp_path / "run")
    (sample,) = read_samples(tmp_path / "run")
    metrics = result.tasks["ppl"]["metrics"]
    import math

    assert sample["n_words"] == len(text.split()) and sample["n_bytes"] == len(text.encode())
    assert metrics["word_perplexity"]["value"] == pytest.approx(math.exp(-sample["logprob"] / sample["n_words"]))
    assert metrics["bits_per_byte"]["value"] == pytest.approx(-sample["logprob"] / sample["n_bytes"] / math.log(2))
    full = tiny_model.rolling_loglikelihood(
        [__import__("proctor.core.model_requests", fromlist=["x"]).RollingLoglikelihoodRequest(text, 32, 16)]
    )[0]
    assert sample["logprob"] == pytest.approx(full.logprob)


def test_breakdown_and_groups(tiny_model, tmp_path):
    for name in ("alpha", "beta"):
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(json.dumps({"q": f"{name} {i}", "c": ["x", "y"], "t": i % 2}) + "\n" for i in range(4))
        )
    path = write_task(
        tmp_path,
        """
        defaults:
          kind: multiple_choice
          prompt: "{{ q }}"
          choices: "{{ c }}"
          target: "{{ t }}"
          group: letters
        tasks:
          - name: both
            data: "*.jsonl"
            breakdown: _file
          - name: only_alpha
            data: alpha.jsonl
        """,
    )
    result = evaluate([path], tiny_model, output_dir=tmp_path / "run")
    per_file = result.tasks["both"]["breakdown"]["_file"]
    assert set(per_file) == {"alpha", "beta"} and per_file["alpha"]["n_samples"] == 4
    group = result.results["groups"]["letters"]
    assert group["tasks"] == ["both", "only_alpha"] and group["n_samples"] == 12
    acc = [result.metric(t, "acc") for t in ("both", "only_alpha")]
    assert group["metrics"]["acc"]["value"] == pytest.approx(sum(acc) / 2)
    assert group["metrics"]["acc"]["micro"] == pytest.approx((acc[0] * 8 + acc[1] * 4) / 12)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "proctor.cli", *args], capture_output=True, text=True)


def test_cli_run_ls_and_validate(tiny_model_dir, tmp_path):
    out = tmp_path / "cli-run"
    proc = run_cli(
        "run",
        str(EXAMPLES / "quickstart"),
        "--model",
        str(tiny_model_dir),
        "-o",
        str(out),
        "-q",
        "-t",
        "*_mc",
        "--limit",
        "5",
    )
    assert proc.returncode == 0, proc.stderr
    assert "quickstart_science_mc" in proc.stdout and "acc_norm" in proc.stdout
    results = json.loads((out / "results.json").read_text())
    assert (
        list(results["tasks"]) == ["quickstart_science_mc"]
        and results["tasks"]["quickstart_science_mc"]["n_samples"] == 5
    )
    assert results["command"][1:3] == ["run", str(EXAMPLES / "quickstart")]
    listing = run_cli("ls", str(EXAMPLES))
    assert listing.returncode == 0 and "quickstart_short_answers" in listing.stdout and "arc_easy" in listing.stdout
    valid = run_cli("validate", str(EXAMPLES / "quickstart"))
    assert valid.returncode == 0 and "2 task(s) valid" in valid.stdout
