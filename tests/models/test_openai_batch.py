"""SEA-HELM's ``batch_api_calls`` and the OpenAI-compatible backend's ``batch_api``: generation through the Batch
API (upload a JSONL file, create the batch, poll it, read the output and error files), resumed after a kill,
and the online path with ``false`` or on a server without the endpoints.

``BatchServer`` (tests/support/openai_fakes.py) is a real HTTP server on 127.0.0.1, stopped after each test, with the
Files and Batches endpoints as OpenAI documents them, answering each line through a ``ScriptedJudgeServer``
(a stand-in, NOT a model: its MT-Bench verdicts follow a fixed rule, the longer answer wins), so the numbers
through batches can be compared with the same server's online answers.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

if importlib.util.find_spec("httpx") is None:
    pytest.skip("needs 'httpx' (pip install 'proctor[openai]')", allow_module_level=True)

from proctor.core.errors import ProctorError  # noqa: E402
from proctor.core.model_requests import GenerateRequest  # noqa: E402
from proctor.models.openai.compat import OpenAIModel  # noqa: E402
from proctor.models.openai.http import ApiError  # noqa: E402
from proctor.models.openai.messages import encode_chat  # noqa: E402
from tests.conftest import REPO, shared_path  # noqa: E402
from tests.support.openai_fakes import BatchServer, ScriptedJudgeServer  # noqa: E402
from tests.support.seahelm_fixtures import MT_BENCH_ID, mt_bench_copy  # noqa: E402


def chat(text: str, **kw) -> GenerateRequest:
    return GenerateRequest(encode_chat([{"role": "user", "content": text}]), kw.pop("max_tokens", 8), **kw)


# ---------------------------------------------------------------- the backend
def test_batches_answer_as_the_online_path_and_resend_failed_lines(tmp_path):
    texts = [f"Question {i}?" for i in range(5)] + ["Question 0?"]  # a repeat: its own line and custom id
    requests = [chat(t) for t in texts]
    with ScriptedJudgeServer(answer="An answer of five words.") as stand_in, BatchServer(stand_in.respond) as server:
        online = OpenAIModel("judge", server.url).generate(requests)
        server.online_calls.clear()
        server.fail_once = {"Question 3?"}
        model = OpenAIModel(
            "judge", server.url, batch_poll=0.01, batch_dir=str(tmp_path / "journal"), batch_api=True
        ).batched()
        got = model.generate(requests)
        assert got == online and server.online_calls == []
        first, second = server.created
        lines = [json.loads(x) for x in server.input_of(first).decode().splitlines()]
        assert len(lines) == 6 and len({x["custom_id"] for x in lines}) == 6
        assert all(x["method"] == "POST" and x["url"] == "/v1/chat/completions" for x in lines)
        assert [x["body"] for x in lines] == [
            {
                "model": "judge",
                "max_tokens": 8,
                "temperature": 0.0,
                "seed": 0,
                "messages": [{"role": "user", "content": t}],
            }
            for t in texts
        ]  # the online body
        assert first["endpoint"] == "/v1/chat/completions" and first["completion_window"] == "24h"
        # the failed line alone went again, in a second batch
        assert [
            json.loads(x)["body"]["messages"][0]["content"] for x in server.input_of(second).decode().splitlines()
        ] == ["Question 3?"]
        assert server.polls.count(first["id"]) >= 3  # validating -> in_progress -> finalizing -> completed
        assert model.usage()["requests"] == 6 and model.usage()["completion_tokens"] == 6 * 5
        assert list((tmp_path / "journal").glob("*.json")) == []  # nothing left pending


def test_a_line_that_keeps_failing_and_a_rejected_file_are_clear_errors(tmp_path):
    with ScriptedJudgeServer() as stand_in, BatchServer(stand_in.respond) as server:
        model = OpenAIModel("judge", server.url, batch_poll=0.0, batch_dir=str(tmp_path / "journal")).batched()

        def always_fail(path, body, headers):
            if "broken" in json.dumps(body):
                return 500, {"error": {"message": "the model crashed"}}
            return stand_in.respond(path, body, headers)

        server.respond_line = always_fail
        with pytest.raises(
            ApiError, match=r"1 request\(s\) got no answer .* after 3 batches .*HTTP 500: the model crashed"
        ):
            model.generate([chat("fine"), chat("broken")])
        assert len(server.created) == 3
        original = BatchServer._advance

        def reject(self, batch):
            batch.update(
                status="failed",
                errors={"object": "list", "data": [{"code": "invalid_request", "message": "bad line", "line": 1}]},
            )

        BatchServer._advance = reject
        try:
            with pytest.raises(ApiError, match="batch batch_0004 failed: bad line"):
                model.generate([chat("once more")])
        finally:
            BatchServer._advance = original
        assert list((tmp_path / "journal").glob("*.json")) == []  # a failed batch is forgotten: a rerun submits again
    with pytest.raises(ProctorError, match="batch_api must be true or false"):
        OpenAIModel("m", "http://127.0.0.1:9/v1", batch_api="yes")
    with pytest.raises(ProctorError, match="batch_poll must be >= 0"):
        OpenAIModel("m", "http://127.0.0.1:9/v1", batch_poll=-1)


def test_a_server_without_the_batch_api_is_asked_one_request_at_a_time(tmp_path):
    with ScriptedJudgeServer(answer="Plain answer.") as stand_in:  # no GET routes at all: 501 on /batches
        model = OpenAIModel("judge", stand_in.url, batch_dir=str(tmp_path / "journal")).batched()
        assert [r.text for r in model.generate([chat("a"), chat("b")])] == ["Plain answer."] * 2
        assert model.batch_available() is False and len(stand_in.received) == 2


# ---------------------------------------------------------------- SEA-HELM's batch_api_calls, through the command
def mt_bench_config(folder: Path, batch_api_calls: bool | None) -> Path:
    """SEA-HELM's MT-Bench config as shipped, with ``batch_api_calls`` set under ``judge:`` (or left out)."""
    text = shared_path("examples", "seahelm", "seahelm_tasks", "multi_turn", "mt_bench", "config.yaml").read_text(
        encoding="utf-8"
    )
    if batch_api_calls is not None:
        text = text.replace("  judge:\n", f"  judge:\n    batch_api_calls: {str(batch_api_calls).lower()}\n", 1)
        assert f"batch_api_calls: {str(batch_api_calls).lower()}" in text
    target = folder / "seahelm_tasks" / "multi_turn" / "mt_bench" / "config.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def command(config: Path, data: Path, model_url: str, judge_url: str, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "proctor.cli",
        "run",
        str(config),
        "--model",
        "openai:evaluated",
        "--base-url",
        model_url,
        "--seahelm-data",
        f"{MT_BENCH_ID}={data}",
        "-t",
        "mt-bench/en",
        "--seahelm-judge",
        "openai:judge",
        "--judge-base-url",
        judge_url,
        "--judge-arg",
        "batch_poll=0.02",
        "-o",
        str(out),
        "-q",
        *extra,
    ]


