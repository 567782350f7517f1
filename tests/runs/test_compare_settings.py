"""Comparable or told: each task's recorded settings, every difference named by `proctor compare`, runs of an
earlier version read with what is unknown said, and a run compared with itself refused."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from proctor import evaluate
from proctor.core.run_overrides import RunOverrides
from proctor.engine.task_settings import model_args
from proctor.runs.compare import compare_runs
from proctor.runs.report import render_report
from tests.support.cli_runs import QUESTIONS, QUIZ, jsonl, proctor, run_proctor, write
from tests.support.fakes import FakeModel, write_tasks

CHOICE_TASKS = ["mc_alpha", "mc_beta", "gen_gamma"]  # few-shot has no meaning for the perplexity task


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A: zero-shot, every row. Same: A again. B: two-shot, ten rows, a system prompt, another sampling seed."""
    tmp = tmp_path_factory.mktemp("settings")
    tasks = write_tasks(tmp / "tasks", n_mc=24, n_gen=6, star_gold=True)
    a = evaluate([tasks], FakeModel(), output_dir=tmp / "a", select=CHOICE_TASKS, export=False).run_dir
    same = evaluate([tasks], FakeModel(), output_dir=tmp / "same", select=CHOICE_TASKS, export=False).run_dir
    b = evaluate(
        [tasks],
        FakeModel(prefer_gold=2.0),
        output_dir=tmp / "b",
        select=CHOICE_TASKS,
        limit=10,
        overrides=RunOverrides(num_fewshot=2, gen_kwargs={"max_tokens": 5}),
        export=False,
    ).run_dir
    return tmp, a, same, b


def _settings(run, task):
    return json.loads((run / "results.json").read_text())["tasks"][task]["settings"]


def test_each_task_records_the_settings_that_change_its_numbers(runs):
    _, a, _, b = runs
    mc = _settings(b, "mc_alpha")
    assert (mc["fewshot"], mc["fewshot_source"], mc["fewshot_seed"]) == (2, "task data", 1234)
    assert (mc["limit"], mc["chat"], mc["chat_template"], mc["backend"], mc["mc_format"]) == (
        10,
        False,
        None,
        "fake",
        "loglikelihood",
    )
    assert mc["generation"] is None  # scored by log-likelihoods: no generation setting reaches its numbers
    gen = _settings(b, "gen_gamma")
    assert gen["generation"]["max_tokens"] == 5 and gen["generation"]["temperature"] == 0.0 and gen["epochs"] == 1
    zero = _settings(a, "mc_alpha")
    assert (zero["fewshot"], zero["fewshot_source"], zero["limit"]) == (0, None, None)
    # written right after mc_format, in the documented order
    keys = list(json.loads((b / "results.json").read_text())["tasks"]["mc_alpha"])
    assert keys.index("settings") == keys.index("mc_format") + 1


def test_compare_names_every_setting_that_differs_and_none_for_a_rerun(runs):
    _, a, same, b = runs
    rerun, other = compare_runs([a, same, b], n_boot=200)["comparisons"]
    assert rerun["settings_differ"] == [] and rerun["settings_unknown"] == []
    found = {(d["task"], d["setting"]): (d["a"], d["b"]) for d in other["settings_differ"]}
    for task in ("mc_alpha", "mc_beta"):
        assert found.pop((task, "fewshot")) == (0, 2)
        assert found.pop((task, "fewshot_source")) == (None, "task data")
        assert found.pop((task, "fewshot_seed")) == (None, 1234)
        assert found.pop((task, "limit")) == (None, 10)
    generation_a, generation_b = found.pop(("gen_gamma", "generation"))
    assert (generation_a["max_tokens"], generation_b["max_tokens"]) == (8, 5)
    assert found.pop(("gen_gamma", "fewshot")) == (0, 2) and found.pop(("gen_gamma", "limit")) == (None, 10)
    assert found.pop(("gen_gamma", "fewshot_source")) == (None, "task data")
    assert found.pop(("gen_gamma", "fewshot_seed")) == (None, 1234)
    assert found == {}  # nothing else: same backend, chat, formulation, epochs


