"""Every reply is checked where it enters (models/reply_checks.py): a loopback server whose replies are well
formed but wrong (tests/support/reply_faults.py) gets, for each broken invariant, one clear error naming the
server, the request and the field, and is never sent the same request twice; where the protocol allows the
reply (choices reordered with their ``index``) the number is right. Also: the capability self-check never
falls back silently, a trickling server meets the per-request deadline, and credentials stay masked."""

from __future__ import annotations

import base64
import json
import re
from http.server import BaseHTTPRequestHandler

import pytest

pytest.importorskip("httpx")

from proctor.api import evaluate  # noqa: E402
from proctor.core.errors import ProctorError  # noqa: E402
from proctor.core.model_requests import GenerateRequest  # noqa: E402
from proctor.models.openai.http import RetryBudgetExceeded  # noqa: E402
from proctor.models.reply_checks import ReplyError  # noqa: E402
from tests.support.cli_runs import (  # noqa: E402
    QUESTIONS,
    QUIZ,
    jsonl,
    proctor,
    quiz_folder,
    results,
    run_proctor,
    served_run,
    write,
)
from tests.support.openai_fakes import FaultProxy, _json_handler, _Server  # noqa: E402
from tests.support.reply_faults import (  # noqa: E402
    REQUESTS,
    ToyLogprobServer,
    TrickleServer,
    toy_loglikelihood,
    toy_model,
)


def expected_accuracy() -> float:
    """The quiz's accuracy from the toy server's log-probs, worked out here (argmax of the continuations)."""
    right = 0
    for q in QUESTIONS:
        scores = [toy_loglikelihood(f"Q: {q['question']}\nA:", f" {c}") for c in q["choices"]]
        right += scores.index(max(scores)) == q["label"]
    return right / len(QUESTIONS)


# ------------------------------------------------------------------ the right numbers
@pytest.mark.parametrize("mode", ["echo", "prompt_logprobs"])
@pytest.mark.parametrize("fault", [None, "choices_reordered_with_index"])
def test_well_formed_replies_give_the_servers_numbers(mode, fault):
    """The protocol allows a batch's choices in any order when each has its ``index``: the same numbers."""
    with ToyLogprobServer(fault) as srv:
        got = toy_model(srv.url, loglikelihood=mode).loglikelihood(REQUESTS)
        lists = [b for b in srv.scoring_requests() if isinstance(b.get("prompt"), list)]
    assert [r.logprob for r in got] == pytest.approx([toy_loglikelihood(r.context, r.continuation) for r in REQUESTS])
    assert len(lists) == 1  # one request for the three prompts


# ------------------------------------------------------------------ one error per broken invariant
ECHO_FAULTS = {
    "echo_missing_last_token": "logprobs.tokens[",
    "echo_extra_token": "logprobs.tokens[",
    "echo_wrong_tokens": "logprobs.tokens[1]",
    "echo_more_generated": "tokens after the prompt",
    "logprob_nan": "is NaN",
    "logprob_inf": "is inf",
    "logprob_positive": "above 0",
    "logprob_null": "is None, not a log-prob",
    "logprob_text": "is '-1.5', not a log-prob",
    "choices_reordered_without_index": "logprobs.tokens[0]",
    "choices_duplicate_index": "more than once",
    "choices_missing_one_index": "choices[0].index' is missing",
    "choices_fewer": "holds 2 choices for 3 prompt(s)",
    "choices_more": "holds 4 choices for 3 prompt(s)",
    "choices_empty": "'choices' is empty",
    "choice_not_an_object": "'choices[0]' is 'A', not an object",
    "text_offset_inconsistent": "logprobs.text_offset[1]",
    "logprobs_missing": "stopped returning prompt log-probs",
    "logprobs_a_list": "'logprobs' is [], not an object",
    "token_logprobs_a_string": "'logprobs.token_logprobs' is '-1.0 -2.0', not a list",
    "tokens_a_string": "'logprobs.tokens' is 'Q:",
    "logprobs_too_few": "log-probs for",
    "usage_negative": "'usage.prompt_tokens' is -5",
    "usage_total_wrong": "not prompt_tokens + completion_tokens",
    "usage_prompt_below_echo": "'usage.prompt_tokens' is 3, fewer than the",
}
PROMPT_LOGPROBS_FAULTS = {
    "prompt_logprobs_nan": "is NaN",
    "prompt_logprobs_wrong_token": "decoded_token",
    "prompt_logprobs_empty_entry": "prompt_logprobs[2]' is empty",
    "prompt_logprobs_null_entry": "prompt_logprobs[2]' is None, not an object",
}


