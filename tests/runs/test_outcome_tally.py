"""The reply outcome tally (runs/outcome_tally.py): well-formed replies that hold no scoreable answer are counted
per task, whatever the kind or dialect, and a share of them is a warning on the console and in results.json,
with the count and one example; a real model's occasional empty answer or tie stays silent."""

from __future__ import annotations

import pytest

from proctor.core.model_requests import GenerateRequest, GenerateResult, LoglikelihoodResult, RollingLoglikelihoodResult
from proctor.runs.outcome_tally import OutcomeTally, is_echo

pytest.importorskip("httpx")

from tests.conftest import REPO  # noqa: E402
from tests.support.cli_runs import generate_task, jsonl, proctor, quiz_folder, results, served_run, write  # noqa: E402
from tests.support.reply_faults import SELF_CHECK_MARK, ToyLogprobServer  # noqa: E402


def _gen(text: str, **extra) -> GenerateResult:
    return GenerateResult(text, "stop", 5, 1, **extra)


def _keys(tally: OutcomeTally) -> set[str]:
    return {key for key, _, _ in tally.warned()}


def test_generations_that_hold_no_answer_are_counted_and_warned():
    tally = OutcomeTally()
    request = GenerateRequest("Q: Capital of France?\nA:")
    tally.add([request] * 4, [_gen(" Paris"), _gen(""), _gen("", withheld="finish_reason content_filter"), _gen("x")])
    tally.add([request], [_gen("Q: Capital of France?\nA: Paris")])
    tally.add([request], [_gen("Pa\u200bris")])
    tally.add([request], [_gen("Zu\u0308rich")])
    tally.add([request], [_gen("<think>hmm</think>Paris")])
    warned = {key: message for key, _, message in tally.warned()}
    assert set(warned) == {"withheld", "empty", "echo", "stray_characters", "not_nfc", "think_marker"}
    assert (
        "1 of 8 generations were withheld by the server (no answer: finish_reason content_filter)" in warned["withheld"]
    )
    assert "\\u200b" in warned["stray_characters"]  # the example shows the invisible character


def test_zero_width_characters_of_scripts_that_use_them_are_no_news():
    tally = OutcomeTally()
    khmer, persian = (
        "\u1781\u17d2\u1789\u17bb\u17c6\u200b\u1791\u17c5",
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
    )
    tally.add([GenerateRequest("p")] * 2, [_gen(khmer), _gen(persian)])
    assert tally.warned() == []


def test_a_think_marker_is_news_only_without_think_end_token():
    tally = OutcomeTally(think_end_token="</think>")
    tally.add([GenerateRequest("p")], [_gen("<think>a</think>b")])
    assert "think_marker" not in _keys(tally)


def test_an_occasional_empty_answer_stays_silent():
    tally = OutcomeTally()
    tally.add([GenerateRequest("Q: which?")] * 20, [_gen("")] + [_gen(f" answer {i}") for i in range(19)])
    assert tally.warned() == []
    assert tally.as_json() == {"empty": {"count": 1, "n": 20}}


def test_echo_needs_the_prompt_not_a_short_coincidence():
    assert is_echo("Q: Capital of France? (0)", "Q: Capital of France? (0)\nA:")
    assert is_echo("Question: x y z?\nAnswer: Paris", "Question: x y z?\nAnswer:")
    assert not is_echo("Paris", "Paris is the capital of")
    # a summary that copies the article's lead sentence answers; the article's first line echoed does not
    article = "(CNN) -- The Palestinian Authority became the 123rd member of the court on Wednesday. It was"
    lead = "(CNN) -- The Palestinian Authority became the 123rd member of the court on Wednesday."
    assert not is_echo(lead, article + " formal.\n\nTL;DR:")
    assert is_echo(lead, lead + "\nMore text of the article.\n\nTL;DR:")
    assert is_echo("Tell me a joke please", '<|proctor:chat|>[{"role": "user", "content": "Tell me a joke please"}]')


