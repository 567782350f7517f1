"""``--model-role ROLE=MODEL`` (api/model_roles.py): a judge given for the run judges SEA-HELM's tasks (one fresh
``proctor`` process against two stand-in servers, the numbers and results.json's ``roles`` checked), run.json
records the roles given; malformed role flags are refused in-process, before a run folder is made or a model
loads."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.conftest import shared_path
from tests.support.cli_runs import QUESTIONS, QUIZ, jsonl, proctor, results, run_in_process, write
from tests.support.seahelm_fixtures import mt_bench_copy

SEAHELM_MT_BENCH = "aisingapore/MultiTurn-Chat-MT-Bench"
needs_server = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("httpx", "fastapi", "uvicorn")),
    reason="needs 'httpx', 'fastapi', 'uvicorn' (pip install 'proctor[openai,serve]')",
)


def _quiz(root):
    jsonl(root / "data.jsonl", QUESTIONS)
    return write(root / "quiz.yaml", QUIZ)


@needs_server
def test_judge_role_judges_seahelm_mt_bench_in_a_fresh_process(tmp_path):
    """The evaluated model and the judge are ScriptedJudgeServer stand-ins: the judge's rule (the longer answer
    wins; the evaluated stand-in's answer is longer than every baseline's) gives a win rate of exactly 100, and
    every verdict goes to the server of the role's model, none to the evaluated model's."""
    from tests.support.openai_fakes import ScriptedJudgeServer

    data = mt_bench_copy(tmp_path)
    config = shared_path("examples", "seahelm", "seahelm_tasks", "multi_turn", "mt_bench", "config.yaml")
    with ScriptedJudgeServer() as model_server, ScriptedJudgeServer() as judge_server:
        proctor(
            "run", str(config), "--model", "openai:evaluated", "--base-url", model_server.url,
            "--seahelm-data", f"{SEAHELM_MT_BENCH}={data}", "-t", "mt-bench/en",
            "--model-role", "judge=openai:graded-by", "--judge-base-url", judge_server.url, "-o", "run", "-q",
            cwd=tmp_path, env={"OPENAI_API_KEY": ""},
        )  # fmt: skip
        judged, answered = list(judge_server.received), list(model_server.received)
    written = results(tmp_path / "run")
    metrics = written["tasks"]["mt-bench/en"]["metrics"]
    assert metrics["weighted_win_rate"]["value"] == 100.0
    assert metrics["judge_requests"]["value"] == 8 and metrics["judge_errors"]["value"] == 0  # 2 x 2 turns x 2 orders
    assert len(judged) == 8 and {b["model"] for b in judged} == {"graded-by"}
    assert len(answered) == 4 and {b["model"] for b in answered} == {"evaluated"}  # 2 questions x 2 turns
    role = written["roles"]["judge"]
    assert role["model"] == "openai:graded-by" and role["source"] == "--model-role"
    assert role["fingerprint"]["model"] == "graded-by"
    assert json.loads((tmp_path / "run" / "run.json").read_text())["options"]["roles"] == {"judge": "openai:graded-by"}


@needs_server
def test_judge_role_served_takes_the_runs_base_url_when_no_judge_flag_is_given(tmp_path):
    """Without --judge-base-url an openai: judge role goes to --base-url, as the evaluated model does."""
    from tests.support.openai_fakes import ScriptedJudgeServer

    data = mt_bench_copy(tmp_path)
    config = shared_path("examples", "seahelm", "seahelm_tasks", "multi_turn", "mt_bench", "config.yaml")
    with ScriptedJudgeServer() as server:
        code, output = run_in_process(
            ["run", str(config), "--model", "openai:evaluated", "--base-url", server.url,
             "--seahelm-data", f"{SEAHELM_MT_BENCH}={data}", "-t", "mt-bench/en",
             "--model-role", "judge=openai:the-judge", "-o", str(tmp_path / "run"), "-q"]
        )  # fmt: skip
        models = [b["model"] for b in server.received]
    assert code == 0, output
    assert models.count("evaluated") == 4 and models.count("the-judge") == 8
    assert results(tmp_path / "run")["tasks"]["mt-bench/en"]["metrics"]["weighted_win_rate"]["value"] == 100.0


@pytest.mark.parametrize(
    "flags, says",
    [
        (
            ["--model-role", "judge"],
            "Invalid value for --model-role: takes ROLE=MODEL (e.g. judge=openai:gpt-4o-mini), got 'judge'",
        ),
        (["--model-role", "judge="], "takes ROLE=MODEL"),
        (["--model-role", "=smollm2"], "takes ROLE=MODEL"),
        (["--model-role", "grader=smollm2"], "unknown role 'grader'; the roles are judge:"),
        (["--model-role", "judge=nosuch:model"], "judge=nosuch:model: unknown model backend 'nosuch:'"),
        (
            ["--model-role", "judge=smollm2", "--model-role", "judge=hf:other"],
            "names the role 'judge' twice ('smollm2' and 'hf:other'); give it once",
        ),
        (
            ["--model-role", "judge=openai:x", "--judge-base-url", "http://127.0.0.1:9/v1"],
            "--judge-base-url/--judge-api-key-env/--judge-arg ({'base_url': 'http://127.0.0.1:9/v1', "
            "'api_key_env': 'OPENAI_API_KEY'}) applies to seahelm tasks only",
        ),
        (
            ["--model-role", "judge=smollm2", "--judge-base-url", "http://127.0.0.1:9/v1"],
            "applies to an openai: judge (--model-role judge= or --seahelm-judge) only",
        ),
        (
            ["--model-role", "judge=smollm2", "--seahelm-judge", "hf:other"],
            "names the judge 'hf:other' and --model-role judge= names 'smollm2'; give one",
        ),
    ],
)
def test_malformed_role_flags_are_refused_before_anything_loads(flags, says, tmp_path):
    task = _quiz(tmp_path)
    # a model that cannot load: every refusal comes before the model (or any role's) would be made
    absent = str(tmp_path / "absent")
    code, output = run_in_process(["run", str(task), "--model", absent, *flags, "-o", str(tmp_path / "run")])
    text = " ".join(output.replace("│", " ").split())
    assert code == 2 and says in text and "Traceback" not in output, output
    assert not (tmp_path / "run").exists()


def test_base_url_is_taken_for_an_openai_role_only(tmp_path):
    task = _quiz(tmp_path)
    code, output = run_in_process(
        ["run", str(task), "--model", str(tmp_path / "absent"), "--model-role", "judge=smollm2",
         "--base-url", "http://127.0.0.1:9/v1", "-o", str(tmp_path / "run")]
    )  # fmt: skip
    text = " ".join(output.replace("│", " ").split())
    assert code == 2 and "applies to openai: models (and an openai: judge) only" in text, output


def test_a_role_no_task_uses_is_a_warning_and_changes_no_number(tiny_model_dir, tmp_path):
    task = _quiz(tmp_path)
    plain, roled = tmp_path / "plain", tmp_path / "roled"
    for out, extra in ((plain, []), (roled, ["--model-role", f"judge={tiny_model_dir}"])):
        code, output = run_in_process(["run", str(task), "--model", str(tiny_model_dir), *extra, "-o", str(out), "-q"])
        assert code == 0, output
    said = "--model-role judge: no task used a judge model, so it changed nothing"
    assert said in " ".join(output.replace("│", " ").split())  # the console
    written = results(roled)
    assert said in written["warnings"] and "roles" not in written  # results.json
    assert written["tasks"]["quiz"]["metrics"] == results(plain)["tasks"]["quiz"]["metrics"]
