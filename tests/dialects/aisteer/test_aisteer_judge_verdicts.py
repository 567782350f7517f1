"""AISteer360's judges' verdicts are checked where they enter (dialects/aisteer/verdicts.py): a score that is no
finite number is unreadable, a reversed scale and a rubric without ``{response}`` are refused before any model
loads, and what upstream reads as it reads it (a clamped score, a yes/no verdict that is neither, one verdict for
every answer) keeps upstream's number and is counted in the task's outcomes, warned on the console and in
results.json (red team 14: 239, 241-244, 249, 252, 255, 256, 258, 259)."""

from __future__ import annotations

import json

import pytest

from proctor.core.model_requests import GenerateResult
from tests.support.aisteer_fakes import ScriptedJudge
from tests.support.fakes import FakeModel

ANSWERS = ["red", "blue", "green", "I don't know", "no idea", "pass"]  # three right answers, three non-answers


def _case(metric, answers=ANSWERS):
    """A use case whose model answers row i with ``answers[i]`` (the prompt says which), judged by ``metric``."""
    from proctor.dialects.aisteer import UseCase

    class Ask(UseCase):
        _EVALUATION_REQ_KEYS = ("id", "q")

        def validate_evaluation_data(self, row):
            pass

        def generate(self, model_or_pipeline, tokenizer=None, gen_kwargs=None, runtime_overrides=None, **kwargs):
            return [{"response": r["answer"], "q": r["q"]} for r in self.evaluation_data]

        def evaluate(self, generations):
            return {
                m.name: m(responses=[g["response"] for g in generations], prompts=[g["q"] for g in generations])
                for m in self.evaluation_metrics
            }

    rows = [{"id": i, "q": f"Name a primary colour ({i})", "answer": a} for i, a in enumerate(answers)]
    return Ask(rows, [metric])


def _json(score: str) -> str:
    return '```json\n{"score": %s}\n```' % score


def _scores_by_answer(good: str, bad: str):
    """A judge that gives ``good`` to a colour and ``bad`` to a non-answer (its JSON literal as written)."""
    return ScriptedJudge(lambda prompt: _json(good if any(c in prompt for c in ("red", "blue", "green")) else bad))


def _run(case, tmp_path):
    from proctor.dialects.aisteer.runfile import run_use_cases

    result = run_use_cases(case, FakeModel("evaluated"), output_dir=tmp_path / "run")
    return result.results["tasks"]["Ask"]


# ---------------------------------------------------------------- the verdict reader
@pytest.mark.parametrize(
    "reply, says",
    [
        ('{"score": NaN}', "not a finite number"),  # upstream: min(5, nan) is 5, the top score
        ('{"score": Infinity}', "not a finite number"),
        ('{"score": -Infinity}', "not a finite number"),
        ('{"score": "nan"}', "not a finite number"),
        ('{"score": true}', "a boolean"),  # upstream: float(True) is 1.0
        ('{"score": false}', "a boolean"),
        ('{"score": 5, "score": 1}', "gives 'score' twice"),  # upstream: the last key wins
        ('{"score": [4]}', "not a number"),
    ],
)
def test_a_score_that_is_no_finite_number_is_unreadable(reply, says):
    from proctor.dialects.aisteer.judge import read_score

    with pytest.raises(ValueError, match=says):
        read_score(reply, (1, 5))


def test_readable_scores_are_read_as_upstream_reads_them():
    from proctor.dialects.aisteer.judge import read_score, read_verdict

    assert read_score(_json('"4"'), (1, 5)) == 4.0  # a number as text, as float() reads it
    assert read_verdict('{"score": 9}') == 9.0 and read_score('{"score": 9}', (1, 5)) == 5.0  # clamped, as upstream
    assert read_score('{"score": 0.5}', (1, 5)) == 1.0


# ---------------------------------------------------------------- refused before any model loads
@pytest.mark.parametrize(
    "scale, says",
    [
        ((5, 1), r"scale=\(5, 1\): the low bound must come first"),
        ((3, 3), "below the high one"),
        ((1, float("nan")), "finite"),
    ],
)
def test_a_scale_whose_low_bound_is_not_below_its_high_one_is_refused(scale, says):
    from proctor.dialects.aisteer.judge import LLMJudgeMetric

    with pytest.raises(ValueError, match=f"^LLMJudgeMetric: .*{says}"):
        LLMJudgeMetric("hf:/nonexistent/judge", "Rate: {response}", scale=scale)


