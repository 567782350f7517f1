"""lm-eval's and Inspect's common flags on ``proctor``: taken in proctor's meaning (``--tasks a,b``, ``-T``,
``validate --show N`` / ``--write-out``, ``--max-connections``, ``--predict-only``, ``--sample-id``) or refused
naming proctor's equivalent (cli/habits.py). One fresh ``proctor`` process per habit that works; the refusals and
malformed values in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.engine.predict_only import NOTE
from tests.support.cli_runs import (
    QUESTIONS,
    QUIZ,
    generate_task,
    jsonl,
    proctor,
    proctor_error,
    results,
    run_in_process,
    samples,
    write,
)

# the quiz under three names, its data in the folder ${PREFIX} (filled with --var / -T)
PREFIXED = QUIZ.replace("path: data.jsonl", "path: '${PREFIX}/data.jsonl'")


def _three_quizzes(root: Path) -> Path:
    jsonl(root / "quizzes" / "rows" / "data.jsonl", QUESTIONS)
    for name in ("alpha", "beta", "gamma"):
        write(root / "quizzes" / f"{name}.yaml", PREFIXED.replace("name: quiz", f"name: {name}"))
    return root / "quizzes"


def test_tasks_takes_lm_evals_comma_list_and_T_fills_task_variables(tiny_model_dir, tmp_path):
    _three_quizzes(tmp_path)
    proctor(
        "run", "quizzes", "--tasks", "alpha,gamma", "-T", "PREFIX=rows", "--model", str(tiny_model_dir), "-o", "run",
        "-q", cwd=tmp_path,
    )  # fmt: skip
    tasks = results(tmp_path / "run")["tasks"]
    assert sorted(tasks) == ["alpha", "gamma"]
    assert all(0.0 <= tasks[name]["metrics"]["acc"]["value"] <= 1.0 for name in tasks)
    rows = samples(tmp_path / "run")
    assert len(rows) == 2 * len(QUESTIONS)
    assert {r["task"] for r in rows} == {"alpha", "gamma"}


def test_validate_show_prints_the_rendered_prompts_without_a_model(tmp_path):
    _three_quizzes(tmp_path)
    for flag in ("--show", "--write-out"):
        done = proctor("validate", "quizzes/beta.yaml", flag, "2", "-T", "PREFIX=rows", cwd=tmp_path)
        out = done.stdout
        assert "beta sample a (1 of 5)" in out and "beta sample b (2 of 5)" in out and "sample c" not in out
        assert f"Q: {QUESTIONS[0]['question']}\nA:" in out
        assert "choices: " + " | ".join(QUESTIONS[1]["choices"]) in out


@pytest.mark.fast
def test_a_refused_habit_names_proctors_equivalent_in_a_fresh_process(tmp_path):
    _three_quizzes(tmp_path)
    message = proctor_error("run", "quizzes", "-T", "PREFIX=rows", "--log-dir", "logs", cwd=tmp_path)
    assert "--log-dir" in message and "-o/--output DIR" in message and "--data-dir" not in message
    assert not (tmp_path / "runs").exists() and not (tmp_path / "logs").exists()


def _cli(*args: str, cwd: Path) -> tuple[int, str]:
    """The CLI's entry point in-process: its exit code and what it printed."""
    import os

    from typer.testing import CliRunner

    from proctor.cli import app

    before = os.getcwd()
    os.chdir(cwd)
    try:
        out = CliRunner().invoke(app, list(args), terminal_width=400)
    finally:
        os.chdir(before)
    return out.exit_code, out.output


