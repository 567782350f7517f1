"""Replies whose numbers contradict each other, or that no model could give, are errors where they enter
(models/logprob_checks.py, models/reply_checks.py, the batch cross-check of models/openai/scoring.py), each
against a real loopback server that breaks the invariant (tests/support/reply_faults_more.py); what real servers
send (rounded values, vLLM's -9999.0 for -inf, its ranks) passes; a perplexity over absurd but consistent
log-probs is reported as infinite with a warning, never an OverflowError (scoring/metrics.py)."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("httpx")

from proctor.core.errors import ProctorError  # noqa: E402
from proctor.core.model_requests import GenerateRequest  # noqa: E402
from proctor.models.logprob_checks import check_ranked  # noqa: E402
from proctor.models.reply_checks import ReplyError, Where  # noqa: E402
from proctor.scoring.metrics import exp_or_inf, get_metric  # noqa: E402
from tests.support.cli_runs import (  # noqa: E402
    generate_task,
    jsonl,
    quiz_folder,
    results,
    run_in_process,
    run_proctor,
    served_run,
    write,
)
from tests.support.reply_faults import REQUESTS, toy_loglikelihood, toy_model  # noqa: E402
from tests.support.reply_faults_more import MoreFaultServer  # noqa: E402


def expected() -> list[float]:
    return [toy_loglikelihood(r.context, r.continuation) for r in REQUESTS]


# ------------------------------------------------------------------ log-likelihood replies: one error each
SCORING_FAULTS = [
    ("logprob_below_floor", "echo", "logprobs.token_logprobs[", "below -10000"),
    ("top_contradicts_token", "echo", "logprobs.top_logprobs[1][", "the same token's own log-prob is -0.01"),
    ("top_sum_over_one", "echo", "logprobs.top_logprobs[1]'", "sum to"),
    ("pl_rank_one_above", "prompt_logprobs", "prompt_logprobs[1]'", "sum to"),
    ("pl_rank_against_value", "prompt_logprobs", "prompt_logprobs[1][", "the ranks contradict the log-probs"),
    ("pl_rank_not_a_number", "prompt_logprobs", ".rank'", "not a rank"),
    ("error_beside_choices", "echo", "'error'", "'partial failure: shard 3 timed out'"),
    ("error_only", "echo", "'error'", "'model overloaded'"),
    ("echo_text_other_prompt", "echo", "'text'", "does not start with the prompt"),
    ("batch_crosstalk", "echo", "choices[0].logprobs.token_logprobs[", "--model-arg batch=1"),
]


@pytest.mark.parametrize("fault, mode, field, says", SCORING_FAULTS)
def test_a_self_contradicting_scoring_reply_is_one_error(fault, mode, field, says):
    with MoreFaultServer(fault) as srv, pytest.raises(ReplyError) as info:
        toy_model(srv.url, loglikelihood=mode).loglikelihood(REQUESTS)
    message = str(info.value)
    assert message.startswith(f"{srv.url}/completions sent a wrong reply to ")
    assert field in message and says in message
    assert "prompt" in info.value.request


def test_a_batch_that_mixes_its_prompts_up_passes_with_one_prompt_per_request():
    """The cross-talk is in the server's batching: batch=1 gets the right numbers (what the error advises)."""
    with MoreFaultServer("batch_crosstalk") as srv:
        got = toy_model(srv.url, loglikelihood="echo", batch=1).loglikelihood(REQUESTS)
    assert [r.logprob for r in got] == pytest.approx(expected())


def test_a_batch_whose_kernels_move_one_position_by_a_bfloat16_step_passes():
    """A correct bf16 server is not batch-invariant: one position a quarter of a nat off is its noise, not
    another prompt's numbers (which move most positions, or one by whole nats: the crosstalk fault above)."""
    with MoreFaultServer("batch_bf16_step") as srv:
        got = toy_model(srv.url, loglikelihood="echo").loglikelihood(REQUESTS)
    assert [r.logprob for r in got] == pytest.approx(expected(), abs=0.26)  # a context position, or the continuation's


def test_the_batch_cross_check_costs_two_requests_once():
    with MoreFaultServer() as srv:
        model = toy_model(srv.url, loglikelihood="echo", batch=2)
        got = model.loglikelihood(REQUESTS) + model.loglikelihood(REQUESTS)
        sent = srv.scoring_requests()
    assert [r.logprob for r in got] == pytest.approx(expected() * 2)
    assert [isinstance(b["prompt"], list) for b in sent].count(False) == 2 + 2  # the check's two; the odd ones out


