"""AISteer360's model-based metrics take their models from the run's model roles (api/model_roles.py): the
``judge`` role replaces the model an ``LLMJudgeMetric`` names, the ``metric`` role the model a ``Perplexity`` reads;
the model a file names stays the default, and a role's model is made once per run."""

from __future__ import annotations

import pytest

from proctor.api.model_roles import ModelRoles, active_roles, roles_in_use
from proctor.core.dialect import OptionError
from tests.support.aisteer_fakes import ScriptedJudge
from tests.support.cli_runs import samples
from tests.support.fakes import FakeModel

ABSENT_JUDGE = "hf:/nonexistent/judge-model"  # the file's judge: never loaded while a role replaces it


def _ask_case(judge_spec):
    from proctor.dialects.aisteer import UseCase
    from proctor.dialects.aisteer.generation import batch_retry_generate
    from proctor.dialects.aisteer.judge import LLMJudgeMetric

    class Ask(UseCase):
        _EVALUATION_REQ_KEYS = ("id", "q")

        def validate_evaluation_data(self, row):
            pass

        def generate(self, model_or_pipeline, tokenizer=None, gen_kwargs=None, runtime_overrides=None, **kwargs):
            items = [{"prompt": r["q"]} for r in self.evaluation_data]
            texts = batch_retry_generate(items, model_or_pipeline, tokenizer, gen_kwargs=gen_kwargs, use_chat=False)
            return [{"response": t} for t in texts]

        def evaluate(self, generations):
            return {m.name: m(responses=[g["response"] for g in generations]) for m in self.evaluation_metrics}

    metric = LLMJudgeMetric(
        judge_spec, "Rate: {response}", structured_output=False, parser=lambda text: float(len(text))
    )
    return Ask([{"id": i, "q": f"question {i}"} for i in range(4)], [metric])


def test_judge_role_replaces_the_use_cases_judge_through_a_run(tmp_path):
    from proctor.dialects.aisteer.runfile import run_use_cases

    judge = ScriptedJudge(lambda prompt: "x" * (len(prompt) % 5 + 1))
    result = run_use_cases(
        _ask_case(ABSENT_JUDGE),
        FakeModel("evaluated"),
        gen_kwargs={"max_new_tokens": 3},
        output_dir=tmp_path / "run",
        model_roles={"judge": judge},
    )
    task = result.results["tasks"]["Ask"]
    responses = [record["generations"][0]["response"] for record in samples(tmp_path / "run")]
    prompts = [ScriptedJudge.apply_chat_template(judge, [{"role": "user", "content": f"Rate: {r}"}]) for r in responses]
    expected = [float(len(prompt) % 5 + 1) for prompt in prompts]  # the scripted judge's rule, per response
    assert sorted(judge.prompts) == sorted(set(prompts))  # each distinct response judged once, by the role's judge
    assert task["evaluations"]["LLMJudgeMetric"]["scores"] == expected
    assert task["metrics"]["LLMJudgeMetric.mean_score"]["value"] == pytest.approx(sum(expected) / 4)
    assert result.results["roles"] == {
        "judge": {"model": "scripted-judge", "source": "--model-role", "fingerprint": judge.fingerprint}
    }


def test_the_files_judge_is_the_default_when_no_role_is_given(tmp_path):
    """No role: the metric's own model judges (a model object, as a use case file may hand one), recorded as
    the task's."""
    from proctor.dialects.aisteer.runfile import run_use_cases

    judge = ScriptedJudge(lambda prompt: "yy")
    result = run_use_cases(
        _ask_case(judge), FakeModel("evaluated"), gen_kwargs={"max_new_tokens": 3}, output_dir=tmp_path / "run"
    )
    evaluation = result.results["tasks"]["Ask"]["evaluations"]["LLMJudgeMetric"]
    assert evaluation["scores"] == [2.0] * 4 and 1 <= len(judge.prompts) <= 4
    assert result.results["roles"]["judge"]["source"] == "task"


