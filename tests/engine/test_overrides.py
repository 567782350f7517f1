"""Run-time overrides: each changes what it should, is recorded, and enters the resume check."""

from __future__ import annotations

import hashlib
import json
import math
import random
import shutil
import statistics
import subprocess
import sys
import textwrap
from math import comb
from pathlib import Path

import pytest

from proctor import __version__, evaluate, load_tasks
from proctor.core.errors import ProctorError
from proctor.core.run_overrides import RunOverrides, parse_gen_kwargs, parse_limit
from proctor.engine.override_policy import apply_overrides
from proctor.runs.manifest import RunMismatchError
from proctor.scoring.metrics import register_metric
from tests.conftest import EXAMPLES

QA = EXAMPLES / "quickstart" / "data" / "short_answers.jsonl"


@register_metric("test_even_length", ["generate"])
def _even_length(outcome, **_):  # a 0/1 metric that sampled generations hit sometimes
    return float(len(outcome.text) % 2 == 0)


def write_task(folder: Path, extra: str = "", kind_block: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(QA, folder / QA.name)  # beside the task: data stays in the task's folder
    (folder / "task.yaml").write_text(
        textwrap.dedent(f"""\
        name: qa
        kind: generate
        data: {{path: {QA.name}, id: id}}
        prompt: "Q: {{{{ question }}}}\\nA:"
        target: "{{{{ answers }}}}"
        generation: {{max_tokens: 6, stop: ["\\n"]}}
        metrics: [exact_match, test_even_length]
        """)
        + extra
    )
    return folder


def rows() -> list[dict]:
    return [json.loads(line) for line in QA.read_text().splitlines()]


def samples(run_dir: Path) -> list[dict]:
    text = (run_dir / "samples.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_num_fewshot_prompt_is_the_expected_text(tiny_model, tmp_path):
    folder = write_task(tmp_path / "t")
    result = evaluate([folder], tiny_model, output_dir=tmp_path / "run", limit=3, overrides=RunOverrides(num_fewshot=2))
    data = rows()
    ids = [r["id"] for r in data]
    for record in samples(result.run_dir):
        # the few-shot draw written out: sha256(seed, id) seeds random.Random, which samples count + 1 rows
        rng = random.Random(int.from_bytes(hashlib.sha256(f"1234\x00{record['id']}".encode()).digest()[:8], "big"))
        picks = [i for i in rng.sample(range(len(data)), 3) if ids[i] != record["id"]][:2]
        me = data[ids.index(record["id"])]
        shots = [f"Q: {data[i]['question']}\nA: {data[i]['answers'][0]}" for i in picks]
        assert record["prompt"] == "\n\n".join(shots + [f"Q: {me['question']}\nA:"])
    results = json.loads((result.run_dir / "results.json").read_text())
    assert results["overrides"] == {"num_fewshot": 2}
    assert json.loads((result.run_dir / "run.json").read_text())["options"]["overrides"] == {"num_fewshot": 2}
    # the resume check: another few-shot count in the same folder is refused, naming the change
    with pytest.raises(RunMismatchError, match="num_fewshot"):
        evaluate([folder], tiny_model, output_dir=tmp_path / "run", limit=3, overrides=RunOverrides(num_fewshot=1))


def test_seed_changes_sampled_generations_deterministically(tiny_model_dir, tmp_path):
    from proctor.models.hf.model import HFModel

    folder = write_task(tmp_path / "t")
    sampled = {"temperature": 50.0}

    def gens(seed: int, batch_size: int, name: str) -> list[str]:
        model = HFModel(tiny_model_dir, batch_size=batch_size, name="tiny-llama")
        o = RunOverrides(gen_kwargs=sampled, seed=seed)
        run = evaluate([folder], model, output_dir=tmp_path / name, limit=8, overrides=o, export=False)
        return [r["generation"] for r in samples(run.run_dir)]

    a1, a1_again, a1_b1, a2 = gens(1, 4, "a"), gens(1, 4, "b"), gens(1, 1, "c"), gens(2, 4, "d")
    assert a1 == a1_again == a1_b1  # same seed: same text, whatever the batch size
    assert a1 != a2  # another seed: other samples
    assert json.loads((tmp_path / "d" / "results.json").read_text())["overrides"] == {"gen_kwargs": sampled, "seed": 2}


def test_epochs_per_epoch_scores_and_pass_at_k(tiny_model, tmp_path):
    folder = write_task(tmp_path / "t")
    o = RunOverrides(gen_kwargs={"temperature": 50.0}, epochs=3, epoch_reducer="pass@2")
    result = evaluate([folder], tiny_model, output_dir=tmp_path / "run", limit=10, overrides=o, export=False)
    task = result.tasks["qa"]
    records = samples(result.run_dir)
    assert all(len(r["epochs"]) == 3 for r in records)
    per_epoch = [[r["epochs"][e]["metrics"]["test_even_length"] for r in records] for e in range(3)]
    for e in range(3):  # per-epoch score: the mean over samples of that epoch
        assert task["epochs"]["scores"]["test_even_length"][e] == pytest.approx(sum(per_epoch[e]) / len(records))
    # generations differ across epochs (each epoch has its own seed)
    assert any(len({ep["generation"] for ep in r["epochs"]}) > 1 for r in records)

    def unbiased(n: int, c: int, k: int) -> float:
        return 1.0 if n - c < k else 1.0 - comb(n - c, k) / comb(n, k)

    correct = [sum(int(per_epoch[e][i]) for e in range(3)) for i in range(len(records))]
    for k in (1, 2, 3):
        expected = sum(unbiased(3, c, k) for c in correct) / len(records)
        assert task["epochs"]["pass_at_k"]["test_even_length"][f"pass@{k}"] == pytest.approx(expected)
    assert task["metrics"]["test_even_length"]["value"] == pytest.approx(
        sum(unbiased(3, c, 2) for c in correct) / len(records)
    )
    assert 0 < sum(correct) < 30  # the check above is not trivially 0 or 1
    assert task["metrics"]["exact_match"]["value"] == pytest.approx(
        sum(sum(r["epochs"][e]["metrics"]["exact_match"] for e in range(3)) / 3 for r in records) / len(records)
    )


def test_system_prompt_limit_fraction_and_no_log_samples(tiny_model, tmp_path):
    folder = write_task(tmp_path / "t")
    o = RunOverrides(system_prompt="Answer in one word.")
    result = evaluate([folder], tiny_model, output_dir=tmp_path / "run", limit=0.25, overrides=o)
    records = samples(result.run_dir)
    assert len(records) == math.ceil(20 * 0.25) == result.tasks["qa"]["n_samples"]
    first = rows()[0]
    assert records[0]["prompt"] == f"Answer in one word.\n\nQ: {first['question']}\nA:"
    quiet = evaluate(
        [folder], tiny_model, output_dir=tmp_path / "quiet", limit=2, overrides=RunOverrides(log_samples=False)
    )
    assert (quiet.run_dir / "samples.jsonl").read_text() == "" and not (quiet.run_dir / "samples.parquet").exists()
    assert json.loads((quiet.run_dir / "results.json").read_text())["overrides"] == {"log_samples": False}


def test_fewshot_as_multiturn_needs_chat_and_shapes_messages(tiny_model, tmp_path):
    folder = write_task(tmp_path / "t", "fewshot: {count: 2}\n")
    with pytest.raises(ProctorError, match="needs the chat template"):
        evaluate(
            [folder], tiny_model, output_dir=tmp_path / "x", limit=2, overrides=RunOverrides(fewshot_as_multiturn=True)
        )
    turns = evaluate(
        [folder],
        tiny_model,
        output_dir=tmp_path / "turns",
        limit=2,
        chat=True,
        overrides=RunOverrides(fewshot_as_multiturn=True, system_prompt="Be brief."),
    )
    one = evaluate(
        [folder],
        tiny_model,
        output_dir=tmp_path / "one",
        limit=2,
        chat=True,
        overrides=RunOverrides(fewshot_as_multiturn=False),
    )
    roles = [m["role"] for m in samples(turns.run_dir)[0]["prompt"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [m["role"] for m in samples(one.run_dir)[0]["prompt"]] == ["user"]


def test_gen_kwargs_parsing():
    assert parse_gen_kwargs("temperature=0.7,top_p=0.9,max_gen_toks=32,until=['\\n', 'Q:']") == {
        "temperature": 0.7,
        "top_p": 0.9,
        "max_tokens": 32,
        "stop": ["\n", "Q:"],
    }
    assert parse_gen_kwargs("do_sample=False") == {"temperature": 0.0}
    with pytest.raises(ProctorError, match="unknown key 'temprature'"):
        parse_gen_kwargs("temprature=1")
    with pytest.raises(ProctorError, match="top_p"):
        parse_gen_kwargs("top_p=2")
    assert parse_limit("0.1") == 0.1 and parse_limit("5") == 5
    with pytest.raises(ProctorError, match="--limit"):
        parse_limit("1.5")
    # read as written, not as a float rounds it: nearly all rows is not one row, a count is whole
    assert parse_limit("3.0") == 3 and parse_limit("1e3") == 1000 and parse_limit(0.25) == 0.25
    for text in ("0.99999999999999999999", "1e-400"):
        with pytest.raises(ProctorError, match="fewer digits"):
            parse_limit(text)
    for text in ("1.0000000000000001", "1e400"):
        with pytest.raises(ProctorError, match="--limit takes a count"):
            parse_limit(text)
    with pytest.raises(ProctorError, match="--epoch-reducer"):
        RunOverrides(epochs=2, epoch_reducer="pass@3")


@pytest.mark.fast
def test_dialects_take_what_means_something(tmp_path):
    folder = tmp_path / "probsem"
    folder.mkdir()
    (folder / "p.txt").write_text("Pick the program.", encoding="utf-8")
    suite = {
        "pretext": "",
        "context": [{"text": "Add one to x.", "expected": 1}],
        "posttext": "Program:",
        "queries": ["a", "b"],
    }
    (folder / "p_code.json").write_text(json.dumps(suite), encoding="utf-8")
    probsem = load_tasks([folder])
    assert [t.dialect for t in probsem] == ["probsem"]
    for o, flag in (
        (RunOverrides(num_fewshot=2), "--num-fewshot"),
        (RunOverrides(system_prompt="x"), "--system-prompt"),
        (RunOverrides(epochs=2), "--epochs"),
        (RunOverrides(seed=3), r"the generation settings given \(seed\) have"),
    ):
        with pytest.raises(ProctorError, match=f"{flag}.*no meaning"):
            apply_overrides(probsem, o)
    mc = [t for t in load_tasks([EXAMPLES / "quickstart"]) if t.spec.kind == "multiple_choice"]
    with pytest.raises(ProctorError, match="--epochs has no meaning.*none of them generates"):
        apply_overrides(mc, RunOverrides(epochs=2))
    # lettered replies (--mc-format generate) generate: --max-tokens is theirs (red team 14, 367), sampling is not
    tokens = RunOverrides(gen_kwargs={"max_tokens": 8})
    assert [t.name for t in apply_overrides(mc, tokens, mc_format="generate")] == [t.name for t in mc]
    with pytest.raises(
        ProctorError, match=r"generation settings given \(temperature\) have no meaning.*max_tokens only"
    ):
        apply_overrides(mc, RunOverrides(gen_kwargs={"temperature": 0.7}), mc_format="generate")
    with pytest.raises(ProctorError, match=r"given \(max_tokens\) have no meaning.*only under --mc-format generate"):
        apply_overrides(mc, tokens)  # auto: a model that scores never letters
    both = apply_overrides(load_tasks([EXAMPLES / "quickstart"]), RunOverrides(gen_kwargs={"max_tokens": 5}, seed=7))
    gen = {t.name: t.spec.generation for t in both}
    assert gen["quickstart_short_answers"].max_tokens == 5 and gen["quickstart_short_answers"].seed == 7
    glm = [t for t in load_tasks([EXAMPLES / "glm130b"]) if t.spec.kind == "generate" and not t.spec.task_class]
    if glm:
        (out,) = apply_overrides(glm[:1], RunOverrides(gen_kwargs={"max_tokens": 3}))
        assert out.spec.generation.max_tokens == 3 and out.spec.generation.stop == glm[0].spec.generation.stop


@pytest.mark.fast
def test_seahelm_overrides_map_to_its_config():
    seahelm = [t for t in load_tasks([EXAMPLES / "seahelm"]) if t.dialect == "seahelm"]
    if not seahelm:
        pytest.skip("no SEA-HELM example tasks")
    o = RunOverrides(num_fewshot=3, gen_kwargs={"temperature": 0.5, "max_tokens": 9}, epochs=2)
    (task,) = apply_overrides(seahelm[:1], o)
    options = task.spec.handler.options
    assert options.n_runs == 2 and options.config["temperature"] == 0.5
    assert options.config["fewshot_num_examples"] == {"base": 3, "instruct": 3}
    assert all(c["max_tokens"] == 9 for c in options.config["languages"].values())
    with pytest.raises(ProctorError, match="--system-prompt has no meaning"):
        apply_overrides(seahelm[:1], RunOverrides(system_prompt="x"))


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "proctor.cli", *args], capture_output=True, text=True)


def test_cli_version_and_overrides(tiny_model_dir, tmp_path):
    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"proctor {__version__}"
    folder = write_task(tmp_path / "t")
    task_file = folder / "task.yaml"
    task_file.write_text(task_file.read_text().replace(", test_even_length", ""))
    out = tmp_path / "cli"
    proc = run_cli(
        "run",
        str(folder),
        "--model",
        str(tiny_model_dir),
        "-o",
        str(out),
        "-q",
        "--limit",
        "0.1",
        "--temperature",
        "0.8",
        "--max-tokens",
        "4",
        "--seed",
        "5",
        "--epochs",
        "2",
        "--num-fewshot",
        "1",
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    results = json.loads((out / "results.json").read_text())
    assert results["overrides"] == {
        "num_fewshot": 1,
        "gen_kwargs": {"temperature": 0.8, "max_tokens": 4},
        "seed": 5,
        "epochs": 2,
        "epoch_reducer": "mean",
    }
    assert results["limit"] == 0.1 and results["tasks"]["qa"]["n_samples"] == 2
    bad = run_cli(
        "run", str(folder), "--model", str(tiny_model_dir), "-o", str(tmp_path / "bad"), "-q", "--gen-kwargs", "tempx=1"
    )
    assert bad.returncode == 2 and "unknown key 'tempx'" in bad.stderr and "Traceback" not in bad.stderr
    use_case = tmp_path / "case.py"
    use_case.write_text(  # a use case file: it loads, and the override is refused before the model loads
        "from proctor import UseCase\n\nclass Echo(UseCase):\n"
        "    def generate(self, model, tokenizer=None, gen_kwargs=None, runtime_overrides=None, **kw):\n"
        "        return []\n\n"
        "    def evaluate(self, generations):\n        return {}\n\n"
        "evaluation_data = [{'id': '1'}]\nevaluation_metrics = []\n"
    )
    refused = run_cli("run", str(use_case), "--model", str(tiny_model_dir), "-q", "--num-fewshot", "2")
    assert refused.returncode == 2 and "use case files" in refused.stderr and "Traceback" not in refused.stderr


def test_seahelm_run_takes_fewshot_max_tokens_and_epochs(tmp_path):
    from tests.conftest import shared_path
    from tests.support.fakes import FakeModel

    folder = shared_path("examples", "seahelm", "seahelm_tasks", "nlu", "paraphrase_identification")

    def run(o: RunOverrides, name: str):
        model, sent = FakeModel(), []
        answer = model.generate
        model.generate = lambda requests, progress=None: (sent.extend(requests), answer(requests, progress))[1]
        result = evaluate(
            [folder], model, select=["paraphrase/my"], output_dir=tmp_path / name, limit=2, export=False, overrides=o
        )
        return result, sent

    marks = []
    for n in (0, 1, 2):
        _, sent = run(RunOverrides(num_fewshot=n, gen_kwargs={"max_tokens": 3}), f"shots{n}")
        assert {r.max_tokens for r in sent} == {3} and len(sent) == 2
        marks.append(sent[0].prompt.count("SENTENCE_1"))
    assert marks[2] - marks[1] == marks[1] - marks[0] > 0  # each shot adds one example's text
    result, sent = run(RunOverrides(epochs=2), "epochs")
    assert sorted({r.seed for r in sent}) == [0, 1] and len(sent) == 4  # SEA-HELM's seeded runs, one per epoch
    record = json.loads((result.run_dir / "samples.jsonl").read_text().splitlines()[0])
    assert len(record["run_scores"]) == 2
    assert json.loads((result.run_dir / "results.json").read_text())["overrides"] == {
        "epochs": 2,
        "epoch_reducer": "mean",
    }


def test_epochs_report_within_and_between_question_variance(tiny_model, tmp_path):
    """Miller's resampling: per question the variance across epochs (within), the variance of the question means
    less within / k (between), and the stderr of the mean over questions, written out from the samples."""
    folder = write_task(tmp_path / "t")
    o = RunOverrides(gen_kwargs={"temperature": 50.0}, epochs=3)
    result = evaluate([folder], tiny_model, output_dir=tmp_path / "run", limit=10, overrides=o, export=False)
    records = samples(result.run_dir)
    found = result.tasks["qa"]["epochs"]["variance"]["test_even_length"]
    columns = [[float(e["metrics"]["test_even_length"]) for e in r["epochs"]] for r in records]
    n, k = len(columns), 3
    within = sum(statistics.variance(c) for c in columns) / n
    means = [sum(c) / k for c in columns]
    assert within > 0  # the epochs do differ, so the check below is not trivially zero
    assert found["n_questions"] == n and found["k"] == k
    assert found["within"] == pytest.approx(within)
    assert found["between"] == pytest.approx(max(0.0, statistics.variance(means) - within / k))
    assert found["stderr"] == pytest.approx(math.sqrt(statistics.variance(means) / n))
    assert found["stderr_one_epoch"] == pytest.approx(math.sqrt((found["between"] + within) / n))
    # the reduced metric's own stderr is the same standard error of the question means
    assert result.tasks["qa"]["metrics"]["test_even_length"]["stderr"] == pytest.approx(found["stderr"])