@pytest.mark.parametrize(
    "fault, says",
    [
        ("next_token_sum_over_one", "sum to 1.980"),
        ("next_token_contradicts", "the same token's own log-prob is -0.1"),
    ],
)
def test_the_top_logprobs_mode_refuses_a_next_token_distribution_that_is_none(fault, says):
    with MoreFaultServer(fault) as srv, pytest.raises(ReplyError, match="choices\\[0\\].logprobs.top_logprobs\\[0\\]"):
        try:
            toy_model(srv.url, loglikelihood="top_logprobs").loglikelihood(REQUESTS[:1])
        except ReplyError as exc:
            assert says in str(exc)
            raise


def test_a_token_generated_far_below_the_first_at_temperature_0_is_refused_and_a_flipped_near_tie_is_not():
    """OpenAI's /completions refuses min_tokens; there the generated token is checked against the list: three nats
    below the first is a server that sampled, a near-tie flipped is what a hosted API does at temperature 0."""
    far = pytest.raises(ReplyError, match="although greedy decoding \\(temperature 0\\) was asked for")
    with MoreFaultServer("next_token_far_from_greedy") as srv, far:
        toy_model(srv.url, loglikelihood="top_logprobs").loglikelihood(REQUESTS[:1])
    with MoreFaultServer("next_token_near_greedy") as srv:
        (got,) = toy_model(srv.url, loglikelihood="top_logprobs").loglikelihood(REQUESTS[:1])
        assert any(b.get("min_tokens") is not None for _, b in srv.requests)  # refused, then sent without
    assert got.logprob < 0


# ------------------------------------------------------------------ what real servers send passes
@pytest.mark.parametrize("mode", ["echo", "prompt_logprobs"])
@pytest.mark.parametrize("fault", ["top_rounded", "top_one_collision", "pl_real_ranks", "logprob_vllm_floor"])
def test_replies_real_servers_send_give_their_numbers(fault, mode):
    with MoreFaultServer(fault) as srv:
        got = toy_model(srv.url, loglikelihood=mode).loglikelihood(REQUESTS)
    assert [r.logprob for r in got] == pytest.approx(expected(), abs=1e-3)


def test_ranks_tied_or_absent_are_not_an_error():
    where = Where("engine", "the request")
    check_ranked([("1", -1.0, 2), ("2", -1.0, 1)], where, "prompt_logprobs[3]")  # a tie, vLLM's count of >=
    check_ranked([("1", -2.0, None), ("2", -0.3, None)], where, "prompt_logprobs[3]")
    with pytest.raises(ReplyError, match="rank 2 and log-prob -0.1"):
        check_ranked([("1", -3.0, 1), ("2", -0.1, 2)], where, "prompt_logprobs[3]")


# ------------------------------------------------------------------ generation replies
GENERATION_FAULTS = [
    ("chat_shaped_completion", "choices[0].text' is missing", "shaped as a chat reply"),
    ("text_lone_surrogate", "choices[0].text' holds a lone surrogate (U+D800)", "not Unicode text"),
    ("error_beside_choices", "'error' is the server's error beside 'choices'", "shard 3 timed out"),
]


@pytest.mark.parametrize("fault, field, says", GENERATION_FAULTS)
def test_a_wrong_generation_reply_is_one_error(fault, field, says):
    with MoreFaultServer(fault) as srv, pytest.raises(ReplyError) as info:
        toy_model(srv.url, loglikelihood="none").generate([GenerateRequest("Q: Capital of France?\nA:", 8)])
    assert field in str(info.value) and says in str(info.value)


def test_a_body_with_a_key_twice_is_refused():
    with MoreFaultServer("duplicate_choices") as srv, pytest.raises(ProctorError, match="the key 'choices' twice"):
        toy_model(srv.url, loglikelihood="none").generate([GenerateRequest("Q: Capital of France?\nA:", 8)])


# ------------------------------------------------------------------ corpus metrics never overflow
def test_exp_of_a_huge_mean_is_infinite_not_an_overflow():
    assert exp_or_inf(800.0) == math.inf and exp_or_inf(1.0) == pytest.approx(math.e)
    for name in ("token_perplexity", "word_perplexity", "byte_perplexity"):
        assert get_metric(name, "perplexity").aggregate([(-800.0 * 5, 5)])[0] == math.inf


# ------------------------------------------------------------------ through the command
GENERATE = generate_task("capitals", "qa.jsonl", "Q: {{ question }}\nA:", "{{ answer }}", 8)

PPL = """\
name: ppl
kind: perplexity
data: {path: texts.jsonl, id: id}
text: "{{ text }}"
"""