@pytest.mark.fast
@pytest.mark.parametrize(
    "flags, says",
    [
        (["--log-dir", "logs"], "-o/--output DIR"),
        (["--log_dir", "logs"], "-o/--output DIR"),
        (["--write_out"], "proctor validate PATHS --show N"),
        (["--show-config"], "tasks/NAME.yaml"),
        (["--log_samples"], "always logs the samples"),
        (["--system_instruction", "Be brief."], "--system-prompt TEXT"),
        (["--apply_chat_template"], "--chat-template on"),
        (["--max-samples", "8"], "--max-connections N"),
        (["--max-connections", "4"], "--batch-size N"),
        (["--max-connections", "0"], "greater than or equal to 1"),
        (["--tasks", ","], "names no task glob"),
        (["--seed", "0,1234,1234,1234"], "lm-eval's list of four seeds"),
        (["--seed", "x"], "takes an integer, got 'x'"),
    ],
)
def test_refused_habits_name_the_flag_and_proctors_equivalent(flags, says, tmp_path):
    _three_quizzes(tmp_path)
    code, output = _cli("run", "quizzes", "-T", "PREFIX=rows", *flags, cwd=tmp_path)
    assert code == 2, output
    text = " ".join(output.replace("│", " ").split())  # click's error box wraps the message
    assert flags[0].replace("_", "-") in text and says in text, output
    assert not (tmp_path / "runs").exists()  # refused before a run folder was made


def test_predict_only_keeps_answers_and_the_same_folder_is_scored_later_in_fresh_processes(tiny_model_dir, tmp_path):
    """lm-eval's --predict_only: the tiny model's answers kept, no metric; the folder run again without it is scored
    from its store (no request computed), to the numbers of a run that scored at once."""
    _three_quizzes(tmp_path)
    jsonl(tmp_path / "answers" / "data.jsonl", QUESTIONS)
    write(tmp_path / "answers" / "task.yaml", ANSWERS)
    common = ("quizzes/alpha.yaml", "answers", "-T", "PREFIX=rows", "--model", str(tiny_model_dir), "-q")
    done = proctor("run", *common, "--predict_only", "-o", "run", cwd=tmp_path)
    assert "predict-only run" in done.stdout + done.stderr
    kept = results(tmp_path / "run")
    assert kept["predict_only"] is True and NOTE in kept["warnings"]
    assert [(t["n_samples"], t["metrics"]) for t in kept["tasks"].values()] == [(5, {}), (5, {})]
    records = samples(tmp_path / "run")
    assert all(r["metrics"] == {} for r in records)
    assert all(len(r["logprobs"]) == 3 for r in records if r["task"] == "alpha")
    assert all(isinstance(r["generation"], str) for r in records if r["task"] == "answers")

    proctor("run", *common, "-o", "run", cwd=tmp_path)
    attempts = json.loads((tmp_path / "run" / "run.json").read_text())["attempts"]
    assert attempts[0]["predict_only"] is True and "predict_only" not in attempts[1]
    assert attempts[1]["responses"] == {"from_run_store": 20, "from_cache": 0, "computed": 0}  # 15 choices, 5 replies
    proctor("run", *common, "-o", "direct", cwd=tmp_path)
    scored, direct = results(tmp_path / "run"), results(tmp_path / "direct")
    assert "predict_only" not in scored
    for name in ("alpha", "answers"):
        assert scored["tasks"][name]["metrics"] == direct["tasks"][name]["metrics"]
    assert 0.0 <= scored["tasks"]["alpha"]["metrics"]["acc"]["value"] <= 1.0
    assert [r["metrics"] for r in samples(tmp_path / "run")] == [r["metrics"] for r in samples(tmp_path / "direct")]


def test_sample_id_runs_those_samples_with_their_own_numbers_in_a_fresh_process(tiny_model_dir, tmp_path):
    """Inspect's --sample-id: the samples b and d of each task, each with the values a run over every row gives it."""
    _three_quizzes(tmp_path)
    common = ("quizzes", "--tasks", "alpha,beta", "-T", "PREFIX=rows", "--model", str(tiny_model_dir), "-q")
    proctor("run", *common, "-o", "full", cwd=tmp_path)
    proctor("run", *common, "--sample-id", "b", "--sample-id", "d", "-o", "chosen", cwd=tmp_path)
    chosen, full = results(tmp_path / "chosen"), results(tmp_path / "full")
    assert chosen["sample_ids"] == ["b", "d"]
    everything = {(r["task"], r["id"]): r for r in samples(tmp_path / "full")}
    kept = {(r["task"], r["id"]): r for r in samples(tmp_path / "chosen")}
    assert sorted(kept) == [("alpha", "b"), ("alpha", "d"), ("beta", "b"), ("beta", "d")]
    for key, record in kept.items():
        assert record["logprobs"] == everything[key]["logprobs"] and record["metrics"] == everything[key]["metrics"]
    for name in ("alpha", "beta"):
        task = chosen["tasks"][name]
        assert task["n_samples"] == 2 and full["tasks"][name]["n_samples"] == 5
        own = [kept[(name, i)]["metrics"]["acc"] for i in ("b", "d")]
        assert task["metrics"]["acc"]["value"] == sum(own) / 2


