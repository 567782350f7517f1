"""The OpenAI-compatible backend against an in-process test server that computes TRUE log-probs
with transformers (``openai_fakes.TrueLogprobServer``, a stand-in for vLLM's echo/prompt_logprobs
paths, which have no CPU server here), plus a fault-injecting proxy."""

from __future__ import annotations

import json
import logging

import pytest

pytest.importorskip("httpx")

from proctor.api import evaluate  # noqa: E402
from proctor.core.errors import ProctorError  # noqa: E402
from proctor.core.model_requests import GenerateRequest, LoglikelihoodRequest, RollingLoglikelihoodRequest  # noqa: E402
from proctor.kinds.mc_generate import extract_letter, permutation  # noqa: E402
from proctor.models.openai.compat import OpenAIModel, trim_at_stop  # noqa: E402
from proctor.models.openai.http import RetryBudgetExceeded  # noqa: E402
from proctor.models.openai.messages import decode_chat  # noqa: E402
from tests.conftest import EXAMPLES  # noqa: E402
from tests.support.cli_runs import proctor_error  # noqa: E402
from tests.support.openai_fakes import FaultProxy, FixedReplyServer, TrueLogprobServer  # noqa: E402

QUICKSTART = EXAMPLES / "quickstart"
LL = [
    LoglikelihoodRequest("Question: what is 2+2?\nAnswer:", " four"),
    LoglikelihoodRequest("The sky is ", "blue"),
    LoglikelihoodRequest("Paris is in", " France", move_whitespace=False),
    LoglikelihoodRequest("Numbers: 1, 2,", " 3, 4, 5"),
]


@pytest.fixture(scope="module")
def server(tiny_model_dir):
    with TrueLogprobServer(tiny_model_dir) as srv:
        yield srv


def backend(url, model_dir, **kw) -> OpenAIModel:
    kw.setdefault("backoff", 0.01)
    return OpenAIModel(str(model_dir), url, name="tiny-openai", **kw)


@pytest.mark.parametrize("mode", ["auto", "echo", "prompt_logprobs"])
def test_loglikelihood_equals_hf_backend(server, tiny_model, tiny_model_dir, mode):
    model = backend(server.url, tiny_model_dir, loglikelihood=mode)
    got = model.loglikelihood(LL)
    want = tiny_model.loglikelihood(LL)
    assert model.loglikelihood_mode == ("echo" if mode == "auto" else mode)
    for g, w in zip(got, want):
        assert g.logprob == pytest.approx(w.logprob, abs=1e-3)
        assert g.n_tokens == w.n_tokens
        assert g.is_greedy == w.is_greedy
    rolling = model.rolling_loglikelihood([RollingLoglikelihoodRequest("The sky is blue and the grass is green.")])[0]
    assert rolling.n_tokens > 5 and rolling.logprob < 0


def test_server_without_lists_is_sent_prompts_one_by_one(tiny_model_dir, tiny_model):
    with TrueLogprobServer(tiny_model_dir, lists=False) as srv:
        got = backend(srv.url, tiny_model_dir, loglikelihood="echo").loglikelihood(LL)
    for g, w in zip(got, tiny_model.loglikelihood(LL)):
        assert g.logprob == pytest.approx(w.logprob, abs=1e-3)


def test_off_by_one_prompt_logprobs_are_refused(tiny_model_dir):
    with TrueLogprobServer(tiny_model_dir, bug="echo_shift") as srv:
        auto = backend(srv.url, tiny_model_dir)
        assert not auto.supports_loglikelihood
        with pytest.raises(ProctorError, match="cannot score log-likelihoods"):
            auto.loglikelihood(LL[:1])
        with pytest.raises(ProctorError, match="shifted by a position"):
            backend(srv.url, tiny_model_dir, loglikelihood="echo").loglikelihood(LL[:1])


def test_generation_equals_hf_backend(server, tiny_model, tiny_model_dir):
    requests = [GenerateRequest("Q: capital of France?\nA:", 8, ("\n",)), GenerateRequest("Once upon a time", 12)]
    got = backend(server.url, tiny_model_dir).generate(requests)
    want = tiny_model.generate(requests)
    assert [g.text for g in got] == [w.text for w in want]
    assert [g.completion_tokens for g in got] == [w.completion_tokens for w in want]


@pytest.mark.fast
def test_stop_strings_trimmed_and_chat_prompts_round_trip():
    assert trim_at_stop("Paris\nQ: next", ["\n"]) == ("Paris", True)
    assert trim_at_stop("Paris", ["\n", ""]) == ("Paris", False)
    model = OpenAIModel("m", "http://127.0.0.1:9/v1")
    messages = [{"role": "user", "content": "Hi {{ x }}"}]
    assert decode_chat(model.apply_chat_template(messages)) == messages