def test_degenerate_log_probs_are_counted():
    sure = OutcomeTally()  # a sure model: the right one of two choices at 0.0 (bf16), the other far below
    sure.add([None] * 4, [LoglikelihoodResult(0.0, (0.0,), True), LoglikelihoodResult(-9.0, (-9.0,), False)] * 2)
    assert sure.warned() == []
    zero = OutcomeTally()
    zero.add([None] * 3, [LoglikelihoodResult(0.0, (0.0,), True)] * 2 + [LoglikelihoodResult(-1.0, (-1.0,), False)])
    zero.add([None], [RollingLoglikelihoodResult(0.0, 50, (0.0,) * 50)])
    assert _keys(zero) == {"zero_logprobs"}
    flat = OutcomeTally()
    flat.add([None] * 10, [LoglikelihoodResult(-4.0, (-2.0, -2.0), False)] * 10)
    flat.finish()
    assert _keys(flat) == {"one_logprob"}  # (flat_logprobs said by it)
    real = OutcomeTally()
    real.add([None] * 10, [LoglikelihoodResult(-3.5 - i, (-1.5, -2.0 - i), False) for i in range(10)])
    real.finish()
    assert real.warned() == []


def test_tied_choices_and_judges_are_read_from_the_records():
    tally = OutcomeTally()
    tally.add_records([{"id": i, "logprobs": [0.0, 0.0]} for i in range(3)] + [{"id": 9, "logprobs": [-1.0, -2.0]}])
    judged = {"id": "q", "judgements": [{"verdicts": ["W", "L"], "judgements": ["[[A]]", "[[A]]"]}]}
    tally.add_records([judged, {"id": "r", "judgements": [{"verdicts": ["ERROR", "W"], "judgements": ["hmm", "x"]}]}])
    warned = {key: message for key, _, message in tally.warned()}
    assert set(warned) == {"tied_choices", "judge_errors", "judge_flips"}
    assert "3 of 4 samples' best choices tie exactly" in warned["tied_choices"]
    assert '1 of 4 judge verdicts could not be read (sample r: "hmm")' in warned["judge_errors"]


def test_lettered_replies_all_one_letter_while_answers_vary():
    tally = OutcomeTally()
    records = [{"mc_format": "generate", "extracted": "A", "target": i % 3} for i in range(12)]
    tally.add_records(records)
    tally.one_letter(records)
    assert _keys(tally) == {"one_letter"}
    assert tally.lettered() is not None and tally.lettered().count == 0
    shuffled = [{**r, "option_order": [1, 0, 2] if i % 2 else [0, 1, 2]} for i, r in enumerate(records)]
    quiet = OutcomeTally()
    quiet.add_records(shuffled)
    quiet.one_letter(shuffled)
    assert quiet.warned() == []  # --mc-shuffle spreads a constant letter over the options


class _Withholding(ToyLogprobServer):
    """The toy server, whose generations are withheld (content_filter, empty text) after the self-check."""

    def reply(self, path, body):
        reply = super().reply(path, body)
        if isinstance(reply, dict) and not body.get("echo") and not body.get("logprobs"):
            for choice in reply["choices"]:
                choice["finish_reason"] = "content_filter"
                choice["text"] = ""
        return reply


class _Echoing(ToyLogprobServer):
    """Generations that repeat the prompt before the answer (a server that echoes what it was sent)."""

    def reply(self, path, body):
        reply = super().reply(path, body)
        if isinstance(reply, dict) and not body.get("echo") and not body.get("logprobs"):
            for choice in reply["choices"]:
                choice["text"] = body["prompt"] + " X0"
        return reply


class _AllZero(ToyLogprobServer):
    """Echoed log-probs all 0.0 (every choice ties), the self-check's own request left alone: consistent with
    themselves (each position's top_logprobs lists its token at 0.0, certain), so no per-reply check refuses them
    and only the tally can tell."""

    def reply(self, path, body):
        reply = super().reply(path, body)
        if isinstance(reply, dict) and body.get("echo") and SELF_CHECK_MARK not in str(body):
            for choice in reply["choices"]:
                logprobs = choice["logprobs"]
                lp = logprobs["token_logprobs"]
                logprobs["token_logprobs"] = [lp[0]] + [0.0] * (len(lp) - 1)
                tops = logprobs.get("top_logprobs")
                if tops:
                    logprobs["top_logprobs"] = [tops[0]] + [{t: 0.0} for t in logprobs["tokens"][1:]]
        return reply