@pytest.mark.fast
@pytest.mark.parametrize(
    "flags, says",
    [
        (["--sample-id", "zz,b"], "no sample has the id(s) 'zz' in task(s) alpha, beta, gamma"),
        (["--sample-id", "q*"], "no sample has the id(s) 'q*'"),
        (["--sample-id", "a,,b"], "names an empty id"),
        (["--sample-id", "a", "--sample-id", "a"], "id 'a' is given twice"),
        (["--sample-id", "a", "--limit", "2"], "--sample-id and --limit exclude each other"),
        (["--sample-id", "a", "--limit-per-part", "2"], "--sample-id and --limit-per-part exclude each other"),
    ],
)
def test_malformed_sample_ids_are_refused_before_a_run_folder_is_made(flags, says, tmp_path):
    folder = _three_quizzes(tmp_path)
    code, output = run_in_process(["run", str(folder), "-T", "PREFIX=rows", *flags, "-o", str(tmp_path / "run")])
    text = " ".join(output.replace("│", " ").split())
    assert code == 2 and says in text and "Traceback" not in output, output
    assert not (tmp_path / "run").exists()


def test_sample_id_is_refused_for_lm_eval_tasks_which_read_their_own_rows(tmp_path):
    pytest.importorskip("lm_eval")
    folder, data = _lmeval_quiz(tmp_path)
    mapped = f"example/quiz:small={data}"
    code, output = run_in_process(
        ["run", str(folder), "--lmeval-data", mapped, "--sample-id", "0", "-o", str(tmp_path / "run")]
    )
    text = " ".join(output.replace("│", " ").split())
    assert code == 2 and "task(s) quiz_plain read their rows with their dialect's own code" in text, output
    assert "--limit N" in text and not (tmp_path / "run").exists()


def test_max_connections_is_an_openai_models_concurrency():
    from proctor.cli.habits import max_connections_option

    assert max_connections_option(5, True, {}) == {"concurrency": 5}
    assert max_connections_option(None, False, {}) == {}
    import typer

    with pytest.raises(typer.BadParameter, match="give it once"):
        max_connections_option(5, True, {"concurrency": 2})


def test_lm_evals_seed_and_gen_kwargs_on_its_tasks_in_a_fresh_process(tiny_model_dir, tmp_path):
    """``--gen-kwargs`` merged into the generate task's generation_kwargs and ``--seed`` as its few-shot seed, as
    lm-eval's flags do."""
    pytest.importorskip("lm_eval")
    from tests.support.lmeval_quiz import GEN_TASK, MANY_SHOTS, ROWS, first_shot

    write(tmp_path / "gen" / "quiz_gen.yaml", GEN_TASK)
    jsonl(tmp_path / "data" / "test.jsonl", ROWS)
    jsonl(tmp_path / "data" / "train.jsonl", MANY_SHOTS)
    proctor(
        "run", "gen", "--lmeval-data", f"example/quiz:small={tmp_path / 'data'}", "--gen-kwargs", "max_gen_toks=2",
        "--seed", "7", "--model", str(tiny_model_dir), "-o", "run", "-q", cwd=tmp_path,
    )  # fmt: skip
    first = next(r for r in samples(tmp_path / "run") if r["doc_id"] == 0)
    context, given = first["arguments"][0]
    assert context.startswith(f"Q: {first_shot(7)}\nA:") and first_shot(7) != first_shot(1234)
    assert given == {"until": ["\n"], "max_gen_toks": 2}
    recorded = results(tmp_path / "run")
    assert recorded["tasks"]["quiz_gen"]["metrics"]["exact_match,none"]["value"] == 0.0  # a random model's answers