def test_a_run_of_an_earlier_version_compares_on_what_it_says_and_names_the_rest(runs, tmp_path):
    _, a, _, b = runs
    old = tmp_path / "old"
    old.mkdir()
    results = json.loads((b / "results.json").read_text())
    for task in results["tasks"].values():
        del task["settings"]  # as proctor wrote it before settings were recorded
    (old / "results.json").write_text(json.dumps(results))
    (old / "samples.jsonl").write_bytes((b / "samples.jsonl").read_bytes())
    pair = compare_runs([a, old], n_boot=200)["comparisons"][0]
    found = {(d["task"], d["setting"]): (d["a"], d["b"]) for d in pair["settings_differ"]}
    # known from the top level: --limit and --num-fewshot; the backend and formulation agree
    assert found == {
        **{(t, "fewshot"): (0, 2) for t in CHOICE_TASKS},
        **{(t, "limit"): (None, 10) for t in CHOICE_TASKS},
    }
    unknown = {(u["task"], u["setting"]): u["unknown_in"] for u in pair["settings_unknown"]}
    assert unknown[("mc_alpha", "system_prompt")] == ["b"] and unknown[("gen_gamma", "generation")] == ["b"]
    assert ("mc_alpha", "generation") not in unknown  # log-likelihood scoring: known to use none
    assert "settings" not in json.loads((old / "results.json").read_text())["tasks"]["mc_alpha"]
    assert "mc_alpha" in render_report(old)  # the report still reads it


def test_compare_command_in_a_fresh_process_prints_the_numbers_and_each_difference(runs):
    tmp, a, _, b = runs
    out = tmp / "cmp.json"
    done = proctor("compare", str(a), str(b), "--resamples", "300", "-o", str(out), cwd=tmp)
    pair = json.loads(out.read_text())["comparisons"][0]
    acc = pair["tasks"]["mc_alpha"]["metrics"]["acc"]
    # the means over the ten shared samples, read straight from both samples.jsonl files
    per_run = []
    for run in (a, b):
        values = {}
        for line in (run / "samples.jsonl").read_text().splitlines():
            record = json.loads(line)
            if record["task"] == "mc_alpha":
                values[record["id"]] = record["metrics"]["acc"]
        per_run.append(values)
    shared = [i for i in per_run[0] if i in per_run[1]]
    mean_a, mean_b = np.mean([per_run[0][i] for i in shared]), np.mean([per_run[1][i] for i in shared])
    assert len(shared) == acc["n_shared"] == 10
    assert acc["a"] == pytest.approx(mean_a) and acc["b"] == pytest.approx(mean_b)
    assert f"{mean_a:.4f}" in done.stdout and f"{mean_b:.4f}" in done.stdout
    assert "Not comparable as they stand: 13 setting(s) differ" in done.stdout
    assert len(pair["settings_differ"]) == 13
    lines = done.stdout.splitlines()
    settings_at = lines.index("Settings that differ:")
    listed = [line.strip() for line in lines[settings_at + 1 : settings_at + 14]]
    assert "mc_alpha: fewshot: A 0, B 2" in listed and "mc_beta: limit: A none, B 10" in listed
    assert 'mc_beta: fewshot_source: A none, B "task data"' in listed
    assert "gen_gamma: generation: max_tokens: A 8, B 5" in listed  # the keys that differ, not two cut values


def _cli_error(monkeypatch, capsys, *args):
    import proctor.cli as cli

    with pytest.raises(SystemExit) as info:
        cli.main(["compare", *args])
    err = capsys.readouterr()
    return info.value.code, err.out + err.err


@pytest.mark.parametrize("second", ["{a}", "{a}/", "./a", "./a/../a", "link"])
def test_a_run_compared_with_itself_is_refused(runs, monkeypatch, capsys, second):
    tmp, a, _, _ = runs
    link = tmp / "link"
    if not link.exists():
        link.symlink_to(a, target_is_directory=True)
    monkeypatch.chdir(tmp)
    code, said = _cli_error(monkeypatch, capsys, str(a), second.format(a=a), "-o", str(tmp / "x.json"))
    assert code == 2 and "comparing a run with itself shows no difference" in said and "Traceback" not in said
    assert not (tmp / "x.json").exists()