@pytest.mark.fast
def test_letter_extraction_and_seeded_shuffle():
    assert extract_letter("B", 4) == 1
    assert extract_letter(" (C) because", 4) == 2
    assert extract_letter("The answer is D.", 4) == 3
    assert extract_letter("I think option A", 4) == 0
    assert extract_letter("nothing here", 4) is None
    assert extract_letter("Paris, of course", 3, ["London", "Paris", "Rome"]) == 1
    assert extract_letter("E", 4) is None
    assert permutation("s1", 4, None) == [0, 1, 2, 3]
    assert permutation("s1", 4, 7) == permutation("s1", 4, 7)
    assert sorted(permutation("s1", 4, 7)) == [0, 1, 2, 3]


def test_usage_and_cost_recorded_per_task(server, tiny_model_dir, tmp_path):
    model = backend(server.url, tiny_model_dir, price_prompt=1.0, price_completion=2.0)
    result = evaluate([QUICKSTART], model, output_dir=tmp_path / "run", limit=3, export=False)
    for task in result.tasks.values():
        usage = task["usage"]
        assert usage["requests"] > 0 and usage["prompt_tokens"] > 0
        assert usage["estimated_cost"] == pytest.approx((usage["prompt_tokens"] + 2 * usage["completion_tokens"]) / 1e6)
    assert result.tasks["quickstart_science_mc"]["mc_format"] == "loglikelihood"  # this server can score


def test_chat_only_runs_multiple_choice_by_generation(server, tiny_model_dir, tmp_path):
    model = backend(server.url, tiny_model_dir, endpoint="chat")
    result = evaluate([QUICKSTART], model, output_dir=tmp_path / "run", limit=4, export=False, mc_shuffle_seed=3)
    mc = result.tasks["quickstart_science_mc"]
    assert mc["mc_format"] == "generate" and mc["requests"]["type"] == "generate"
    assert 0.0 <= mc["metrics"]["acc"]["value"] <= 1.0
    records = [json.loads(line) for line in (result.run_dir / "samples.jsonl").read_text().splitlines()]
    mc_records = [r for r in records if r["task"] == "quickstart_science_mc"]
    assert all(
        r["mc_format"] == "generate" and sorted(r["option_order"]) == list(range(len(r["choices"]))) for r in mc_records
    )
    assert any(r["option_order"] != sorted(r["option_order"]) for r in mc_records)  # shuffled
    # the flag forces it on a backend that could score
    forced = evaluate(
        [QUICKSTART],
        backend(server.url, tiny_model_dir),
        output_dir=tmp_path / "forced",
        limit=2,
        select=["quickstart_science_mc"],
        export=False,
        mc_format="generate",
    )
    assert forced.tasks["quickstart_science_mc"]["mc_format"] == "generate"


def test_faults_give_the_same_results_as_a_clean_run(server, tiny_model_dir, tmp_path):
    clean = evaluate(
        [QUICKSTART], backend(server.url, tiny_model_dir), output_dir=tmp_path / "clean", limit=6, export=False
    )
    with FaultProxy(server.url, rate=0.2, seed=1) as proxy:
        faulty = evaluate(
            [QUICKSTART], backend(proxy.url, tiny_model_dir), output_dir=tmp_path / "faulty", limit=6, export=False
        )
    assert min(proxy.counts[k] for k in ("429", "500", "disconnect")) > 0
    for name, task in clean.tasks.items():
        assert faulty.tasks[name]["metrics"] == task["metrics"]
    assert sum(t["usage"]["retries"] for t in faulty.tasks.values()) > 0
    clean_samples = (clean.run_dir / "samples.jsonl").read_text()
    assert (faulty.run_dir / "samples.jsonl").read_text() == clean_samples


def test_retry_budget_then_rerun_resumes(server, tiny_model_dir, tmp_path):
    out = tmp_path / "run"
    with FaultProxy(server.url, rate=0.0, fail_after=10) as proxy:
        model = backend(proxy.url, tiny_model_dir, max_retries=2, concurrency=1, loglikelihood="echo", batch=1)
        with pytest.raises(RetryBudgetExceeded, match="resume"):
            evaluate(
                [QUICKSTART],
                model,
                output_dir=out,
                limit=6,
                chunk_size=1,
                export=False,
                select=["quickstart_science_mc"],
            )
    resumed = evaluate(
        [QUICKSTART],
        backend(server.url, tiny_model_dir, loglikelihood="echo"),
        output_dir=out,
        limit=6,
        chunk_size=1,
        export=False,
        select=["quickstart_science_mc"],
    )
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["attempts"][-1]["responses"]["from_run_store"] > 0
    clean = evaluate(
        [QUICKSTART],
        backend(server.url, tiny_model_dir),
        output_dir=tmp_path / "clean",
        limit=6,
        export=False,
        select=["quickstart_science_mc"],
    )
    assert resumed.tasks["quickstart_science_mc"]["metrics"] == clean.tasks["quickstart_science_mc"]["metrics"]