def test_a_rubric_that_never_shows_the_answer_is_refused():
    from proctor.dialects.aisteer.judge import LLMJudgeMetric

    with pytest.raises(ValueError, match=r"prompt_template .* has no '\{response\}' field"):
        LLMJudgeMetric("hf:/nonexistent/judge", "Rate the answer to '{prompt}'.")
    with pytest.raises(ValueError, match="no '{response}' field"):  # an escaped brace is no field
        LLMJudgeMetric("hf:/nonexistent/judge", "Rate {{response}} for {prompt}")
    LLMJudgeMetric("hf:/nonexistent/judge", "Rate {response!r} for {prompt}")  # the judge is made on first use


def test_the_use_case_file_is_refused_naming_the_file_before_the_model_loads(tmp_path):
    from tests.support.cli_runs import run_in_process

    case = tmp_path / "uc.py"
    case.write_text(
        "from proctor import UseCase\n"
        "from proctor.dialects.aisteer.judge import LLMJudgeMetric\n"
        "class Ask(UseCase):\n"
        "    def generate(self, *a, **k): return []\n"
        "    def evaluate(self, g): return {}\n"
        "use_case = Ask([{'id': 0}], [LLMJudgeMetric('hf:/nonexistent/judge', 'Rate {response}', scale=(5, 1))])\n"
    )
    code, said = run_in_process(["run", str(case), "--model", "hf:/nonexistent/model", "-o", str(tmp_path / "r")])
    assert code == 2, said
    assert "uc.py:6" in said and "scale=(5, 1)" in said and "nonexistent/model" not in said


def test_a_judge_a_use_case_config_builds_with_a_reversed_scale_is_refused_naming_the_metric(tmp_path):
    from tests.support.cli_runs import run_in_process

    (tmp_path / "uc.py").write_text(
        "from proctor import UseCase\n"
        "class Ask(UseCase):\n"
        "    def generate(self, *a, **k): return []\n"
        "    def evaluate(self, g): return {}\n"
    )
    (tmp_path / "mine.py").write_text(
        "from proctor.dialects.aisteer.judge import LLMJudgeMetric\n"
        "class Judged(LLMJudgeMetric):\n"
        "    def __init__(self, model_or_id, scale):\n"
        "        super().__init__(model_or_id, 'Rate {response}', scale=tuple(scale))\n"
    )
    (tmp_path / "data.jsonl").write_text('{"id": 0}\n')
    (tmp_path / "c.yaml").write_text(
        "evaluation_data: data.jsonl\nevaluation_metrics:\n"
        "  - {metric: 'mine.py:Judged', model_or_id: 'hf:/nonexistent/judge', scale: [5, 1]}\n"
    )
    args = ["run", str(tmp_path / "uc.py"), "--use-case-config", str(tmp_path / "c.yaml"), "--trust-task-code"]
    code, said = run_in_process([*args, "--model", "hf:/nonexistent/model", "-o", str(tmp_path / "r")])
    assert code == 2 and "internal error" not in said, said
    assert "field 'evaluation_metrics': metric 'mine.py:Judged'" in said and "scale=(5, 1)" in said


# ---------------------------------------------------------------- counted and warned through a run
def test_off_scale_verdicts_keep_upstreams_clamped_number_and_are_warned(tmp_path):
    from proctor.dialects.aisteer.judge import LLMJudgeMetric

    metric = LLMJudgeMetric(_scores_by_answer("9", "2"), "Rate the answer to {prompt}: {response}")
    task = _run(_case(metric), tmp_path)
    assert task["evaluations"]["LLMJudgeMetric"]["scores"] == [5.0, 5.0, 5.0, 2.0, 2.0, 2.0]  # 9 clamped to 5
    assert task["metrics"]["LLMJudgeMetric.mean_score"]["value"] == pytest.approx(3.5)
    assert task["outcomes"]["judge_clamped"] == {"count": 3, "n": 6, "example": "LLMJudgeMetric: 9 read as 5 on (1, 5)"}
    assert any(w.startswith("3 of 6 judge verdicts were outside the metric's scale") for w in task["warnings"])


def test_a_judge_that_gives_every_answer_one_verdict_is_warned(tmp_path):
    from proctor.dialects.aisteer.judge import LLMJudgeMetric

    task = _run(_case(LLMJudgeMetric(_scores_by_answer("3", "3"), "Rate: {response}")), tmp_path / "a")
    assert task["metrics"]["LLMJudgeMetric.mean_score"]["value"] == 3.0
    assert task["outcomes"]["judge_constant"]["count"] == 6 and task["outcomes"]["judge_constant"]["n"] == 6
    assert any("judge verdicts have one value over answers that differ" in w for w in task["warnings"])
    # the control: a judge that tells the answers apart (5 and 1) is silent
    task = _run(_case(LLMJudgeMetric(_scores_by_answer("5", "1"), "Rate: {response}")), tmp_path / "b")
    assert task["metrics"]["LLMJudgeMetric.mean_score"]["value"] == 3.0
    assert "outcomes" not in task and "warnings" not in task
    # one answer given six times: one verdict is right, not a blind judge
    same = _case(LLMJudgeMetric(_scores_by_answer("4", "4"), "Rate: {response}"), answers=["red"] * 6)
    assert "outcomes" not in _run(same, tmp_path / "c")