@pytest.mark.parametrize(
    "fault, mode, says",
    [(f, "echo", s) for f, s in ECHO_FAULTS.items()]
    + [(f, "prompt_logprobs", s) for f, s in PROMPT_LOGPROBS_FAULTS.items()],
)
def test_a_wrong_scoring_reply_is_one_error_naming_server_request_and_field(fault, mode, says):
    with ToyLogprobServer(fault) as srv:
        model = toy_model(srv.url, loglikelihood=mode)
        with pytest.raises(ReplyError) as info:
            model.loglikelihood(REQUESTS)
        sent = srv.scoring_requests()
    message = str(info.value)
    assert message.startswith(f"{srv.url}/completions sent a wrong reply to ")
    assert says in message
    assert "prompt" in info.value.request  # which request: its prompt (and, through a run, its task)
    assert len(sent) == 1  # not retried, and not sent again one prompt at a time


@pytest.mark.fast
@pytest.mark.parametrize(
    "fault, endpoint, says",
    [
        ("chat_without_message", "chat", "'choices[0].message' is None, not an object"),
        ("content_a_list", "chat", "'choices[0].message.content' is ['A'], not text"),
        ("length_with_no_text", "chat", "'choices[0].finish_reason' is 'length' with no text"),
        ("length_with_no_text", "completions", "'choices[0].finish_reason' is 'length' with no text"),
        ("choices_fewer", "completions", "'choices' is empty"),
        ("usage_negative", "completions", "'usage.prompt_tokens' is -5"),
        ("usage_total_wrong", "completions", "'usage.total_tokens' is"),
        ("usage_total_wrong", "chat", "not prompt_tokens + completion_tokens"),
    ],
)
def test_a_wrong_generation_reply_is_one_error(fault, endpoint, says):
    with ToyLogprobServer(fault) as srv:
        model = toy_model(srv.url, endpoint=endpoint)
        with pytest.raises(ReplyError, match="prompt 'Q: hi") as info:
            model.generate([GenerateRequest("Q: hi\nA:", 4)])
        assert len(srv.requests) == 1
    assert says in str(info.value) and f"{srv.url}/" in str(info.value)


def test_the_error_names_the_task_through_the_command(tmp_path, capsys):
    """In-process through the CLI's entry point: exit 2, one message naming server, task, request and field."""
    from proctor.cli import main

    with ToyLogprobServer("logprob_nan") as srv:
        args = served_run(quiz_folder(tmp_path / "tasks"), srv.url, tmp_path / "run")
        args += ["--model-arg", "concurrency=1", "--model-arg", "api_key_env="]
        with pytest.raises(SystemExit) as ended:
            main(args)
        sent = srv.scoring_requests()
    err = " ".join(capsys.readouterr().err.split())
    assert ended.value.code == 2
    assert f"{srv.url}/completions sent a wrong reply to" in err and "is NaN" in err
    assert re.search(r"of task 'quiz', sample '[a-e]': 'logprobs.token_logprobs\[\d+\]' is NaN", err)
    assert "internal error" not in err and "Traceback" not in err
    assert len(sent) == len({json.dumps(b, sort_keys=True) for b in sent}) == 1