GEN_TASK = generate_task("capitals", "data.jsonl", "Q: Capital of {{ country }}?\nA:", "{{ city }}", 8)


def _gen_task(folder):
    write(folder / "capitals.yaml", GEN_TASK)
    jsonl(folder / "data.jsonl", [{"id": str(i), "country": f"C{i}", "city": f"X{i}"} for i in range(10)])
    return folder


def test_withheld_generations_warn_through_the_command(tmp_path, capsys):
    from proctor.cli import main

    with _Withholding() as srv:
        main(served_run(_gen_task(tmp_path / "t"), srv.url, tmp_path / "run", "--model-arg", "api_key_env="))
    err = " ".join(capsys.readouterr().err.split())
    task = results(tmp_path / "run")["tasks"]["capitals"]
    assert task["outcomes"]["withheld"] == {"count": 10, "n": 10, "example": "finish_reason content_filter"}
    assert any("10 of 10 generations were withheld" in w for w in task["warnings"])
    assert "10 of 10 generations were withheld" in err


def test_all_zero_log_probs_warn_in_a_fresh_process(tmp_path):
    folder = quiz_folder(tmp_path / "t")
    with _AllZero() as srv:
        done = proctor(*served_run(folder, srv.url, tmp_path / "run", "--model-arg", "api_key_env="), cwd=tmp_path)
    task = results(tmp_path / "run")["tasks"]["quiz"]
    assert task["outcomes"]["tied_choices"]["count"] == 5
    assert task["outcomes"]["zero_logprobs"]["count"] == 15
    assert task["metrics"]["acc"]["value"] == pytest.approx(2 / 5)  # the tie-break's (first choice), as computed
    err = " ".join(done.stderr.split())
    assert "5 of 5 samples' best choices tie exactly" in err and "have log-prob 0 for every token" in err


# ------------------------------------------------------------------ means over no valid item, degenerate inputs
def test_seahelm_classification_with_no_label_read_keeps_seahelms_zero():
    """SEA-HELM's own number (0 over no label read), for parity; the tally's 'answers not read' warns of it."""
    import pandas as pd

    from proctor.dialects.seahelm import metrics as M
    from proctor.dialects.seahelm.dataloaders import SeaHelmLocalDataloader
    from proctor.dialects.seahelm.task_config import TaskConfig

    rows = [{"label": label, "prompts": [{}]} for label in ["Positive", "Negative", "Neutral"]]
    cfg = {"languages": {"xx": {"prompt_template": {"answer_tag": "Answer:"}, "filepath": "-"}}}
    loader = SeaHelmLocalDataloader(TaskConfig("t", "xx", cfg), 0)
    loader.dataset = rows
    loader.inference_df = pd.DataFrame({"label": [r["label"] for r in rows], "responses": [["Paris"]] * 3})
    out = M.F1AccMetric(loader, loader.task_config).evaluate_responses()
    assert out["null_count"] == 3
    assert all(out[k] == 0.0 for k in ("accuracy", "normalized_accuracy", "macro_f1", "null_weighted_f1"))


def test_aisteer_accuracy_over_no_valid_reply_keeps_upstreams_zero_and_one_position_is_said():
    from proctor.dialects.aisteer.mcqa_metrics import MCQAAccuracy
    from proctor.dialects.aisteer.usecase_task import _one_position

    out = MCQAAccuracy().compute(responses=[None, None], reference_answers=["A", "B"], question_ids=["q1", "q2"])
    # AISteer360's own 0.0 (parity); no valid reply is the tally's 'empty' or 'withheld' warning in a run
    assert out["trial_mean"] == 0.0 and out["question_mean"] == 0.0 and out["num_valid"] == 0
    said = _one_position({"MCQAPositionalBias": {"mean": 0.0, "position_shares": {"A": 1.0}}})
    assert len(said) == 1 and "every valid reply named position A" in said[0]
    assert _one_position({"MCQAPositionalBias": {"mean": 0.1, "position_shares": {"A": 0.6, "B": 0.4}}}) == []


