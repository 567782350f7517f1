"""Settings that used to pass without a word (red team 11: 016, 063, 088, 089, 104, 105): a generation the
server cut before its max_tokens is counted and warned; sampling switched on at temperature 0, or a token budget
given twice with two values, is refused; a --var / --data-dir value no task read is warned; a copy of a run
folder is refused by compare as the run itself, while a rerun of the same command compares."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from proctor import load_tasks
from proctor.core.errors import ProctorError
from proctor.core.run_overrides import RunOverrides, parse_gen_kwargs
from proctor.engine.override_policy import apply_overrides
from tests.support.cli_runs import jsonl, run_in_process, run_proctor, slow_model_plugin, write
from tests.support.reply_faults import ToyLogprobServer

ROWS = [
    {"id": str(i), "question": f"Capital of {c}?", "answer": "Rome" if i % 2 else "Paris"} for i, c in enumerate("wxyz")
]


def _task(folder: Path, path: str = "qa.jsonl", data_folder: Path | None = None) -> Path:
    jsonl((data_folder or folder) / "qa.jsonl", ROWS)
    return write(
        folder / "task.yaml",
        f"""\
        name: capitals
        kind: generate
        data: {{path: "{path}", id: id}}
        prompt: "Q: {{{{ question }}}}\\nA:"
        target: "{{{{ answer }}}}"
        generation: {{max_tokens: 4, stop: ["\\n"]}}
        metrics: [exact_match]
        """,
    )


def _results(run: Path) -> dict:
    return json.loads((run / "results.json").read_text())


def _all_warnings(results: dict) -> list[str]:
    return list(results.get("warnings", [])) + [w for t in results["tasks"].values() for w in t.get("warnings", [])]


# ------------------------------------------------------------------ 016: 'length' before max_tokens
def test_generations_a_server_cut_before_max_tokens_are_warned_and_counted(tmp_path):
    task = _task(tmp_path / "t")
    with ToyLogprobServer("length_cut_short", fault_on="scoring") as cut, ToyLogprobServer() as whole:
        done = run_proctor("run", str(task), "--model", "openai:toy", "--base-url", cut.url, "-o", "cut", cwd=tmp_path)
        control = run_proctor(
            "run", str(task), "--model", "openai:toy", "--base-url", whole.url, "-o", "whole", cwd=tmp_path
        )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-3000:]
    assert "4 of 4 generations ended with finish_reason 'length' after fewer tokens than the max_tokens" in said, said[
        -3000:
    ]
    assert "1 of 4 tokens" in said  # the example: what came back against what was asked
    found = _results(tmp_path / "cut")
    assert found["tasks"]["capitals"]["outcomes"]["cut_short"]["count"] == 4
    assert found["tasks"]["capitals"]["outcomes"]["cut_short"]["n"] == 4
    assert any("finish_reason 'length' after fewer tokens" in w for w in _all_warnings(found))
    assert control.returncode == 0, control.stderr[-3000:]
    assert "finish_reason 'length'" not in control.stdout + control.stderr
    assert "cut_short" not in _results(tmp_path / "whole")["tasks"]["capitals"].get("outcomes", {})


# ------------------------------------------------------------------ 088, 089: contradictory generation flags
@pytest.mark.parametrize(
    "given, expected",
    [
        ("do_sample=true,temperature=0", "do_sample=true with temperature=0: temperature 0 decodes greedily"),
        ("temperature=0.0,do_sample=True", "do_sample=true with temperature=0.0"),
        ("do_sample=true", "do_sample=true: task 'capitals' (native) decodes greedily (its temperature is 0.0)"),
        ("do_sample=false,temperature=0.7", "do_sample=false with temperature=0.7"),
        ("do_sample=yes", "do_sample takes true or false, got 'yes'"),
    ],
)
def test_do_sample_that_contradicts_the_temperature_is_refused(tmp_path, given, expected):
    task = _task(tmp_path / "t")
    code, said = run_in_process(
        ["run", str(task), "--model", "openai:toy", "--gen-kwargs", given, "-o", str(tmp_path / "o")]
    )
    assert code == 2 and expected in said, said
    assert "Traceback" not in said and not (tmp_path / "o").exists()


def test_do_sample_agreeing_with_the_temperature_is_read_as_that_temperature():
    assert parse_gen_kwargs("do_sample=false") == {"temperature": 0.0}
    assert parse_gen_kwargs("do_sample=true,temperature=0.7") == {"temperature": 0.7}
    assert RunOverrides.from_flags(gen_kwargs="do_sample=true", temperature=0.5).gen_kwargs == {"temperature": 0.5}
    with pytest.raises(ProctorError, match="do_sample=true with temperature=0.0"):
        RunOverrides.from_flags(gen_kwargs="do_sample=true", temperature=0.0)
    # alone, it asks each task to sample at its own temperature (checked where the overrides meet the task)
    assert parse_gen_kwargs("do_sample=true,max_gen_toks=8") == {"do_sample": True, "max_tokens": 8}


def test_do_sample_alone_samples_at_a_tasks_own_temperature_and_refuses_a_greedy_one(tmp_path):
    """lm-eval's habit `--gen_kwargs do_sample=true` on a task whose own temperature is 0.8: sampled at 0.8 (it
    was refused for want of a command-line temperature); on a greedy task, refused naming the task."""
    warm = _task(tmp_path / "warm")
    warm.write_text(warm.read_text().replace("max_tokens: 4,", "max_tokens: 4, temperature: 0.8,"))
    overrides = RunOverrides.from_flags(gen_kwargs="do_sample=true,max_gen_toks=3")
    [task] = apply_overrides(load_tasks([warm]), overrides)
    assert (task.spec.generation.temperature, task.spec.generation.max_tokens) == (0.8, 3)
    with pytest.raises(ProctorError, match=r"task 'capitals' \(native\) decodes greedily"):
        apply_overrides(load_tasks([_task(tmp_path / "cold")]), overrides)


@pytest.mark.parametrize(
    "flags, expected",
    [
        (["--gen-kwargs", "max_gen_toks=5", "--max-tokens", "10"], "--max-tokens 10 and --gen-kwargs give max_tokens"),
        (["--gen-kwargs", "temperature=0.2", "--temperature", "0.5"], "--temperature 0.5 and --gen-kwargs give"),
        (["--gen-kwargs", "top_p=0.9", "--top-p", "0.8"], "--top-p 0.8 and --gen-kwargs give top_p two values"),
    ],
)
def test_one_setting_given_two_values_by_a_flag_and_gen_kwargs_is_refused(tmp_path, flags, expected):
    task = _task(tmp_path / "t")
    code, said = run_in_process(["run", str(task), "--model", "openai:toy", *flags, "-o", str(tmp_path / "o")])
    assert code == 2 and expected in said, said


def test_one_setting_given_the_same_value_twice_is_one_setting():
    assert RunOverrides.from_flags(gen_kwargs="max_gen_toks=5", max_tokens=5).gen_kwargs == {"max_tokens": 5}


# ------------------------------------------------------------------ 104, 105: values no task read
def test_var_and_data_dir_values_that_no_task_read_are_warned_and_used_ones_are_not(tmp_path):
    data = tmp_path / "data"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    plain = _task(tmp_path / "plain")
    reads_var = _task(tmp_path / "reads", path="${PROCTOR_DATA}/qa.jsonl", data_folder=data)
    with ToyLogprobServer() as server:
        url = ["--model", "openai:toy", "--base-url", server.url]
        unused = run_proctor(
            "run", str(plain), *url, "-T", "NOPE=1", "--data-dir", str(elsewhere), "-o", "unused", cwd=tmp_path
        )
        # the task's own folder lies inside --data-dir: the file was the task folder's to read, not the flag's
        inside = run_proctor("run", str(plain), *url, "--data-dir", str(tmp_path), "-o", "inside", cwd=tmp_path)
        used = run_proctor("run", str(reads_var), *url, "--data-dir", str(data), "-o", "used", cwd=tmp_path)
    said = unused.stdout + unused.stderr
    assert unused.returncode == 0, said[-3000:]
    assert "--var NOPE=1 had no effect: no task file of this run reads ${NOPE}" in said, said[-3000:]
    assert f"--data-dir {elsewhere} had no effect" in said
    recorded = _results(tmp_path / "unused")["warnings"]
    assert any("NOPE=1 had no effect" in w for w in recorded) and any("--data-dir" in w for w in recorded)
    assert inside.returncode == 0 and f"--data-dir {tmp_path} had no effect" in inside.stderr + inside.stdout
    assert used.returncode == 0, used.stderr[-3000:]
    assert "had no effect" not in used.stdout + used.stderr
    assert not any("had no effect" in w for w in _results(tmp_path / "used").get("warnings", []))


def test_a_data_dir_that_admits_an_absolute_data_path_is_used(tmp_path):
    data = tmp_path / "data"
    task = _task(tmp_path / "t", path=str(data / "qa.jsonl"), data_folder=data)
    with ToyLogprobServer() as server:
        code, said = run_in_process(
            ["run", str(task), "--model", "openai:toy", "--base-url", server.url, "--data-dir", str(data)]
            + ["-o", str(tmp_path / "o")]
        )
    assert code == 0 and "had no effect" not in said, said


# ------------------------------------------------------------------ 063: a copy of a run folder
def test_a_copy_of_a_run_is_refused_as_the_run_itself_and_a_rerun_compares(tmp_path):
    task = _task(tmp_path / "t")
    with ToyLogprobServer() as server:
        for out in ("a", "rerun"):
            done = run_proctor(
                "run", str(task), "--model", "openai:toy", "--base-url", server.url, "-o", out, cwd=tmp_path
            )
            assert done.returncode == 0, done.stderr[-3000:]
    shutil.copytree(tmp_path / "a", tmp_path / "copy")
    first, again = _results(tmp_path / "a")["run_id"], _results(tmp_path / "rerun")["run_id"]
    assert first and first != again
    done = run_proctor("compare", "a", "copy", cwd=tmp_path)
    said = done.stdout + done.stderr
    assert done.returncode == 2 and f"copy is a copy of a: the same run (run id {first}" in said, said
    assert "Traceback" not in said
    done = run_proctor("compare", "a", "rerun", "-o", "ar.json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


# ------------------------------------------------------------------ provenance that names one server once
def test_one_server_spelled_two_ways_is_one_server_and_two_servers_are_two():
    from proctor.engine.provenance_warnings import address_warning

    def attempts(first: dict, second: dict) -> list[dict]:
        return [{**first, "responses": {"computed": 5}}, second]

    slash = attempts({"base_url": "http://127.0.0.1:8000/v1"}, {"base_url": "http://127.0.0.1:8000/v1/"})
    assert address_warning(slash, 5, 3) is None
    # an earlier version recorded the command line, credentials and all; this one records the address masked
    masked = attempts(
        {"command": ["proctor", "run", "--base-url", "http://u:secret@Host:8000/v1"]},
        {"base_url": "http://u:***@host:8000/v1"},
    )
    assert address_warning(masked, 5, 3) is None
    other = attempts({"base_url": "http://127.0.0.1:8000/v1"}, {"base_url": "http://127.0.0.1:8001/v1"})
    assert "5 answers were stored by an earlier attempt against http://127.0.0.1:8000/v1" in address_warning(
        other, 5, 3
    )


def test_pace_options_of_a_plugin_backend_are_information():
    from proctor.runs.task_settings import inert_options

    assert {"concurrency", "timeout", "deadline", "max_retries", "backoff"} <= inert_options("a-plugin-backend")
    assert "revision" not in inert_options("a-plugin-backend") and "base_url" in inert_options("openai")


# ------------------------------------------------------------------ 186: what the command line asked is not the file's
def test_num_fewshot_0_beside_a_fewshot_source_is_not_blamed_on_the_task_file(tmp_path):
    task = _task(tmp_path / "t")
    jsonl(tmp_path / "t" / "dev.jsonl", ROWS)
    text = task.read_text().replace(
        "metrics: [exact_match]", "metrics: [exact_match]\nfewshot: {source: {path: dev.jsonl, id: id}, count: 2}"
    )
    task.write_text(text)
    with ToyLogprobServer() as server:
        url = ["--model", "openai:toy", "--base-url", server.url]
        code, said = run_in_process(["run", str(task), *url, "--num-fewshot", "0", "-o", str(tmp_path / "zero")])
        assert code == 0 and "fewshot.settings" not in said, said
        text = task.read_text().replace("count: 2", "count: 0")  # the file itself asks for none: said
        task.write_text(text)
        code, said = run_in_process(["run", str(task), *url, "-o", str(tmp_path / "file")])
    assert code == 0 and "[fewshot.settings]" in said and "fewshot.count is 0" in said, said


# ------------------------------------------------------------------ 208: a shuffle of the lettered options is a setting
def test_compare_names_a_shuffle_of_the_lettered_options(tmp_path):
    rows = [{"id": str(i), "q": f"Question {i}?", "options": ["w", "x", "y", "z"], "label": i % 4} for i in range(8)]
    jsonl(tmp_path / "mc" / "data.jsonl", rows)
    write(
        tmp_path / "mc" / "task.yaml",
        """\
        name: mc
        kind: multiple_choice
        data: {path: data.jsonl, id: id}
        prompt: "{{ q }}"
        choices: "{{ options }}"
        target: "{{ label }}"
        """,
    )
    with ToyLogprobServer() as server:
        for out, extra in (("plain", []), ("shuffled", ["--mc-shuffle", "3"])):
            args = ["run", str(tmp_path / "mc"), "--model", "openai:toy", "--base-url", server.url, "-o", out]
            done = run_proctor(*args, "--mc-format", "generate", *extra, cwd=tmp_path)
            assert done.returncode == 0, done.stderr[-3000:]
    assert _results(tmp_path / "shuffled")["tasks"]["mc"]["settings"]["mc_shuffle"] == 3
    done = run_proctor("compare", "plain", "shuffled", cwd=tmp_path)
    assert "mc: mc_shuffle: A none, B 3" in done.stdout + done.stderr, done.stdout + done.stderr


# ------------------------------------------------------------------ 122: pass@K of a graded metric
def test_pass_at_k_of_a_graded_metric_says_it_was_averaged(tmp_path):
    task = _task(tmp_path / "t")
    task.write_text(task.read_text().replace("metrics: [exact_match]", "metrics: [exact_match, f1]"))
    # the fake model answers one of these words: F1 of 2/7 against them all, graded, where exact match is 0 or 1
    everything = "paris blue seven water oxygen cat"
    jsonl(tmp_path / "t" / "qa.jsonl", [{**row, "answer": everything} if i % 2 else row for i, row in enumerate(ROWS)])
    plugin = slow_model_plugin(tmp_path / "plugin", 0.0)
    args = ["run", str(task), "--plugin", str(plugin), "--model", "slow:x", "-o", str(tmp_path / "o")]
    code, said = run_in_process([*args, "--epochs", "2", "--epoch-reducer", "pass@2", "--temperature", "0.7"])
    assert code == 0, said
    task_warnings = _results(tmp_path / "o")["tasks"]["capitals"].get("warnings", [])
    warned = [w for w in task_warnings if "--epoch-reducer pass@2" in w]
    assert len(warned) == 1 and "f1 is not right-or-wrong per answer and was averaged" in warned[0], warned
    assert "exact_match" not in warned[0] and "--epoch-reducer pass@2 applies to 0/1 metrics only" in said


# ------------------------------------------------------------------ 021, 023, 027: the Python API's single values
def test_evaluate_takes_one_path_one_selection_and_number_variables(tmp_path):
    from proctor.api import evaluate
    from tests.support.fakes import FakeModel

    data = tmp_path / "data"
    task = _task(tmp_path / "t", path="${PROCTOR_DATA}/${N}.jsonl", data_folder=data)
    (data / "qa.jsonl").rename(data / "2.jsonl")
    result = evaluate(
        str(task), FakeModel(), select="capitals", variables={"PROCTOR_DATA": data, "N": 2}, output_dir=tmp_path / "o"
    )
    assert list(result.results["tasks"]) == ["capitals"] and result.results["tasks"]["capitals"]["n_samples"] == 4
    with pytest.raises(ProctorError, match=r"variables\['N'\] is list"):
        evaluate(str(task), FakeModel(), variables={"PROCTOR_DATA": str(data), "N": [2]}, output_dir=tmp_path / "x")


# ------------------------------------------------------------------ 224: one bootstrap resample
def test_one_bootstrap_resample_is_refused_before_anything_runs(tmp_path):
    task = _task(tmp_path / "t")
    code, said = run_in_process(["run", str(task), "--bootstrap-iters", "1", "-o", str(tmp_path / "o")])
    assert code == 2 and "--bootstrap-iters" in said and "at least 2 resamples" in said, said
    assert not (tmp_path / "o").exists()


def test_evaluate_refuses_options_a_built_model_cannot_take_and_a_chunk_of_none(tmp_path):
    from proctor.api import evaluate
    from tests.support.fakes import FakeModel

    task = _task(tmp_path / "t")
    with pytest.raises(ProctorError, match=r"model_options \(dtype\) apply to a model named by a string"):
        evaluate(str(task), FakeModel(), model_options={"dtype": "float16"}, output_dir=tmp_path / "a")
    with pytest.raises(ProctorError, match="chunk_size takes a positive count"):
        evaluate(str(task), FakeModel(), chunk_size=0, output_dir=tmp_path / "b")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


# ------------------------------------------------------------------ 164: a dialect that claims a file and gives nothing
EMPTY_DIALECT = """\
from proctor.core.dialect import BaseOptions, Dialect


class QuizDialect(Dialect[BaseOptions]):
    name = "quiz"
    order = 1
    description = "a .quiz file"
    Options = BaseOptions

    def files_in_folder(self, folder):
        return sorted(folder.rglob("*.quiz"))

    def claims_path(self, path):
        return path.suffix == ".quiz"

    def load(self, path, document, explicit, options, notes):
        return []


def register(registry):
    registry.add_dialect(QuizDialect())
"""


def test_a_file_a_dialect_claims_and_gives_no_task_from_is_named_with_the_dialect(tmp_path):
    plugin = write(tmp_path / "quiz.py", EMPTY_DIALECT)
    write(tmp_path / "colours.quiz", "What colour is the sky?,blue,green\n")
    done = run_proctor("validate", str(tmp_path / "colours.quiz"), "--plugin", str(plugin), cwd=tmp_path)
    code, said = done.returncode, done.stdout + done.stderr  # a fresh process: the plug-in stays out of this one
    assert code == 2 and "the 'quiz' dialect claims this file and gave no task from it" in said, said
    assert "colours.quiz" in said