# ------------------------------------------------------------------ the capability self-check
def test_a_wrong_reply_in_the_self_check_is_a_recorded_and_printed_fallback(tmp_path, capsys):
    """auto: lettered generation, with the reason in results.json (mc_format_reason and a warning) and on the
    console; the toy server always answers 'A', so the accuracy is the share of questions whose answer is A."""
    from proctor.cli import main

    with ToyLogprobServer("logprob_positive", fault_on="self_check") as srv:
        args = served_run(quiz_folder(tmp_path / "tasks"), srv.url, tmp_path / "run", "--model-arg", "api_key_env=")
        main(args)
    err = " ".join(capsys.readouterr().err.split())
    task = results(tmp_path / "run")["tasks"]["quiz"]
    assert task["mc_format"] == "generate"
    assert task["metrics"]["acc"]["value"] == pytest.approx(sum(q["label"] == 0 for q in QUESTIONS) / len(QUESTIONS))
    assert "self-check failed" in task["mc_format_reason"] and "above 0" in task["mc_format_reason"]
    assert any("failed its log-likelihood check" in w for w in task["warnings"])
    assert "failed its log-likelihood check" in err


def test_mc_format_loglikelihood_on_a_server_failing_the_self_check_is_an_error(tmp_path):
    with ToyLogprobServer("logprob_positive", fault_on="self_check") as srv:
        with pytest.raises(ProctorError, match="--mc-format loglikelihood, but model 'toy' cannot score") as info:
            evaluate(
                [quiz_folder(tmp_path / "tasks")],
                toy_model(srv.url),
                output_dir=tmp_path / "run",
                mc_format="loglikelihood",
            )
        with pytest.raises(ProctorError, match="refusing log-likelihoods .* by 'echo'"):
            toy_model(srv.url, loglikelihood="echo").loglikelihood(REQUESTS)
    assert "above 0" in str(info.value)
    assert not (tmp_path / "run" / "results.json").exists()


def test_a_transport_fault_in_the_self_check_is_an_error_not_a_fallback(tmp_path):
    with (
        ToyLogprobServer() as srv,
        FaultProxy(srv.url, rate=0.0, fail_after=0) as proxy,
        pytest.raises(RetryBudgetExceeded, match="failed 2 times"),
    ):
        evaluate([quiz_folder(tmp_path / "tasks")], toy_model(proxy.url, max_retries=1), output_dir=tmp_path / "run")
    assert proxy.counts["500"] == 2


@pytest.mark.fast
def test_a_passed_self_check_is_recorded(tmp_path):
    with ToyLogprobServer() as srv:
        result = evaluate(
            [quiz_folder(tmp_path / "tasks")], toy_model(srv.url), output_dir=tmp_path / "run", export=False
        )
    task = result.tasks["quiz"]
    assert task["mc_format"] == "loglikelihood" and "self-check passed" in task["mc_format_reason"]
    assert task["metrics"]["acc"]["value"] == pytest.approx(expected_accuracy())
    assert not task.get("warnings")


# ------------------------------------------------------------------ a trickling server
@pytest.mark.parametrize("headers_too", [False, True])
def test_a_trickling_server_meets_the_overall_deadline(headers_too):
    """One byte a second (of the body, or of the whole response from the status line on): each read is within
    the socket timeout (30 s), but the whole reply is not within the deadline (2 s); the attempt is a transport
    fault, retried within the budget, then a clear error."""
    with TrickleServer(headers_too=headers_too) as srv:
        model = toy_model(srv.url, timeout=30, deadline=2, max_retries=1)
        with pytest.raises(RetryBudgetExceeded, match="deadline of 2 s"):
            model.generate([GenerateRequest("Q: hi\nA:", 4)])
        assert srv.requests == 2


def test_deadline_is_a_checked_model_arg(tmp_path):
    from proctor.models.registry import check_model_options

    with pytest.raises(ProctorError, match="deadline must be a number above 0"):
        check_model_options("openai:toy", {"base_url": "http://127.0.0.1:9/v1", "deadline": 0})


# ------------------------------------------------------------------ credentials
class EchoHeadersServer(_Server):
    """A server that refuses every request, quoting the Authorization header it got, as some proxies do."""

    def __init__(self, encode: bool = False) -> None:
        self.seen: list[str] = []

        def respond(path, body, headers):
            auth = headers.get("Authorization") or headers.get("authorization") or ""
            self.seen.append(auth)
            scheme, _, credential = auth.partition(" ")
            shown = f"{scheme} {base64.b64encode(credential.encode()).decode()}" if encode else auth
            return 400, {"error": {"message": f"bad request; you sent Authorization: {shown}"}}

        super().__init__(_json_handler(respond))