def _mt_bench(tmp_path, judge):
    import dataclasses

    from proctor.api import load_tasks
    from tests.conftest import shared_path
    from tests.support.seahelm_fixtures import mt_bench_copy

    config = shared_path("examples", "seahelm", "seahelm_tasks", "multi_turn", "mt_bench", "config.yaml")
    options = {"seahelm_data": {"aisingapore/MultiTurn-Chat-MT-Bench": str(mt_bench_copy(tmp_path))}}
    options["seahelm_judge"] = judge
    task = next(t for t in load_tasks([config], options=options) if t.name == "mt-bench/en")
    config = task.spec.handler.options.config
    short = {**config, "languages": {"en": {**config["languages"]["en"], "max_tokens": 8}}}
    return dataclasses.replace(task, spec=task.spec.with_handler_options(config=short))


@pytest.mark.parametrize(
    ("verdict", "said", "rate"),
    [
        ("I cannot decide.", "8 of 8 judge verdicts could not be read", 0.0),  # SEA-HELM's 0 (losses), warned
        ("Verdict: [[A]]", "4 of 4 judged pairs changed their verdict", 50.0),  # pure position bias
    ],
)
def test_judge_failures_and_position_bias_are_warned(tmp_path, verdict, said, rate):
    from proctor.api import evaluate
    from tests.support.aisteer_fakes import ScriptedJudge
    from tests.support.fakes import FakeModel

    result = evaluate(
        [_mt_bench(tmp_path, ScriptedJudge(lambda prompt: verdict))],
        FakeModel("evaluated"),
        output_dir=tmp_path / "run",
        export=False,
    )
    task = result.tasks["mt-bench/en"]
    assert any(said in w for w in task["warnings"])
    value = task["metrics"]["weighted_win_rate"]["value"]
    assert value == rate


def test_echoed_prompts_warn_in_a_fresh_process(tmp_path):
    with _Echoing() as srv:
        args = served_run(_gen_task(tmp_path / "t"), srv.url, tmp_path / "run", "--model-arg", "api_key_env=")
        done = proctor(*args, cwd=tmp_path)
    task = results(tmp_path / "run")["tasks"]["capitals"]
    assert task["outcomes"]["echo"]["count"] == 10
    assert task["metrics"]["exact_match"]["value"] == 0.0  # the number stays the task's rule; the warning says why
    assert "10 of 10 generations start with their own prompt" in " ".join(done.stderr.split())


def test_a_use_case_metric_over_mostly_invalid_replies_is_said():
    """AISteer360's accuracy over no valid reply is its 0.0 (parity); the run says the replies named no option."""
    from proctor.dialects.aisteer.usecase_task import _few_valid

    said = _few_valid(
        {
            "MCQAAccuracy": {"trial_mean": 0.0, "num_attempts": 80, "num_valid": 0},
            "MCQAPositionalBias": {"mean": None, "num_valid": 0},
        }
    )
    assert len(said) == 2 and "only 0 of 80 replies were valid" in said[0] and "no reply was valid" in said[1]
    assert _few_valid({"MCQAAccuracy": {"trial_mean": 0.7, "num_attempts": 80, "num_valid": 60}}) == []


def test_answers_equal_to_a_reference_but_for_typography_are_counted():
    """Red team 12 (144, 146, 218-220): exact match keeps case, marks and punctuation outside ASCII as upstream
    does; answers that equal a reference once those are removed are counted, a wrong answer is not."""
    tally = OutcomeTally()
    pairs = [("istanbul", "İstanbul"), ("HAUPTSTRASSE", "Hauptstraße"), ("«Paris»", "Paris"), ("巴黎。", "巴黎")]
    pairs += [("O’Hare", "O'Hare"), ("Rome", "Paris"), ("Paris", "Paris")]
    tally.add_records(
        {"id": str(i), "generation": a, "target": [r], "metrics": {"exact_match": float(a == r)}}
        for i, (a, r) in enumerate(pairs)
    )
    count = tally.counts["near_miss"]
    assert (count.count, count.n) == (5, 7)
    assert any(key == "near_miss" for key, _, _ in tally.warned())