def _lmeval_quiz(root: Path) -> tuple[Path, Path]:
    from tests.support.lmeval_quiz import ROWS, SHOTS, TASK_A, TEMPLATE

    write(root / "lmquiz" / "_template_yaml", TEMPLATE)
    write(root / "lmquiz" / "quiz_plain.yaml", TASK_A)
    jsonl(root / "lmdata" / "test.jsonl", ROWS)
    jsonl(root / "lmdata" / "train.jsonl", SHOTS)
    return root / "lmquiz", root / "lmdata"


def test_metadata_reaches_lm_eval_task_configs_in_a_fresh_process(tiny_model_dir, tmp_path):
    """lm-eval's --metadata JSON merged into each task config's metadata: its version (3 in the YAML) becomes 7."""
    pytest.importorskip("lm_eval")
    folder, data = _lmeval_quiz(tmp_path)
    common = ("--lmeval-data", f"example/quiz:small={data}", "--model", str(tiny_model_dir), "-q")
    proctor("run", "lmquiz", *common, "-o", "plain", cwd=tmp_path)
    proctor(
        "run", "lmquiz", *common, "--metadata", '{"version": 7, "max_seq_lengths": [64]}', "-o", "meta", cwd=tmp_path
    )
    plain, meta = results(tmp_path / "plain")["tasks"]["quiz_plain"], results(tmp_path / "meta")["tasks"]["quiz_plain"]
    assert (plain["version"], meta["version"]) == ("3", "7")
    assert meta["metrics"]["acc,none"]["value"] == plain["metrics"]["acc,none"]["value"]


@pytest.mark.fast
@pytest.mark.parametrize(
    "value, says",
    [("not json", "takes a JSON object"), ("[4096]", "takes a JSON object ({...}), got list")],
)
def test_malformed_metadata_names_the_flag(value, says, tmp_path):
    pytest.importorskip("lm_eval")
    folder, data = _lmeval_quiz(tmp_path)
    code, output = _cli(
        "validate", "lmquiz", "--lmeval-data", f"example/quiz:small={data}", "--metadata", value, cwd=tmp_path
    )
    text = " ".join(output.replace("│", " ").split())
    assert code == 2 and "--metadata" in text and says in text, output


ANSWERS = generate_task("answers", "data.jsonl", "Q: {{ question }}\nA:", "{{ choices[label] }}", 4)


class _CountingServer:
    """A stand-in OpenAI-compatible server on 127.0.0.1 (NOT a model): it answers every completion ' blue' after a
    short wait and records the most requests it held at once."""

    def __init__(self) -> None:
        import json
        import threading
        import time
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.lock, self.open, self.most = threading.Lock(), 0, 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with server.lock:
                    server.open += 1
                    server.most = max(server.most, server.open)
                time.sleep(0.3)  # long enough for the client's other requests to arrive meanwhile
                with server.lock:
                    server.open -= 1
                choice = {"index": 0, "finish_reason": "stop", "text": " blue"}
                if self.path.endswith("/chat/completions"):
                    choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "blue"}}
                usage = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
                data = json.dumps({"id": "x", "object": "text_completion", "choices": [choice], "usage": usage})
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data.encode())))
                self.end_headers()
                self.wfile.write(data.encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "_CountingServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_max_connections_bounds_an_openai_models_requests_in_a_fresh_process(tmp_path):
    pytest.importorskip("httpx")
    jsonl(tmp_path / "answers" / "data.jsonl", QUESTIONS)
    write(tmp_path / "answers" / "task.yaml", ANSWERS)
    for count in (1, 2):
        with _CountingServer() as server:
            proctor(
                "run", "answers", "--model", "openai:stub", "--base-url", server.url, "--max-connections", str(count),
                "-o", f"run{count}", "-q", cwd=tmp_path, env={"OPENAI_API_KEY": "sk-test"},
            )  # fmt: skip
        assert server.most == count
        # ' blue' is right for the first question only
        assert results(tmp_path / f"run{count}")["tasks"]["answers"]["metrics"]["exact_match"]["value"] == 0.2