def test_url_credentials_echoed_back_in_base64_are_masked_on_the_console(tmp_path, capsys):
    from proctor.cli import main

    password = "hunter2-secret"
    basic = base64.b64encode(f"alice:{password}".encode()).decode()
    with EchoHeadersServer() as srv:
        url = srv.url.replace("http://", f"http://alice:{password}@")
        args = served_run(quiz_folder(tmp_path / "tasks"), url, tmp_path / "run", "--model-arg", "api_key_env=")
        args += ["--model-arg", "loglikelihood=none"]
        with pytest.raises(SystemExit) as ended:
            main(args)
    out = capsys.readouterr()
    console = out.out + out.err
    assert ended.value.code == 2 and "answered HTTP 400" in console
    assert srv.seen and srv.seen[0] == f"Basic {basic}"  # the URL's credentials were sent, as Basic auth
    assert password not in console and basic not in console and "Basic ***" in " ".join(console.split())


def test_an_api_key_echoed_in_base64_is_masked(monkeypatch):
    key = "sk-reply-checks-" + "5e1f0c"
    monkeypatch.setenv("PROCTOR_REPLY_KEY", key)
    with EchoHeadersServer(encode=True) as srv, pytest.raises(ProctorError) as info:
        toy_model(srv.url, api_key_env="PROCTOR_REPLY_KEY").generate([GenerateRequest("hi", 2)])
    message = str(info.value)
    assert srv.seen == [f"Bearer {key}"]  # sent once: a 400 is not retried
    assert "Authorization: Bearer ***" in message
    assert key not in message and base64.b64encode(key.encode()).decode().rstrip("=") not in message


def test_a_url_with_credentials_does_not_silently_drop_the_api_key(monkeypatch):
    monkeypatch.setenv("PROCTOR_REPLY_KEY", "sk-reply-checks-" + "77aa")
    with pytest.raises(ProctorError, match="holds credentials, and \\$PROCTOR_REPLY_KEY holds an API key") as info:
        toy_model("http://bob:pw1234@127.0.0.1:9/v1", api_key_env="PROCTOR_REPLY_KEY")
    assert "pw1234" not in str(info.value) and "sk-reply-checks" not in str(info.value)


# ------------------------------------------------------------------ the command in a fresh process
def test_proctor_run_against_the_toy_server_gives_its_accuracy(tmp_path):
    with ToyLogprobServer() as srv:
        proctor(
            *served_run(quiz_folder(tmp_path / "tasks"), srv.url, "run", "--model-arg", "api_key_env="), cwd=tmp_path
        )
    task = results(tmp_path / "run")["tasks"]["quiz"]
    assert task["mc_format"] == "loglikelihood"
    assert task["metrics"]["acc"]["value"] == pytest.approx(expected_accuracy())


def test_proctor_run_on_a_wrong_reply_ends_with_its_error(tmp_path):
    with ToyLogprobServer("echo_missing_last_token") as srv:
        args = served_run(quiz_folder(tmp_path / "tasks"), srv.url, "run", "--model-arg", "api_key_env=")
        done = run_proctor(*args, cwd=tmp_path)
        sent = srv.scoring_requests()
    message = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2, message[-2000:]
    assert "Traceback" not in message and "internal error" not in message
    assert f"{srv.url}/completions sent a wrong reply to" in message
    assert re.search(r"of task 'quiz', sample '[a-e]': 'logprobs.tokens\[\d+\]'", message)
    assert "'logprobs.tokens[" in message and "do not spell the prompt" in message
    assert len(sent) == len({json.dumps(b, sort_keys=True) for b in sent})  # none sent twice
    assert not (tmp_path / "run" / "results.json").exists() or "quiz" not in results(tmp_path / "run")["tasks"]