def test_a_number_that_differs_in_value_is_no_near_miss():
    """'5' for '−5' (NQ-open writes its minus as U+2212), '3.5' for '35', '50' for '50%', '100' for '$100' are
    other values, not other typography (review of session 12, finding 5); '−5' for '-5' and '2.' for '2' are."""
    tally = OutcomeTally()
    pairs = [("5", "−5"), ("3.5", "35"), ("1,000", "1000"), ("50", "50%"), ("100", "$100"), ("−5", "-5"), ("2.", "2")]
    tally.add_records(
        {"id": str(i), "generation": a, "target": [r], "metrics": {"exact_match": 0.0}}
        for i, (a, r) in enumerate(pairs)
    )
    count = tally.counts["near_miss"]
    assert (count.count, count.n) == (2, 7), count


def test_a_number_in_another_scripts_digits_or_grouped_by_spaces_is_a_near_miss():
    """'123' for '١٢٣' (Arabic-Indic digits) and '1234' for '1\u00a0234' are the same numbers written otherwise: exact
    match scores them 0 as upstream does, and the tally says so (red team 13, 422, 242)."""
    tally = OutcomeTally()
    pairs = [("123", "١٢٣"), ("1234", "1\u00a0234"), ("45", "٤٥"), ("124", "١٢٣")]
    tally.add_records(
        {"id": str(i), "generation": a, "target": [r], "metrics": {"exact_match": 0.0}}
        for i, (a, r) in enumerate(pairs)
    )
    count = tally.counts["near_miss"]
    assert (count.count, count.n) == (3, 4), count


# ------------------------------------------------------------------ answers that hold a reference, numbers joined
def test_answers_holding_a_reference_inside_more_text_are_counted_and_a_different_number_is_not():
    """Red team 14 (204, 205, 208, 216, 236, 365): 'The answer is 7.', '\\boxed{7}', 'Answer: 7', '答案是7', a chat
    marker before the answer score 0 by exact match; the tally counts them. '17', '7.5', '-7', 'Parisian' and the
    article 'a' hold no reference."""
    tally = OutcomeTally()
    pairs = [("The answer is 7.", "7"), ("\\boxed{7}", "7"), ("Answer: 7", "7"), ("答案是7", "7")]
    pairs += [("<|im_end|>Rome", "Rome"), ("\u202eRome", "Rome"), ("Paris, France", "Paris")]
    pairs += [("17", "7"), ("7.5", "7"), ("-7", "7"), ("Parisian", "Paris"), ("a cat", "a"), ("Rome", "Paris")]
    pairs += [("Paris", "Paris\u200b"), ("42", "\u200f42")]  # the reference's own marks: the audit names those
    tally.add_records(
        {"id": str(i), "generation": a, "target": [r], "metrics": {"exact_match": 0.0}}
        for i, (a, r) in enumerate(pairs)
    )
    count = tally.counts["holds_reference"]
    assert (count.count, count.n) == (7, 15), count
    assert count.example == '"The answer is 7." for "7"'
    assert "holds_reference" in _keys(tally)


def test_a_right_score_for_another_number_is_counted_at_any_count():
    """Red team 14 (217): SQuAD's normalisation deletes the point, so '4.2' matches '42'; '1,000' for '1000' (a
    grouping comma) and '42' for '42' are the same numbers; a worked solution's many numbers (an lm-eval GSM8K
    reference scored through regexes_to_ignore, red team 14's control 323) are not read. One such answer warns."""
    tally = OutcomeTally()
    pairs = [("4.2", "42"), ("1,000", "1000"), ("42", "42"), ("7", "3 plus 4 is 7 #### 7")] + [("yes", "yes")] * 20
    tally.add_records(
        {"id": str(i), "generation": a, "target": [r], "metrics": {"exact_match": 1.0}}
        for i, (a, r) in enumerate(pairs)
    )
    assert (tally.counts["digits_joined"].count, tally.counts["digits_joined"].n) == (1, 24)
    assert "digits_joined" in _keys(tally)