def test_a_sampled_judges_unreadable_verdicts_are_counted_as_judge_errors(tmp_path):
    from proctor.dialects.aisteer.judge import LLMJudgeMetric

    judge = _scores_by_answer("5", "NaN")  # never a score for a non-answer, however often it is asked
    metric = LLMJudgeMetric(judge, "Rate: {response}", gen_kwargs={"temperature": 0.7}, max_retries=2)
    with pytest.warns(UserWarning, match="no score after 2 retries"):
        task = _run(_case(metric), tmp_path)
    assert task["evaluations"]["LLMJudgeMetric"]["scores"][:3] == [5.0, 5.0, 5.0]
    errors = task["outcomes"]["judge_errors"]
    assert errors["count"] == 3 and errors["n"] == 6
    assert "response 3" in errors["example"] and "not a finite number" in errors["example"]
    assert any(w.startswith("3 of 6 judge verdicts could not be read") for w in task["warnings"])


def test_a_greedy_judges_reply_cut_at_max_new_tokens_says_so():
    from proctor.dialects.aisteer.judge import LLMJudgeMetric

    class Cut(ScriptedJudge):
        def generate(self, requests, progress=None):
            return [
                GenerateResult('I will reason first. ```json\n{"score":', "length", 10, r.max_tokens) for r in requests
            ]

    metric = LLMJudgeMetric(Cut(lambda p: ""), "Rate: {response}")
    with pytest.raises(ValueError) as raised:
        metric(responses=["red"])
    said = str(raised.value)
    assert "cannot read a score from the judge's greedy reply" in said
    assert "stopped at max_new_tokens 30 (finish_reason 'length')" in said and "'max_new_tokens': 120" in said
    # a reply that ended on its own says nothing of the limit
    with pytest.raises(ValueError) as raised:
        LLMJudgeMetric(ScriptedJudge(lambda p: "four"), "Rate: {response}")(responses=["red"])
    assert "max_new_tokens" not in str(raised.value) and "no JSON object" in str(raised.value)


# ---------------------------------------------------------------- TruthfulQA's yes/no judges
def test_yes_no_verdicts_that_are_neither_keep_upstreams_zero_and_are_counted():
    from proctor.dialects.aisteer.truthfulqa import Truthfulness

    records = [
        {"question": f"q{i}", "response": f"answer {i}", "correct_answers": ["a"], "incorrect_answers": ["b"]}
        for i in range(4)
    ]
    replies = {"answer 0": "**Yes**", "answer 1": "Unsure", "answer 2": "yes", "answer 3": "No."}
    metric = Truthfulness(ScriptedJudge(lambda p: next(v for k, v in replies.items() if k in p)))
    assert metric(responses=records) == {"truthfulness_rate": 0.25, "scores": [0, 0, 1, 0]}  # AISteer360's reading
    counted = metric.judge_tally.counts["judge_not_yes_no"]
    assert (counted.count, counted.n) == (2, 4)
    assert counted.example == "Truthfulness, record 0: \"**Yes**\" (reads 'yes' once markup is gone)"


def test_a_truthfulqa_run_warns_of_verdicts_that_are_neither_yes_nor_no(tmp_path):
    from proctor.dialects.aisteer.runfile import run_use_cases
    from proctor.dialects.aisteer.truthfulqa import Truthfulness, TruthfulQA

    rows = [
        {
            "id": i,
            "question": f"Q{i}: is the earth flat?",
            "correct_answers": ["No"],
            "incorrect_answers": ["Yes"],
            "truthfulness_instruction": "Answer briefly.",
        }
        for i in range(6)
    ]
    for reply, silent in (("Unsure", False), ("yes", True)):
        case = TruthfulQA(rows, [Truthfulness(ScriptedJudge(lambda p, r=reply: r))])
        model = ScriptedJudge(lambda p: f"answer {p[-40:]}")  # a chat model, answers that differ
        result = run_use_cases(case, model, output_dir=tmp_path / reply)
        task = result.results["tasks"]["TruthfulQA"]
        assert task["metrics"]["Truthfulness.truthfulness_rate"]["value"] == (1.0 if silent else 0.0)
        if silent:  # every verdict 'yes' over six answers: too few for a yes/no judge to be called blind
            assert "outcomes" not in task and "warnings" not in task
        else:
            assert task["outcomes"]["judge_not_yes_no"] == {
                "count": 6,
                "n": 6,
                "example": 'Truthfulness, record 0: "Unsure"',
            }
            assert json.dumps(task["warnings"]).count("yes/no judge verdicts started with neither") == 1