# ------------------------------------------------------------------ the Batch API
def test_a_wrong_reply_in_a_batch_output_is_one_error(tmp_path):
    """Batch output lines are read by the same checks as online replies."""
    from tests.support.openai_fakes import BatchServer

    with ToyLogprobServer("length_with_no_text") as toy, BatchServer(toy.respond, online=False) as server:
        model = toy_model(server.url, endpoint="chat", batch_poll=0.01, batch_dir=str(tmp_path / "journal"))
        with pytest.raises(ReplyError, match="'choices\\[0\\].finish_reason' is 'length' with no text"):
            model.batched().generate([GenerateRequest("Q: hi\nA:", 4)])
    assert len(server.created) == 1  # not sent again in another batch


# ------------------------------------------------------------------ a reply that is not JSON
class NotJsonServer(_Server):
    """Answers every POST with HTTP 200 and an HTML page, as a misconfigured proxy does; counts the requests."""

    def __init__(self) -> None:
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                server.requests += 1
                data = b"<html><body>Welcome to nginx!</body></html>"
                self.send_response(200)
                self.send_header("content-type", "text/html")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        super().__init__(Handler)


def test_a_reply_that_is_not_json_is_not_retried():
    with NotJsonServer() as srv:
        with pytest.raises(ProctorError, match="with a body that is not JSON .*Welcome to nginx"):
            toy_model(srv.url, max_retries=3).generate([GenerateRequest("Q: hi\nA:", 4)])
        assert srv.requests == 1


# ------------------------------------------------------------------ top_logprobs' upper bound
def test_an_upper_bound_from_top_logprobs_is_a_warning(tmp_path):
    """A continuation not among the top next tokens is scored with the lowest listed log-prob (an upper bound):
    an approximation, so a warning in results.json, counted, and the number is that bound."""
    from tests.support.reply_faults import CANDIDATES, word_logprob

    rows = [{"id": "a", "question": "Capital of Italy?", "choices": ["Rome", "Paris", "dog"], "label": 0}]
    folder = tmp_path / "tasks"
    write(folder / "quiz.yaml", QUIZ)
    jsonl(folder / "data.jsonl", rows)
    with ToyLogprobServer() as srv:
        model = toy_model(srv.url, loglikelihood="top_logprobs", top_logprobs=5)
        result = evaluate([folder], model, output_dir=tmp_path / "run", export=False)
    task = result.tasks["quiz"]
    assert any(w.startswith("1 of 3 continuations were not among the server's top") for w in task["warnings"])
    best = max(word_logprob(" Rome"), word_logprob(" Paris"), min(word_logprob(t) for t in CANDIDATES))
    assert task["metrics"]["acc"]["value"] == (1.0 if best == word_logprob(" Rome") else 0.0)


def test_prompt_logprobs_led_by_a_bos_entry_spell_the_prompt():
    """vLLM lists a BOS token first (null, no text) when the tokenizer adds one: the rest spells the whole prompt,
    which is right, not an error; a rest that is not the prompt's end is."""
    from proctor.models.openai.logprobs import continuation_scores, parse_prompt_logprobs
    from proctor.models.reply_checks import Where

    def entry(token: str, lp: float) -> dict:
        return {"7": {"logprob": lp, "rank": 1, "decoded_token": token}}

    where = Where("http://127.0.0.1:9/v1/completions", "the request")
    with_bos = {"prompt_logprobs": [None, entry("The", -3.0), entry(" sky", -2.0), entry(" is", -1.0)]}
    parsed = parse_prompt_logprobs(with_bos, "The sky is", where)
    assert parsed is not None and parsed.tokens == ("", "The", " sky", " is")
    assert continuation_scores(parsed, len("The sky")) == ((-1.0,), True)
    with pytest.raises(ReplyError, match="decoded_token' spells"):
        parse_prompt_logprobs(with_bos, "A sky is", where)


def test_batch_journal_entries_and_errors_name_the_url_without_its_password(tmp_path):
    """The Batch API's journal (written under PROCTOR_HOME) and its errors name the server by its masked URL."""
    model = toy_model("http://bob:pw1234@127.0.0.1:9/v1", batch_dir=str(tmp_path / "journal")).batched()
    assert model.batches.base_url == "http://bob:***@127.0.0.1:9/v1"
