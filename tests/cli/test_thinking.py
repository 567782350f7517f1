"""--think-end-token: every generation scored on the text after its thinking, the thinking kept and counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_runs import REPO, jsonl, proctor, results, run_in_process, samples, write

# A --plugin backend ``thinker:NAME`` whose replies think first. Each reply is chosen by a word of the prompt's
# last question; the first holds a stop string ("\n") inside its thinking, so a stop applied before the thinking
# is cut would leave no answer; the last never closes its thinking.
THINKER_PLUGIN = """\
import sys
sys.path.insert(0, {repo!r})
from proctor.core.model_requests import GenerateResult
from tests.support.fakes import FakeModel

REPLIES = {replies!r}


class Thinker(FakeModel):
    def generate(self, requests, progress=None):
        out = []
        for r in requests:
            last = r.prompt.rsplit("Q:", 1)[-1]
            text = next(reply for word, reply in REPLIES.items() if word in last)
            assert not r.stop, r.stop  # sent without its stop strings: they are applied after the thinking is cut
            if "</think>" in text:
                out.append(GenerateResult(text, "stop", len(r.prompt), len(text) // 4))
            else:  # thinking that never closes ran out of tokens: it generated all it was allowed
                out.append(GenerateResult(text, "length", len(r.prompt), r.max_tokens))
        if progress:
            progress(len(requests))
        return out

    def count_tokens(self, texts):  # a tokenizer of words, so the test knows the thinking's tokens
        return [len(t.split()) for t in texts]


def register(registry):
    registry.add_model_backend("thinker", lambda rest, **options: Thinker(rest))
"""
REPLIES = {
    "two plus two": "<think>Two and two.\n\nThat makes four.</think> four\nQ: more",
    "sky": "<think>Blue, surely</think>\n green",
    "cat": "<think>Cats walk</think> on </think>four",
    "frozen": "<think>Water below zero is",
}
ROWS = [
    {"question": "what is two plus two", "answer": "four"},
    {"question": "what colour is the sky", "answer": "blue"},
    {"question": "how many legs has a cat", "answer": "four"},
    {"question": "what is frozen water", "answer": "ice"},
]
NATIVE_TASK = """\
name: think_native
kind: generate
data: {path: data.jsonl}
prompt: "Q: {{ question }}\\nA:"
target: "{{ answer }}"
generation: {max_tokens: 50, stop: ["\\n"]}
metrics: [exact_match]
"""


def _expected_lm_eval(stop: list[str]) -> tuple[float, list[str]]:
    """exact_match as lm-eval scores the same replies: its own postprocess_generated_text, then its metric."""
    from lm_eval.api.metrics import exact_match_hf_evaluate
    from lm_eval.models.utils import postprocess_generated_text

    answers = [postprocess_generated_text(REPLIES[word], stop, "</think>") for word in ("two plus two", "sky", "cat")]
    # a reply that never closes its thinking has no answer here (lm-eval would score the trace itself)
    answers.append("")
    references = [row["answer"] for row in ROWS]
    score = exact_match_hf_evaluate(predictions=answers, references=references)["exact_match"]
    return float(score), answers


def test_thinking_is_cut_before_scoring_in_native_and_lm_eval_tasks_in_a_fresh_process(tmp_path: Path) -> None:
    pytest.importorskip("lm_eval")
    from tests.support.lmeval_quiz import GEN_TASK, SHOTS

    write(tmp_path / "thinker.py", THINKER_PLUGIN.format(repo=str(REPO), replies=REPLIES))
    write(tmp_path / "tasks" / "native" / "think_native.yaml", NATIVE_TASK)
    jsonl(tmp_path / "tasks" / "native" / "data.jsonl", ROWS)
    write(tmp_path / "tasks" / "lmeval" / "quiz_gen.yaml", GEN_TASK.replace("max_gen_toks: 5", "max_gen_toks: 50"))
    jsonl(tmp_path / "data" / "test.jsonl", ROWS)
    jsonl(tmp_path / "data" / "train.jsonl", SHOTS)
    done = proctor(
        "run", "tasks", "--plugin", "thinker.py", "--model", "thinker:m", "--think-end-token", "</think>",
        "--max-thinking-tokens", "200", "--lmeval-data", f"example/quiz:small={tmp_path / 'data'}",
        "-o", "run", cwd=tmp_path,
    )  # fmt: skip
    expected, answers = _expected_lm_eval(["\n"])
    assert expected == 0.5  # two of four: the stop string inside the first thinking did not cut its answer
    recorded = results(tmp_path / "run")
    native, lmeval = recorded["tasks"]["think_native"], recorded["tasks"]["quiz_gen"]
    assert native["metrics"]["exact_match"]["value"] == expected
    assert lmeval["metrics"]["exact_match,none"]["value"] == expected
    for task in (native, lmeval):
        assert task["thinking"]["samples"] == 4 and task["thinking"]["unclosed"] == 1
        assert any("1 of 4 generations never closed their thinking" in w for w in task["warnings"])
        assert task["settings"]["think_end_token"] == "</think>"
        # the thinking budget: each generation could make its task's 50 tokens and 200 more for thinking
        assert task["settings"]["think_budget"] == 200
        assert task["thinking"]["max_generated_tokens"] == 250 and task["thinking"]["stopped_at_max_tokens"] == 1
        closed_tokens = [len(REPLIES[w]) // 4 for w in ("two plus two", "sky", "cat")]
        assert task["thinking"]["mean_generated_tokens"] == round((sum(closed_tokens) + 250) / 4, 1)
        # the thinking's own tokens, as the model's tokenizer (here: words) counts them
        words = [len(REPLIES[w].rsplit("</think>", 1)[0].split()) for w in ("two plus two", "sky", "cat")]
        words.append(len(REPLIES["frozen"].split()))
        assert task["thinking"]["mean_thinking_tokens"] == round(sum(words) / 4, 1)
        assert task["thinking"]["max_thinking_tokens"] == max(words)
    closed = ("two plus two", "sky", "cat")
    lengths = [len(REPLIES[w].rsplit("</think>", 1)[0]) for w in closed] + [len(REPLIES["frozen"])]
    assert native["thinking"]["mean_chars"] == round(sum(lengths) / 4, 1)
    assert "never closed their thinking" in done.stdout + done.stderr  # the warning reached the console
    by_question = {r["id"]: r for r in samples(tmp_path / "run") if r["task"] == "think_native"}
    generations = [by_question[k]["generation"] for k in sorted(by_question, key=lambda k: int(k))]
    assert generations == answers
    first = by_question[min(by_question, key=lambda k: int(k))]
    assert first["thinking"] == "<think>Two and two.\n\nThat makes four."
    lm_records = sorted((r for r in samples(tmp_path / "run") if r["task"] == "quiz_gen"), key=lambda r: r["doc_id"])
    assert [r["resps"][0][0] for r in lm_records] == answers  # lm-eval's filters saw the answers only
    assert lm_records[1]["thinking"] == "<think>Blue, surely"
    manifest = (tmp_path / "run" / "run.json").read_text()
    assert '"think_end_token": "</think>"' in manifest


def test_a_resumed_run_with_another_think_end_token_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "thinker.py", THINKER_PLUGIN.format(repo=str(REPO), replies=REPLIES))
    write(tmp_path / "tasks" / "think_native.yaml", NATIVE_TASK)
    jsonl(tmp_path / "tasks" / "data.jsonl", ROWS)
    plugin, out_dir = str(tmp_path / "thinker.py"), str(tmp_path / "r")
    base = ["run", str(tmp_path / "tasks"), "--plugin", plugin, "--model", "thinker:m", "-o", out_dir]
    code, out = run_in_process([*base, "--model-arg", "think_end_token=</think>", "-q"])
    assert code == 0, out
    assert results(tmp_path / "r")["tasks"]["think_native"]["metrics"]["exact_match"]["value"] == 0.5
    code, out = run_in_process([*base, "--think-end-token", "</reasoning>", "-q"])
    assert code == 2 and "option overrides changed" in out and "</reasoning>" in out, out
    code, out = run_in_process([*base, "--think-end-token", "</think>", "--max-thinking-tokens", "100", "-q"])
    assert code == 2 and "option overrides changed" in out and "think_budget" in out, out


@pytest.mark.fast
def test_inspects_reasoning_tokens_is_the_thinking_budget(tmp_path: Path) -> None:
    write(tmp_path / "thinker.py", THINKER_PLUGIN.format(repo=str(REPO), replies=REPLIES))
    write(tmp_path / "tasks" / "think_native.yaml", NATIVE_TASK)
    jsonl(tmp_path / "tasks" / "data.jsonl", ROWS)
    code, out = run_in_process(
        ["run", str(tmp_path / "tasks"), "--plugin", str(tmp_path / "thinker.py"), "--model", "thinker:m",
         "--think-end-token", "</think>", "--reasoning-tokens", "30", "-o", str(tmp_path / "r"), "-q"]
    )  # fmt: skip
    assert code == 0, out
    task = results(tmp_path / "r")["tasks"]["think_native"]
    assert task["settings"]["think_budget"] == 30
    assert task["thinking"]["max_generated_tokens"] == 80  # the task's 50 and the budget's 30


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--think-end-token", " "], "got an empty one"),
        (["--think-end-token", "</think>", "--model-arg", "think_end_token=</t>"], "differs from --think-end-token"),
        (["--model-arg", "think_end_token=a", "--model-arg", "think_end_token=b"], "'think_end_token' is given twice"),
        (["--max-thinking-tokens", "0"], "--max-thinking-tokens"),
        (["--reasoning-tokens", "-5"], "--reasoning-tokens"),
        (["--max-thinking-tokens", "100", "--reasoning-tokens", "200"], "differs from --max-thinking-tokens 100"),
        (["--max-thinking-tokens", "many"], "Input should be a valid integer"),
    ],
)
def test_a_malformed_think_end_token_is_refused(tmp_path: Path, flags: list[str], says: str) -> None:
    write(tmp_path / "tasks" / "think_native.yaml", NATIVE_TASK)
    jsonl(tmp_path / "tasks" / "data.jsonl", ROWS)
    code, out = run_in_process(["run", str(tmp_path / "tasks"), "--model", "fake:m", "-o", str(tmp_path / "r"), *flags])
    assert code == 2 and says in out, out
    assert "Traceback" not in out


def test_a_servers_reasoning_content_is_kept_as_thinking_in_a_fresh_process(tmp_path: Path) -> None:
    """A chat reply's ``reasoning_content`` (vLLM's reasoning parsers, DeepSeek) is the thinking: kept and counted,
    the content scored; a reply of only reasoning that ran out of tokens is no wrong reply."""
    from tests.support.openai_fakes import FixedReplyServer

    write(tmp_path / "tasks" / "think_native.yaml", NATIVE_TASK)
    jsonl(tmp_path / "tasks" / "data.jsonl", ROWS)
    message = {"role": "assistant", "content": "four", "reasoning_content": "Count them.\n\nFour."}
    reply = {
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 9},
    }
    with FixedReplyServer(reply) as server:
        proctor(
            "run", "tasks", "--model", "openai:m", "--base-url", server.url, "--model-arg", "endpoint=chat",
            "-o", "run", "-q", cwd=tmp_path, env={"HF_HUB_OFFLINE": "1"},
        )  # fmt: skip
    task = results(tmp_path / "run")["tasks"]["think_native"]
    assert task["metrics"]["exact_match"]["value"] == 0.5  # "four" is right for two of the four questions
    assert task["thinking"] == {
        "samples": 4,
        "unclosed": 0,
        "mean_chars": float(len("Count them.\n\nFour.")),
        "mean_generated_tokens": 9.0,  # the server's usage.completion_tokens, thinking and answer
        "max_generated_tokens": 9,
        "stopped_at_max_tokens": 0,
    }
    assert task["settings"]["think_end_token"] is None
    assert {r["thinking"] for r in samples(tmp_path / "run")} == {"Count them.\n\nFour."}
    assert {r["generation"] for r in samples(tmp_path / "run")} == {"four"}


@pytest.mark.parametrize(
    ("message", "finish", "says"),
    [
        ({"role": "assistant", "content": "four", "reasoning_content": 5}, "stop", "reasoning_content"),
        ({"role": "assistant", "content": "", "reasoning": ["a"]}, "stop", "reasoning"),
        ({"role": "assistant", "content": None, "reasoning_content": "Still counting"}, "length", None),
    ],
)
def test_a_servers_reasoning_field_is_checked(tmp_path: Path, message: dict, finish: str, says: str | None) -> None:
    """Reasoning that is not text is a wrong reply naming its field; a reply cut at the token limit with only
    reasoning is a reply (no answer, the thinking kept), not the 'length with no text' error."""
    from tests.support.openai_fakes import FixedReplyServer

    write(tmp_path / "tasks" / "think_native.yaml", NATIVE_TASK)
    jsonl(tmp_path / "tasks" / "data.jsonl", ROWS)
    reply = {"choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": {}}
    with FixedReplyServer(reply) as server:
        code, out = run_in_process(
            ["run", str(tmp_path / "tasks"), "--model", "openai:m", "--base-url", server.url,
             "--model-arg", "endpoint=chat", "-o", str(tmp_path / "run"), "-q"]
        )  # fmt: skip
    if says is None:
        assert code == 0, out
        task = results(tmp_path / "run")["tasks"]["think_native"]
        assert task["metrics"]["exact_match"]["value"] == 0.0 and task["thinking"]["samples"] == 4
        assert {r["thinking"] for r in samples(tmp_path / "run")} == {"Still counting"}
    else:
        assert code == 2 and f"choices[0].message.{says}" in out, out
        assert "Traceback" not in out and not (tmp_path / "run" / "results.json").exists()


def test_a_reasoning_reply_whose_content_still_holds_the_marker_is_cut_there() -> None:
    """With --think-end-token, content that still holds thinking (a server's parser that left some) is cut at the
    last marker and then at the stops, its thinking joined to the server's reasoning; without it, left as sent."""
    from proctor.core.model_requests import GenerateRequest, GenerateResult
    from proctor.runs.thinking import answer_of

    request = GenerateRequest("Q: x\nA:", 50, ("\n",))
    result = GenerateResult("more\n</think> blue\nQ: next", "stop", 3, 9, reasoning="first")
    cut = answer_of(request, result, "</think>")
    assert (cut.text, cut.thinking, cut.closed) == ("blue", "firstmore\n</think>", True)
    kept = answer_of(request, result, None)
    assert (kept.text, kept.thinking) == (result.text, "first")