def _run(tmp_path, srv, task: str, *extra: str) -> tuple[int, str]:
    return run_in_process(served_run(task, srv.url, tmp_path / "run", "--model-arg", "api_key_env=", *extra))


def _quiz(tmp_path) -> str:
    return str(quiz_folder(tmp_path / "tasks") / "quiz.yaml")


@pytest.mark.parametrize(
    "fault, says",
    [
        ("top_contradicts_token", "'logprobs.top_logprobs[1]["),
        ("logprob_below_floor", "below -10000"),
        ("error_only", "'model overloaded'"),
    ],
)
def test_proctor_run_names_the_reply_that_contradicts_itself(tmp_path, fault, says):
    with MoreFaultServer(fault) as srv:
        code, out = _run(tmp_path, srv, _quiz(tmp_path))
    text = " ".join(out.split())
    assert code == 2, text[-2000:]
    assert "internal error" not in text and "Traceback" not in text
    assert f"{srv.url}/completions sent a wrong reply to" in text and "of task 'quiz'" in text and says in text


def test_proctor_run_with_a_lone_surrogate_in_an_answer_is_a_reply_error(tmp_path):
    write(tmp_path / "tasks" / "gen.yaml", GENERATE)
    jsonl(tmp_path / "tasks" / "qa.jsonl", [{"id": "q1", "question": "Capital of France?", "answer": "Paris"}])
    with MoreFaultServer("text_lone_surrogate") as srv:
        code, out = _run(tmp_path, srv, str(tmp_path / "tasks" / "gen.yaml"))
    text = " ".join(out.split())
    assert code == 2 and "internal error" not in text and "UnicodeEncodeError" not in text, text[-2000:]
    assert "of task 'capitals', sample 'q1': 'choices[0].text' holds a lone surrogate" in text


def test_proctor_refuses_a_batch_that_mixes_its_prompts_up_in_a_fresh_process(tmp_path):
    with MoreFaultServer("batch_crosstalk") as srv:
        done = run_proctor(*served_run(_quiz(tmp_path), srv.url, "run", "--model-arg", "api_key_env="), cwd=tmp_path)
    text = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2 and "Traceback" not in text and "internal error" not in text, text[-2000:]
    assert "mixes up the prompts of one request" in text and "--model-arg batch=1" in text


def test_a_perplexity_over_absurd_consistent_log_probs_is_infinite_with_a_warning_in_a_fresh_process(tmp_path):
    write(tmp_path / "tasks" / "ppl.yaml", PPL)
    texts = [{"id": str(i), "text": f"The story number {i} begins on a quiet morning."} for i in range(3)]
    jsonl(tmp_path / "tasks" / "texts.jsonl", texts)
    with MoreFaultServer("logprob_minus_800") as srv:
        args = served_run(tmp_path / "tasks" / "ppl.yaml", srv.url, "run", "--model-arg", "api_key_env=")
        done = run_proctor(*args, cwd=tmp_path)
    text = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0 and "OverflowError" not in text and "internal error" not in text, text[-2000:]
    task = results(tmp_path / "run")["tasks"]["ppl"]
    assert task["metrics"]["token_perplexity"]["value"] is None  # infinite: JSON has no such number
    assert task["metrics"]["bits_per_byte"]["value"] > 100
    warned = [w for w in task["warnings"] if "'token_perplexity' is infinite" in w]
    assert warned and "metric 'token_perplexity' is infinite" in text
    assert json.dumps(task)  # results.json stays JSON


LMEVAL_PPL = """\
task: lp_ppl
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: loglikelihood_rolling
doc_to_text: ""
doc_to_target: "{{{{text}}}}"
metric_list:
  - metric: word_perplexity
"""


def test_lm_evals_own_perplexity_over_absurd_log_probs_is_infinite_with_a_warning(tmp_path):
    pytest.importorskip("lm_eval")
    texts = [{"text": f"The story number {i} begins on a quiet morning."} for i in range(3)]
    data = jsonl(tmp_path / "texts.jsonl", texts)
    task = write(tmp_path / "ppl.yaml", LMEVAL_PPL.format(data=data))
    with MoreFaultServer("logprob_minus_800") as srv:
        code, out = _run(tmp_path, srv, str(task))
    assert code == 0 and "OverflowError" not in out and "internal error" not in out, out[-2000:]
    entry = results(tmp_path / "run")["tasks"]["lp_ppl"]
    assert entry["metrics"]["word_perplexity,none"]["value"] is None
    assert any("'word_perplexity,none' is infinite" in w for w in entry["warnings"])