def test_generations_cut_at_max_tokens_that_scored_zero_warn_from_a_quarter():
    """Red team 14 (219): 6 of 8 replies stopped at max_tokens before their answer, EM 0.25: the at_limit kind
    warns from 90% only; replies cut and scored 0 warn from 25%, naming max_tokens."""

    def tally_of(cut_wrong: int, n: int) -> OutcomeTally:
        tally = OutcomeTally()
        tally.add_records(
            {
                "id": str(i),
                "generation": "Well, let me think",
                "finish_reason": "length" if i < cut_wrong else "stop",
                "target": ["Paris"],
                "metrics": {"exact_match": 0.0},
            }
            for i in range(n)
        )
        return tally

    assert "cut_wrong" in _keys(tally_of(6, 8)) and "at_limit" not in _keys(tally_of(6, 8))
    assert "cut_wrong" not in _keys(tally_of(1, 8))


def test_answers_in_a_sentence_and_other_numbers_warn_through_the_command(tmp_path):
    """Through the command, a fresh process: a backend that answers 'The answer is X.' (or '4.2' for '42'): exact
    match 0.0 (1.0 on the joined number, as SQuAD's normalisation scores it), and both warnings on the console
    and in results.json."""
    folder = tmp_path / "t"
    write(folder / "t.yaml", generate_task("sums", "rows.jsonl", "Q: {{ q }}\nA:", "{{ a }}", 8))
    jsonl(folder / "rows.jsonl", [{"id": f"r{i}", "q": f"{i} + {i}?", "a": str(2 * i)} for i in (*range(1, 9), 21)])
    write(
        folder / "sentences.py",
        f"""import sys
sys.path.insert(0, {str(REPO)!r})
from proctor.core.model_requests import GenerateResult
from tests.support.fakes import FakeModel


class Sentences(FakeModel):
    def generate(self, requests, progress=None):
        out = []
        for r in requests:
            n = int(r.prompt.split("Q: ")[1].split(" +")[0])
            text = "4.2" if n == 21 else f"The answer is {{2 * n}}."
            out.append(GenerateResult(text, "stop", 3, 3))
        return out


def register(registry):
    registry.add_model_backend("sentences", lambda rest, **options: Sentences(rest))
""",
    )
    done = proctor("run", "t.yaml", "--plugin", "sentences.py", "--model", "sentences:v", "-o", "out", cwd=folder)
    assert done.returncode == 0, done.stderr[-2000:]
    task = results(folder / "out")["tasks"]["sums"]
    assert task["metrics"]["exact_match"]["value"] == pytest.approx(1 / 9)  # '4.2' for '42', as SQuAD scores it
    assert task["outcomes"]["holds_reference"]["count"] == 8 and task["outcomes"]["digits_joined"]["count"] == 1
    said = " ".join(done.stderr.split())
    assert "8 of 9 answers scored 0 by exact match hold a reference inside more text" in said
    assert "1 of 9 answers scored right by exact match write another number than their reference" in said
    assert any("hold a reference inside more text" in w for w in task["warnings"])
    assert any("write another number than their reference" in w for w in task["warnings"])


def test_refusals_written_as_text_and_bidirectional_controls_are_counted():
    """Red team 14 (207, 293): "I'm sorry, but I can't help with that." on every row scored 0 with no word (only a
    server's refusal flag was counted); a right-to-left override before '7' was no stray character. Hebrew with its
    own right-to-left mark and an apology that goes on to answer are no news."""
    tally = OutcomeTally()
    texts = ["I'm sorry, but I can't help with that.", "I can\u2019t assist with that.", "As an AI language model, no."]
    texts += ["\u202e7", "a\u200eb", "\u05e9\u05dc\u05d5\u05dd\u200f"]  # an override, a mark; Hebrew's own mark
    texts += ["I am sorry to hear that. The answer is 7", "Paris"]
    tally.add([GenerateRequest("Q: x?\nA:", 8)] * len(texts), [_gen(t) for t in texts])
    assert (tally.counts["refusal_text"].count, tally.counts["refusal_text"].n) == (3, 8)
    assert tally.counts["stray_characters"].count == 2
    assert {"refusal_text", "stray_characters"} <= _keys(tally)