def test_api_key_never_written_or_logged(tiny_model_dir, tmp_path, monkeypatch, caplog):
    secret = "sk-proctor-test-" + "9f3c1a7e5b"
    monkeypatch.setenv("PROCTOR_TEST_KEY", secret)
    caplog.set_level(logging.DEBUG)
    with TrueLogprobServer(tiny_model_dir, api_key=secret) as srv:
        model = backend(srv.url, tiny_model_dir, api_key_env="PROCTOR_TEST_KEY")
        result = evaluate([QUICKSTART], model, output_dir=tmp_path / "run", limit=2)
        assert srv.headers_seen and all(h.get("Authorization") == f"Bearer {secret}" for h in srv.headers_seen)
        # a wrong key: refused, and the error names no key
        monkeypatch.setenv("PROCTOR_TEST_KEY", "sk-wrong-" + "0000")
        with pytest.raises(ProctorError) as info:
            backend(srv.url, tiny_model_dir, api_key_env="PROCTOR_TEST_KEY").generate([GenerateRequest("hi", 2)])
        assert "sk-wrong" not in str(info.value)
    files = [p for p in result.run_dir.rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert secret.encode() not in path.read_bytes(), path
    assert secret not in caplog.text
    assert secret not in json.dumps(model.fingerprint)


def test_judge_through_the_backend(server, tiny_model_dir):
    from proctor.models.judge import judge_function

    model = backend(server.url, tiny_model_dir)
    messages = [
        {"role": "system", "content": "You are a judge."},
        {"role": "user", "content": "Which is better, A or B?"},
    ]
    judge = judge_function(model, max_tokens=4)
    reply = judge(messages)
    assert isinstance(reply, str) and judge(messages) == reply  # greedy: the same verdict again


def test_retry_after_as_an_http_date_is_honoured(monkeypatch):
    """A 429 whose Retry-After is an HTTP date 20 s ahead: the client waits about 20 s (not its own 0.01 s backoff)."""
    import email.utils
    from datetime import datetime, timedelta, timezone

    import httpx

    from proctor.models.openai import http as openai_http

    when = email.utils.format_datetime(datetime.now(timezone.utc) + timedelta(seconds=20), usegmt=True)
    replies = iter(
        [
            httpx.Response(429, headers={"Retry-After": when}, json={"error": "slow down"}),
            httpx.Response(200, json={"choices": []}),
        ]
    )
    slept: list[float] = []
    monkeypatch.setattr(openai_http.time, "sleep", slept.append)
    client = openai_http.ApiClient("http://api.invalid/v1", api_key_env=None, backoff=0.01, max_backoff=60.0, seed=0)
    client._client = httpx.Client(transport=httpx.MockTransport(lambda request: next(replies)))
    assert client.post("/completions", {}) == {"choices": []}
    assert len(slept) == 1 and 18.0 <= slept[0] <= 20.0
    assert openai_http._retry_after("7") == 7.0
    assert openai_http._retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # past: no wait
    assert openai_http._retry_after("soon") == 0.0 and openai_http._retry_after(None) == 0.0


@pytest.mark.parametrize("reply", [{"choices": []}, {"choices": "none"}, {"error": "overloaded"}, [1, 2]])
def test_a_reply_without_choices_is_one_clear_error(reply, tmp_path):
    """A 200 reply that holds no choice (an empty list, a proxy's own JSON) ends the command with one message
    naming the endpoint and showing the reply; it used to end in an internal error (IndexError)."""
    with FixedReplyServer(reply) as srv:
        args = ["run", str(QUICKSTART), "--model", "openai:m", "--base-url", srv.url, "--limit", "2", "-o", "run"]
        message = proctor_error(*args, cwd=tmp_path, env={"HF_HUB_OFFLINE": "1"})
    # the field named: 'choices', the error object, or the reply itself where it is no object
    field = "'(the reply)'" if isinstance(reply, list) else "'error'" if "error" in reply else "'choices'"
    assert f"{srv.url}/completions sent a wrong reply" in message and field in message, message
    if isinstance(reply, dict) and "error" in reply:  # the server's own message, quoted
        assert "'error' is the server's error: 'overloaded'" in " ".join(message.split())
    assert not (tmp_path / "run" / "results.json").exists()