def test_the_same_run_among_others_is_refused_too(runs, monkeypatch, capsys):
    tmp, a, same, b = runs
    code, said = _cli_error(monkeypatch, capsys, str(a), str(b), os.path.relpath(b))
    assert code == 2 and str(b) in said and "the same run folder" in said


def test_a_missing_folder_is_named_not_taken_for_the_same_run(runs, tmp_path):
    tmp, a, _, _ = runs
    done = run_proctor("compare", str(a), str(tmp_path / "nowhere"), cwd=tmp_path)
    assert done.returncode == 2 and "nowhere is not a run folder" in done.stdout + done.stderr


def test_chat_template_system_prompt_dtype_and_model_args_are_recorded_and_named(tmp_path, tiny_model_dir):
    import hashlib

    from transformers import AutoTokenizer

    write(tmp_path / "quiz" / "task.yaml", QUIZ)
    jsonl(tmp_path / "quiz" / "data.jsonl", QUESTIONS)
    plain = evaluate(
        [tmp_path / "quiz"], str(tiny_model_dir), output_dir=tmp_path / "plain", model_options={"dtype": "float32"}
    )
    chat = evaluate(
        [tmp_path / "quiz"],
        str(tiny_model_dir),
        output_dir=tmp_path / "chat",
        chat=True,
        overrides=RunOverrides(system_prompt="Answer with one word."),
        model_options={"dtype": "bfloat16"},
    )
    template = AutoTokenizer.from_pretrained(tiny_model_dir).chat_template
    digest = hashlib.sha256(template.encode("utf-8")).hexdigest()[:16]
    recorded = _settings(chat.run_dir, "quiz")
    assert (recorded["chat"], recorded["chat_template"], recorded["system_prompt"]) == (
        True,
        digest,
        "Answer with one word.",
    )
    # the dtype as resolved, once (model_args leave it out)
    assert (recorded["backend"], recorded["dtype"], recorded["model_args"]) == ("hf", "bfloat16", {})
    pair = compare_runs([plain.run_dir, chat.run_dir], n_boot=100)["comparisons"][0]
    assert {d["setting"]: (d["a"], d["b"]) for d in pair["settings_differ"]} == {
        "chat": (False, True),
        "chat_template": (None, digest),
        "system_prompt": (None, "Answer with one word."),
        "dtype": ("float32", "bfloat16"),  # once: model_args leave the dtype to its own setting
    }


def test_model_args_leave_credentials_out():
    given = {"api_key": "sk-1", "base_url": "http://me:pw@127.0.0.1:9/v1", "AUTH_TOKEN": "t", "password": "p"}
    given["seed"] = 3
    kept = model_args(given)
    assert kept["seed"] == 3 and set(kept) == {"base_url", "seed"} and "pw" not in kept["base_url"]


def test_a_samples_file_that_is_a_fifo_is_an_error_not_a_hang(runs, tmp_path):
    _, a, _, b = runs
    piped = tmp_path / "piped"
    piped.mkdir()
    (piped / "results.json").write_bytes((b / "results.json").read_bytes())
    os.mkfifo(piped / "samples.jsonl")  # reading it would wait for a writer forever
    done = run_proctor("compare", str(a), str(piped), cwd=tmp_path)
    said = done.stdout + done.stderr
    assert done.returncode == 2 and "samples.jsonl is not a regular file" in said and "Traceback" not in said


def test_a_task_file_edited_between_runs_is_named_by_its_content(runs, tmp_path, capsys):
    """The same settings, but the prompt template was edited between the runs: nothing else differs, so the
    task's content (the hash of its spec, data and prompts) is named, and the comparison is not taken as clean."""
    import proctor.cli as cli

    tmp, a, _, _ = runs
    edited = write_tasks(tmp_path / "tasks", n_mc=24, n_gen=6, star_gold=True, mc_prompt="Q: {{ question }}\\nA:")
    b = evaluate([edited], FakeModel(), output_dir=tmp_path / "b", select=CHOICE_TASKS, export=False).run_dir
    (pair,) = compare_runs([a, b], n_boot=200)["comparisons"]
    content = {d["task"]: (d["a"], d["b"]) for d in pair["settings_differ"] if d["setting"] == "task_content"}
    hashes = [json.loads((r / "results.json").read_text())["tasks"]["mc_alpha"]["hash"] for r in (a, b)]
    assert content == {"mc_alpha": (hashes[0][:12], hashes[1][:12])}  # the generated task's file is unchanged
    assert [d["setting"] for d in pair["settings_differ"]] == ["task_content"]
    try:
        cli.main(["compare", str(a), str(b), "-o", str(tmp_path / "c.json")])
    except SystemExit as exc:
        assert not exc.code
    out = capsys.readouterr().out
    assert "Not comparable as they stand" in out
    assert "mc_alpha: task_content" in out and "the task file or its data changed" in out