def environment(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return {**env, "PYTHONPATH": str(REPO / "src"), "PROCTOR_HOME": str(home)}


def task_result(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())["tasks"]["mt-bench/en"]


def verdict_lines(server: BatchServer) -> list[dict]:
    return [json.loads(x) for b in server.created for x in server.input_of(b).decode().splitlines()]


def test_batch_api_calls_true_judges_through_batches_false_and_no_endpoints_online(tmp_path):
    data = mt_bench_copy(tmp_path)
    env = environment(tmp_path / "home")
    runs = {}
    with (
        ScriptedJudgeServer() as model_server,
        ScriptedJudgeServer() as judge,
        BatchServer(judge.respond) as batch_server,
    ):
        for name, flag, judge_url in (
            ("batched", True, batch_server.url),
            ("online", False, batch_server.url),
            ("unset", None, batch_server.url),
            ("no-endpoints", True, judge.url),
        ):
            config = mt_bench_config(tmp_path / name, flag)
            before = (len(batch_server.created), len(batch_server.online_calls), len(judge.received))
            done = subprocess.run(
                command(config, data, model_server.url, judge_url, tmp_path / f"run-{name}"),
                capture_output=True,
                text=True,
                env=env,
                cwd=tmp_path,
            )
            assert done.returncode == 0, done.stderr
            runs[name] = (
                task_result(tmp_path / f"run-{name}"),
                len(batch_server.created) - before[0],
                len(batch_server.online_calls) - before[1],
                len(judge.received) - before[2],
                done.stderr,
            )
    batched, batches, online_calls, _, _ = runs["batched"]
    assert batches >= 1 and online_calls == 0  # every verdict went in a batch
    lines = verdict_lines(batch_server)
    assert len(lines) == batched["metrics"]["judge_requests"]["value"] == 8
    assert all(x["body"]["model"] == "judge" and "[[A]]" in json.dumps(x["body"]) for x in lines)
    for name in ("online", "unset"):  # today's path: one request at a time, no upload, no batch
        result, batches, online_calls, _, _ = runs[name]
        assert batches == 0 and online_calls == 8
        assert result["metrics"] == batched["metrics"]  # the same verdicts, the same numbers
    result, batches, online_calls, judged, stderr = runs["no-endpoints"]
    assert batches == 0 and judged == 8 and result["metrics"] == batched["metrics"]
    assert "has no Batch API" in stderr
    assert batched["metrics"]["weighted_win_rate"]["value"] == 100.0  # the stand-in's rule: the longer answer wins
    assert batched["judge_usage"]["requests"] == 8
    assert list((tmp_path / "home" / "openai-batches").glob("*.json")) == []


def test_a_run_killed_while_its_batch_is_pending_picks_the_same_batch_up(tmp_path):
    data = mt_bench_copy(tmp_path)
    env = environment(tmp_path / "home")
    journal = tmp_path / "home" / "openai-batches"
    config = mt_bench_config(tmp_path / "tree", True)
    with (
        ScriptedJudgeServer() as model_server,
        ScriptedJudgeServer() as judge,
        BatchServer(judge.respond, hold=True) as server,
    ):
        argv = command(config, data, model_server.url, server.url, tmp_path / "run")
        first = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
        try:
            deadline = time.monotonic() + 300  # a guard against hanging, not a timing check
            while not (
                server.created and server.created[0]["status"] == "in_progress" and list(journal.glob("*.json"))
            ):
                assert first.poll() is None, first.stderr.read().decode()
                assert time.monotonic() < deadline, "the run never submitted its batch"
                time.sleep(0.05)
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait()
        pending = server.created
        assert len(pending) == 1 and pending[0]["status"] == "in_progress"
        (entry,) = [json.loads(p.read_text()) for p in journal.glob("*.json")]
        assert entry["batch_id"] == pending[0]["id"]
        polls_before = len(server.polls)
        server.release()
        again = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert pending[0]["id"] in server.polls[polls_before:]  # the second run polled the batch the first one left
        contents = [server.input_of(b) for b in server.created]
        assert len(contents) == len(set(contents))  # no request was submitted twice
        assert server.online_calls == []
        reference = tmp_path / "reference"
        online = subprocess.run(
            command(mt_bench_config(tmp_path / "plain", False), data, model_server.url, server.url, reference),
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        assert online.returncode == 0, online.stderr
    assert task_result(tmp_path / "run")["metrics"] == task_result(reference)["metrics"]
    assert list(journal.glob("*.json")) == []


def test_the_evaluated_model_through_the_batch_api(tmp_path):
    data = mt_bench_copy(tmp_path)
    env = environment(tmp_path / "home")
    config = mt_bench_config(tmp_path / "tree", None)
    with (
        ScriptedJudgeServer() as stand_in,
        BatchServer(stand_in.respond) as model_server,
        ScriptedJudgeServer() as judge,
    ):
        batched = subprocess.run(
            command(
                config,
                data,
                model_server.url,
                judge.url,
                tmp_path / "batched",
                "--model-arg",
                "batch_api=true",
                "--model-arg",
                "batch_poll=0.02",
            ),
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        assert batched.returncode == 0, batched.stderr
        sent = [
            json.loads(x)["body"] for b in model_server.created for x in model_server.input_of(b).decode().splitlines()
        ]
        assert len(sent) == 4 and model_server.online_calls == []  # 2 questions x 2 turns, all in batches
        online = subprocess.run(
            command(config, data, model_server.url, judge.url, tmp_path / "online"),
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        assert online.returncode == 0, online.stderr
        assert len(model_server.online_calls) == 4
    assert task_result(tmp_path / "batched")["metrics"] == task_result(tmp_path / "online")["metrics"]
    bad = subprocess.run(
        command(
            config,
            data,
            "http://127.0.0.1:9/v1",
            "http://127.0.0.1:9/v1",
            tmp_path / "bad",
            "--model-arg",
            "batch_api=maybe",
        ),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert bad.returncode == 2 and "batch_api" in bad.stderr and "true or false" in bad.stderr and "maybe" in bad.stderr


def test_batch_api_calls_that_is_not_a_boolean_names_the_file_and_field(tmp_path):
    from proctor.api import load_tasks
    from proctor.core.errors import TaskDefinitionError

    config = mt_bench_config(tmp_path, None)
    config.write_text(config.read_text().replace("  judge:\n", "  judge:\n    batch_api_calls: sometimes\n", 1))
    with pytest.raises(TaskDefinitionError) as info:
        load_tasks([config], options={"seahelm_data": {MT_BENCH_ID: str(mt_bench_copy(tmp_path))}})
    assert "batch_api_calls must be true or false, got 'sometimes'" in str(info.value)
    assert str(config) in str(info.value) and "mt-bench.judge.batch_api_calls" in str(info.value)