def test_metric_role_replaces_the_model_perplexity_reads(tiny_model_dir):
    from proctor.dialects.aisteer.generic_metrics import Perplexity

    texts = ["The sky is blue.", "A somewhat longer sentence about nothing in particular."]
    expected = Perplexity(str(tiny_model_dir), batch_size=2)(responses=texts)
    roles = ModelRoles({"metric": str(tiny_model_dir)})
    with roles_in_use(roles):
        replaced = Perplexity("hf:/nonexistent/metric-model", batch_size=2)(responses=texts)
    assert replaced["perplexities"] == expected["perplexities"]  # the same model, the same numbers, bit for bit
    assert roles.used()["metric"]["model"] == str(tiny_model_dir)
    assert active_roles() is not roles  # the run's roles end with the block


def test_a_role_named_twice_is_made_once(tiny_model_dir):
    roles = ModelRoles()
    judge = roles.model("judge", str(tiny_model_dir))
    assert roles.model("judge", str(tiny_model_dir)) is judge
    assert roles.model("metric", str(tiny_model_dir)) is judge  # the same spec and options: one model
    assert roles.model("judge", str(tiny_model_dir), options={"dtype": "float32"}) is not judge


@pytest.mark.parametrize(
    "given, says",
    [
        ({"grader": "smollm2"}, "model_roles: unknown role 'grader'"),
        ({"judge": " "}, "model_roles: role 'judge' names no model"),
        ({"judge": "nosuch:model"}, "model_roles: judge=nosuch:model: unknown model backend 'nosuch:'"),
    ],
)
def test_bad_roles_from_python_are_refused_before_anything_runs(given, says, tmp_path):
    from proctor.dialects.aisteer.runfile import run_use_cases

    evaluated = FakeModel("evaluated")
    with pytest.raises(OptionError) as caught:
        run_use_cases(_ask_case(ABSENT_JUDGE), evaluated, output_dir=tmp_path / "run", model_roles=given)
    assert says in str(caught.value)
    assert evaluated.calls == [] and not (tmp_path / "run").exists()


def test_steer_base_role_is_the_base_a_steer_model_steers(tiny_model_dir, tmp_path):
    """``--model steer:FILE.py:NAME`` with no ``--model-arg base=``: the ``steer_base`` role is its base (the default,
    smollm2, never loads); a control of strength zero gives the base model's own numbers."""
    from tests.support.cli_runs import QUESTIONS, QUIZ, jsonl, results, run_in_process, write

    jsonl(tmp_path / "data.jsonl", QUESTIONS)
    task = write(tmp_path / "quiz.yaml", QUIZ)
    (tmp_path / "pipes.py").write_text(
        "from proctor.dialects.aisteer import ActivationAddition\n"
        "ZERO = [ActivationAddition([0], 0.0, 'Yes, gladly.', 'No, never.')]\n"
    )
    steered, plain = tmp_path / "steered", tmp_path / "plain"
    code, output = run_in_process(
        ["run", str(task), "--model", f"steer:{tmp_path / 'pipes.py'}:ZERO",
         "--model-role", f"steer_base={tiny_model_dir}", "-o", str(steered), "-q"]
    )  # fmt: skip
    assert code == 0, output
    code, output = run_in_process(["run", str(task), "--model", str(tiny_model_dir), "-o", str(plain), "-q"])
    assert code == 0, output
    written = results(steered)
    assert written["model"]["steering"]["controls"][0]["control"] == "ActivationAddition"
    assert written["roles"]["steer_base"]["model"] == str(tiny_model_dir)
    assert written["roles"]["steer_base"]["source"] == "--model-role"
    assert written["tasks"]["quiz"]["metrics"] == results(plain)["tasks"]["quiz"]["metrics"]


def test_a_role_model_that_cannot_load_names_the_role(tmp_path):
    from proctor.core.errors import ModelLoadError
    from proctor.dialects.aisteer.runfile import run_use_cases

    absent = str(tmp_path / "absent-judge")
    with pytest.raises(ModelLoadError) as caught:
        run_use_cases(
            _ask_case(ABSENT_JUDGE), FakeModel("evaluated"), output_dir=tmp_path / "run", model_roles={"judge": absent}
        )
    assert str(caught.value).startswith(f"--model-role judge={absent}: cannot load model")
