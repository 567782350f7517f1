"""Every dialect's choice tasks on a chat-only OpenAI-compatible server, and judges on this backend.

One real ``transformers serve`` (the tiny random Llama, CPU) is started for the module. A proxy in
front of it answers 404 to everything but ``/v1/chat/completions`` (a chat-only API) and records
every request. The backend finds no log-probs, so each multiple-choice task — native YAML (ARC-Easy
over ../shared/data), probsem suites, GLM-130B ``mul`` (plain and with a custom task class) and
SEA-HELM's ``-logprobs`` tasks — runs through the lettered generation formulation; a perplexity task
is refused with a clear error. A random model's replies are mostly unreadable: the tests check what
was sent and how it was scored, not accuracy.

Judges: ``openai:<name>`` judges a SEA-HELM MT-Bench task against the real server (unparseable
verdicts are retried, then counted as errors) and against ``ScriptedJudgeServer``, an in-process
stand-in (NOT a model) whose verdicts follow a fixed rule, through the ``proctor run`` command.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json
import math
import shutil
import textwrap
from pathlib import Path

import pytest

for module in ("httpx", "fastapi", "uvicorn"):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"needs '{module}' (pip install 'proctor[openai,serve]')", allow_module_level=True)

from proctor.api import evaluate, load_tasks  # noqa: E402
from proctor.core.errors import ProctorError  # noqa: E402
from proctor.kinds.mc_generate import INSTRUCTION  # noqa: E402
from proctor.models.openai.compat import OpenAIModel  # noqa: E402
from tests.conftest import REPO, shared_path  # noqa: E402
from tests.support.openai_fakes import FaultProxy, ScriptedJudgeServer, serve_transformers  # noqa: E402
from tests.support.seahelm_fixtures import mt_bench_copy  # noqa: E402

SEAHELM_MT_BENCH = "aisingapore/MultiTurn-Chat-MT-Bench"


@pytest.fixture(scope="module")
def tiny_model_dir(tiny_model_dir, tmp_path_factory):
    """The tiny model with a 2048-token context: `transformers serve` refuses a prompt longer than the
    model's context (SEA-HELM's paraphrase prompts run to ~1,300 tokens; the shared tiny model has 512).
    Default RoPE does not read the length, so the weights compute what they did."""
    copy = tmp_path_factory.mktemp("tiny-llama-2k") / "model"
    shutil.copytree(tiny_model_dir, copy)
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 2048}))
    return copy


@pytest.fixture(scope="module")
def serve(tiny_model_dir, tmp_path_factory):
    yield from serve_transformers(tiny_model_dir, tmp_path_factory.mktemp("serve"))


@pytest.fixture
def chat_only(serve):
    with FaultProxy(serve, rate=0.0, chat_only=True) as proxy:
        yield proxy


def backend(proxy: FaultProxy, model_dir: Path, **kw) -> OpenAIModel:
    return OpenAIModel(
        str(model_dir), proxy.url, name="tiny-serve", endpoint="chat", backoff=0.05, concurrency=2, max_retries=2, **kw
    )


def records(run_dir: Path, task: str) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    return [r for r in rows if r["task"] == task]


def lettered_prompts(proxy: FaultProxy) -> list[str]:
    """The last user message of every chat request that carried lettered options."""
    out = []
    for path, body in proxy.received:
        assert path.endswith("/chat/completions")
        last = [m["content"] for m in body.get("messages", []) if m["role"] == "user"][-1]
        if INSTRUCTION in last:
            out.append(last)
    return out


def check_generation_records(rows: list[dict]) -> None:
    for row in rows:
        assert row["mc_format"] == "generate" and sorted(row["option_order"]) == list(range(len(row["choices"])))
        assert isinstance(row["generation"], str)
        assert sum(row["distribution"]) == 1.0 or row["prediction"] is None
        if row["prediction"] is not None:  # the extracted letter names the option that was predicted
            letter = "ABCDEFGHIJKLMNOPQRSTUVWXYZ".index(row["extracted"])
            assert row["option_order"][letter] == row["prediction"]
            assert row["correct"] == (row["prediction"] == row["target"])


def test_chat_only_server_is_detected(chat_only, tiny_model_dir):
    model = backend(chat_only, tiny_model_dir)
    assert not model.supports_loglikelihood
    assert not any(path.endswith("/v1/completions") for path, _ in chat_only.received)
    # left on the completions endpoint, the self-check meets a 404 and reports it as the reason
    texts = OpenAIModel(str(tiny_model_dir), chat_only.url, name="tiny-serve", max_retries=1)
    assert not texts.supports_loglikelihood and "HTTP 404" in texts._mode_reason
    assert any(path.endswith("/v1/completions") for path, _ in chat_only.received)


def test_native_yaml_arc_easy(chat_only, tiny_model_dir, tmp_path):
    data = shared_path("data", "arc_easy")
    result = evaluate(
        [REPO / "examples" / "benchmarks" / "arc_easy.yaml"],
        backend(chat_only, tiny_model_dir),
        output_dir=tmp_path / "run",
        limit=4,
        variables={"PROCTOR_DATA": str(data.parent)},
        export=False,
    )
    task = result.tasks["arc_easy"]
    assert task["mc_format"] == "generate" and task["n_samples"] == 4 and task["requests"]["type"] == "generate"
    rows = records(result.run_dir, "arc_easy")
    check_generation_records(rows)
    sent = lettered_prompts(chat_only)
    assert len(sent) == 4
    for row, text in zip(sorted(rows, key=lambda r: r["prompt"]), sorted(sent)):
        assert text.startswith(row["prompt"]) and f"A. {row['choices'][0]}" in text
    assert task["metrics"]["acc"]["value"] == pytest.approx(sum(r["correct"] for r in rows) / 4)
    assert task["usage"]["requests"] == len(chat_only.received) == 4  # every request the server saw, counted


def test_shuffled_options_keep_scoring_right(chat_only, tiny_model_dir, tmp_path):
    data = shared_path("data", "arc_easy")
    result = evaluate(
        [REPO / "examples" / "benchmarks" / "arc_easy.yaml"],
        backend(chat_only, tiny_model_dir),
        output_dir=tmp_path / "run",
        limit=4,
        variables={"PROCTOR_DATA": str(data.parent)},
        export=False,
        mc_shuffle_seed=3,
    )
    rows = records(result.run_dir, "arc_easy")
    assert any(r["option_order"] != sorted(r["option_order"]) for r in rows)
    check_generation_records(rows)
    sent = lettered_prompts(chat_only)
    for row in rows:  # the options were shown in the recorded order
        (text,) = [t for t in sent if t.startswith(row["prompt"] + "\n\n")]
        shown = [f"{letter}. {row['choices'][i]}" for letter, i in zip("ABCDE", row["option_order"])]
        assert "\n".join(shown) in text


def test_probsem_suites(chat_only, tiny_model_dir, tmp_path):
    inputs = tmp_path / "inputs"
    shutil.copytree(shared_path("examples", "probsem", "inputs"), inputs)
    result = evaluate([inputs], backend(chat_only, tiny_model_dir), output_dir=tmp_path / "run", export=False)
    for name in ("test_A", "test_B"):
        task = result.tasks[name]
        suite = json.loads((inputs / f"{name}.json").read_text())
        assert task["mc_format"] == "generate" and task["n_samples"] == len(suite["context"])
        rows = records(result.run_dir, name)
        check_generation_records(rows)
        # the CSV has one row per context and query: logp NaN (no log-probs), score one-hot on the chosen query
        table = list(csv.DictReader((result.run_dir / f"{name}_tiny-serve_results.csv").open(encoding="utf-8")))
        assert [r["query"] for r in table] == [q for _ in suite["context"] for q in suite["queries"]]
        assert all(math.isnan(float(r["logp"])) for r in table)
        for k, row in enumerate(rows):
            scores = [float(r["score"]) for r in table[k * len(suite["queries"]) : (k + 1) * len(suite["queries"])]]
            assert scores == row["distribution"] and sum(scores) == 1.0
    unscored = result.tasks["test_B"]["metrics"]["distribution_acc"]  # expected = -1: still no ground truth
    assert unscored["n_scored"] == 0 and unscored["n_unscored"] == 1
    shown = [
        "\n".join(
            f"{letter}. {q}" for letter, q in zip("ABCDEFGH", json.loads((inputs / f"{n}.json").read_text())["queries"])
        )
        for n in ("test_A", "test_B")
    ]
    sent = lettered_prompts(chat_only)
    assert len(sent) == sum(result.tasks[n]["n_samples"] for n in ("test_A", "test_B"))
    assert all(any(block + "\n\n" in text for block in shown) for text in sent)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def test_glm_mul_plain_and_custom_class(chat_only, tiny_model_dir, tmp_path):
    folder = shared_path("examples", "glm130b", "SYNTHETIC_data_examples")
    model = backend(chat_only, tiny_model_dir)
    plain = evaluate([folder / "mytask_mul.yaml"], model, output_dir=tmp_path / "plain", limit=3, export=False)
    task = plain.tasks["mytask_mul/validation"]
    n = task["n_samples"]  # the synthetic example has two rows
    assert task["mc_format"] == "generate" and n >= 2 and len(lettered_prompts(chat_only)) == n
    check_generation_records(records(plain.run_dir, "mytask_mul/validation"))
    # a custom class keeping the default (summed log-prob) prediction gets the lettered formulation too
    _write(
        tmp_path / "tasks" / "glm" / "custom" / "rules.py",
        """
        from proctor.tasks.custom import MultipleChoiceTask

        class Default(MultipleChoiceTask):
            pass

        class ByLogprob(MultipleChoiceTask):
            def predict_single_batch(self, batch):
                return self.model.cond_log_prob([b["inputs"] for b in batch], [b["choices"] for b in batch])
    """,
    )
    data = folder / "mytask_mul"
    for name, cls in (("default", "Default"), ("bylogprob", "ByLogprob")):
        _write(
            tmp_path / "tasks" / "glm" / f"{name}.yaml",
            f"""
            name: {name}
            type: mul
            module: tasks.glm.custom.rules.{cls}
            path: {data.name}
            file-pattern: "**/validation.jsonl"
        """,
        )
    before = len(lettered_prompts(chat_only))
    trust = {"data_path": data.parent, "dialect_options": {"trust_task_code": True}}
    custom = evaluate(
        [tmp_path / "tasks" / "glm" / "default.yaml"],
        model,
        output_dir=tmp_path / "custom",
        limit=3,
        export=False,
        **trust,
    )
    assert (
        custom.tasks["default"]["mc_format"] == "generate" and custom.tasks["default"]["requests"]["type"] == "custom"
    )
    assert len(lettered_prompts(chat_only)) - before == n == custom.tasks["default"]["n_samples"]
    check_generation_records(records(custom.run_dir, "default"))
    # a class that asks for log-probs itself cannot get them: a clear error, never a number
    with pytest.raises(ProctorError, match="cannot score log-likelihoods"):
        evaluate(
            [tmp_path / "tasks" / "glm" / "bylogprob.yaml"],
            model,
            output_dir=tmp_path / "bylogprob",
            limit=3,
            export=False,
            **trust,
        )


def test_perplexity_task_is_refused(chat_only, tiny_model_dir, tmp_path):
    text = _write(tmp_path / "wiki" / "test.txt", "The cat sat on the mat.\n")
    yaml_path = _write(
        tmp_path / "lm.yaml",
        f"""
        name: lm
        type: lm
        path: {text.parent}
        file-pattern: "*.txt"
    """,
    )
    with pytest.raises(ProctorError, match="perplexity task and needs log-likelihoods"):
        evaluate([yaml_path], backend(chat_only, tiny_model_dir), output_dir=tmp_path / "run", export=False)
    assert chat_only.received == []  # refused before anything was sent


def test_seahelm_logprob_task(chat_only, tiny_model_dir, tmp_path):
    folder = shared_path("examples", "seahelm", "seahelm_tasks", "nlu", "paraphrase_identification")
    result = evaluate(
        [folder],
        backend(chat_only, tiny_model_dir),
        select=["paraphrase-logprobs/my"],
        output_dir=tmp_path / "run",
        limit=8,
        export=False,
    )
    task = result.tasks["paraphrase-logprobs/my"]
    assert task["mc_format"] == "generate"
    metrics = task["metrics"]
    rows = records(result.run_dir, "paraphrase-logprobs/my")
    labels = rows[0]["label_choice"]["choices"]
    assert len(labels) == 2 and all(r["label_choice"]["choices"] == labels for r in rows)
    chosen_gold = [r["label_choice"]["correct"] for r in rows]
    # the gold label's "cumulative probability" is 1 when the reply chose it, else 0; no log-prob is claimed
    assert metrics["average_cumulative_probabilities"]["value"] == pytest.approx(100 * sum(chosen_gold) / 8)
    assert metrics["average_cumulative_logprobs"]["value"] is None or math.isnan(
        metrics["average_cumulative_logprobs"]["value"]
    )
    sent = lettered_prompts(chat_only)
    assert len(sent) == 8 and all(f"A. {labels[0]}\nB. {labels[1]}" in text for text in sent)


# ---------------------------------------------------------------------------------------- judges


def _mt_bench_task(options: dict):
    folder = shared_path("examples", "seahelm", "seahelm_tasks", "multi_turn", "mt_bench", "config.yaml")
    (task,) = [t for t in load_tasks([folder], options=options) if t.name == "mt-bench/en"]
    config = task.spec.handler.options.config
    short = {**config, "languages": {"en": {**config["languages"]["en"], "max_tokens": 8}}}
    spec = task.spec.with_handler_options(config=short)
    return dataclasses.replace(task, spec=spec)


def test_real_server_as_pairwise_judge(serve, chat_only, tiny_model_dir, tmp_path):
    with FaultProxy(serve, rate=0.0, chat_only=True) as judge_proxy:
        options = {
            "seahelm_data": {SEAHELM_MT_BENCH: str(mt_bench_copy(tmp_path))},
            "seahelm_judge": f"openai:{tiny_model_dir}",
            "seahelm_judge_options": {"base_url": judge_proxy.url, "backoff": 0.05, "concurrency": 2},
            "seahelm_judge_generation": {"max_tokens": 8},
        }
        result = evaluate(
            [_mt_bench_task(options)], backend(chat_only, tiny_model_dir), output_dir=tmp_path / "run", export=False
        )
    metrics = result.tasks["mt-bench/en"]["metrics"]
    verdict_requests = [b for _, b in judge_proxy.received if "[[A]]" in json.dumps(b)]
    assert len(verdict_requests) == len(judge_proxy.received)  # only verdicts went to the judge's server
    assert all(b["max_tokens"] == 8 and b["messages"][0]["role"] == "system" for b in verdict_requests)
    # 2 questions x 2 turns x 2 orders = 8 verdicts; each unparseable one is asked 3 more times, then an error
    errors = int(metrics["judge_errors"]["value"])
    assert 0 <= errors <= 8 and metrics["judge_requests"]["value"] >= 8 + 3 * errors
    seeds = {(json.dumps(b["messages"]), b["seed"]) for b in verdict_requests}
    assert len(seeds) == len(verdict_requests) >= 8 + 3 * errors  # retries used new seeds
    usage = result.tasks["mt-bench/en"]["judge_usage"]
    assert usage["requests"] == len(judge_proxy.received) and usage["completion_tokens"] > 0
    assert result.tasks["mt-bench/en"]["usage"]["requests"] == len(chat_only.received)  # the evaluated model's own


def test_parseable_stand_in_judge_through_the_command(tmp_path, monkeypatch):
    """Both the evaluated model and the judge are ScriptedJudgeServer stand-ins (not models): the
    command wiring, the key handling and the win rate under a known rule."""
    from typer.testing import CliRunner

    from proctor.cli import app

    data = mt_bench_copy(tmp_path)
    config = shared_path("examples", "seahelm", "seahelm_tasks", "multi_turn", "mt_bench", "config.yaml")
    monkeypatch.setenv("JUDGE_SECRET_KEY", "sk-judge-very-secret")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the evaluated model's server gets no key
    with ScriptedJudgeServer() as model_server, ScriptedJudgeServer() as judge_server:
        out = tmp_path / "run"
        argv = [
            "run",
            str(config),
            "--model",
            "openai:evaluated",
            "--base-url",
            model_server.url,
            "--seahelm-data",
            f"{SEAHELM_MT_BENCH}={data}",
            "-t",
            "mt-bench/en",
            "--seahelm-judge",
            "openai:judge",
            "--judge-base-url",
            judge_server.url,
            "--judge-api-key-env",
            "JUDGE_SECRET_KEY",
            "--judge-arg",
            "price_prompt=1.0",
            "-o",
            str(out),
            "-q",
        ]
        outcome = CliRunner().invoke(app, argv)
        assert outcome.exit_code == 0, outcome.output
    results = json.loads((out / "results.json").read_text())["tasks"]["mt-bench/en"]
    metrics = results["metrics"]
    # the stand-in's rule: the longer answer wins; its answer is longer than every baseline answer
    assert metrics["judge_errors"]["value"] == 0 and metrics["judge_requests"]["value"] == 8
    assert metrics["weighted_win_rate"]["value"] == 100.0
    assert len(judge_server.received) == 8 and all(b["model"] == "judge" for b in judge_server.received)
    assert set(judge_server.authorization) == {"Bearer sk-judge-very-secret"}
    assert (
        all(a is None for a in model_server.authorization) and len(model_server.received) == 4
    )  # 2 questions x 2 turns
    assert results["judge_usage"]["requests"] == 8 and results["judge_usage"]["estimated_cost"] > 0
    for path in out.rglob("*"):  # the key is in no file of the run folder
        if path.is_file():
            assert b"sk-judge-very-secret" not in path.read_bytes(), path


def test_openai_judge_without_address_is_a_clear_error(tmp_path):
    options = {
        "seahelm_data": {SEAHELM_MT_BENCH: str(mt_bench_copy(tmp_path))},
        "seahelm_judge": "openai:judge",
        "seahelm_judge_options": {"base_url": None},
    }
    folder = shared_path("examples", "seahelm", "seahelm_tasks", "multi_turn", "mt_bench", "config.yaml")
    with pytest.raises(ProctorError, match="--judge-base-url"):
        load_tasks([folder], options=options)