def test_a_limit_that_kept_every_row_is_no_difference_and_one_that_cut_rows_is(runs, tmp_path):
    """Red team 14, 308: --limit 100 on a task of 24 rows keeps them all (the same content, as many samples):
    compare does not call the runs incomparable over it; --limit 10 still is a difference where it cut rows."""
    tmp, a, _, _ = runs
    tasks = tmp / "tasks"
    wide = evaluate([tasks], FakeModel(), output_dir=tmp_path / "wide", select=CHOICE_TASKS, limit=100, export=False)
    (pair,) = compare_runs([a, wide.run_dir], n_boot=200)["comparisons"]
    assert pair["settings_differ"] == []
    narrow = evaluate([tasks], FakeModel(), output_dir=tmp_path / "narrow", select=CHOICE_TASKS, limit=10, export=False)
    (pair,) = compare_runs([a, narrow.run_dir], n_boot=200)["comparisons"]
    # gen_gamma has 6 rows: --limit 10 kept them all there too
    assert {(d["task"], d["setting"]) for d in pair["settings_differ"]} == {("mc_alpha", "limit"), ("mc_beta", "limit")}


@pytest.mark.parametrize("given, recorded, rows", [(6, 3, 3), (2, 2, 2), (None, 3, 3)])
def test_the_limit_recorded_is_the_one_in_force(tmp_path, given, recorded, rows):
    """Red team 14, 307: a task file's own `limit: 3` under `--limit 6` takes 3 rows; results.json said 6."""
    write(tmp_path / "quiz.yaml", QUIZ + "limit: 3\n")
    jsonl(tmp_path / "data.jsonl", QUESTIONS)
    run = evaluate([tmp_path / "quiz.yaml"], FakeModel(), output_dir=tmp_path / "out", limit=given, export=False)
    task = json.loads((run.run_dir / "results.json").read_text())["tasks"]["quiz"]
    assert (task["settings"]["limit"], task["n_samples"]) == (recorded, rows)


def test_a_system_prompt_or_chat_template_reaches_no_perplexity_task_and_is_recorded_so(tmp_path):
    """Red team 14, 267 and 268: a perplexity task's texts are scored as written, yet results.json recorded the
    chat template and the system prompt as its settings; a run of perplexity tasks only refuses the flag."""
    from proctor.core.errors import ProctorError

    tasks = write_tasks(tmp_path / "tasks", n_mc=6, n_gen=4)
    both = ["mc_alpha", "ppl_delta"]
    run = evaluate(
        [tasks],
        FakeModel(),
        output_dir=tmp_path / "both",
        select=both,
        overrides=RunOverrides(system_prompt="Be brief."),
        export=False,
    ).run_dir
    settings = {t: _settings(run, t) for t in both}
    assert settings["mc_alpha"]["system_prompt"] == "Be brief."
    assert settings["ppl_delta"]["system_prompt"] is None and settings["ppl_delta"]["chat"] is False
    chat = evaluate([tasks], FakeModel(), output_dir=tmp_path / "chat", select=["ppl_delta"], chat=True, export=False)
    assert _settings(chat.run_dir, "ppl_delta")["chat"] is False
    with pytest.raises(ProctorError, match=r"--system-prompt has no meaning for the selected tasks \(ppl_delta\)"):
        evaluate(
            [tasks],
            FakeModel(),
            output_dir=tmp_path / "ppl",
            select=["ppl_delta"],
            overrides=RunOverrides(system_prompt="Be brief."),
            export=False,
        )
