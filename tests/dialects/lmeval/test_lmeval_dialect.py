"""The lm-eval dialect: finding tasks (catalogue names, files, folders), include / !function / groups
in a user's folder, the offline data mapping, errors, and `proctor ls` on the catalogue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")

from proctor.api import evaluate, load_tasks  # noqa: E402
from proctor.core.errors import ProctorError, TaskDefinitionError  # noqa: E402
from proctor.dialects.lmeval import data_map  # noqa: E402
from tests.support.lmeval_quiz import (  # noqa: E402
    GEN_TASK,
    GROUP,
    MANY_SHOTS,
    ROWS,
    SHOTS,
    TASK_A,
    TASK_B,
    TEMPLATE,
    UTILS,
    first_shot,
)


@pytest.fixture()
def quiz(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    folder = tmp_path / "quiz"
    folder.mkdir()
    (folder / "_template_yaml").write_text(TEMPLATE)
    (folder / "quiz_plain.yaml").write_text(TASK_A)
    (folder / "quiz_shouted.yaml").write_text(TASK_B)
    (folder / "utils.py").write_text(UTILS)
    (folder / "_quiz.yaml").write_text(GROUP)
    data = tmp_path / "data"
    data.mkdir()
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SHOTS))
    return folder, {"example/quiz:small": str(data)}  # a folder of <split>.jsonl files


def test_detection_leaves_native_and_glm_files_alone():
    from proctor.dialects.lmeval.claims import looks_like  # the dialect's declaration reads the files

    assert looks_like({"task": "x", "dataset_path": "y"})
    assert looks_like({"group": "g", "task": ["a", "b"]})
    assert not looks_like({"name": "x", "kind": "generate", "task": "t"})
    assert not looks_like({"tasks": [{"name": "x"}]})
    assert not looks_like({"name": "x", "type": "mul", "path": "p", "task": "t"})


def test_python_hooks_beside_a_users_task_need_consent(quiz):
    folder, mapping = quiz
    with pytest.raises(TaskDefinitionError) as err:
        load_tasks([folder / "quiz_shouted.yaml"], options={"lmeval_data": mapping})
    assert "!function utils.shout" in str(err.value) and "--trust-task-code" in str(err.value)


def test_a_folder_runs_through_its_group_with_lm_evals_prompts(quiz, tiny_model, tmp_path):
    folder, mapping = quiz
    tasks = load_tasks([folder], options={"lmeval_data": mapping, "trust_task_code": True})
    assert sorted(t.name for t in tasks) == ["quiz_plain", "quiz_shouted"]  # once each, through the group
    assert all(t.spec.group == ["quiz"] and t.spec.version == "3" for t in tasks)
    result = evaluate(tasks, tiny_model, output_dir=tmp_path / "run")
    records = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    plain = [r for r in records if r["task"] == "quiz_plain"]
    shouted = [r for r in records if r["task"] == "quiz_shouted"]
    # the prompts lm-eval's rules give, written out: doc_to_text, target_delimiter + choice
    assert plain[0]["arguments"] == [
        ["Q: what is two plus two\nA:", " three"],
        ["Q: what is two plus two\nA:", " four"],
    ]
    # description, one first_n shot from the train split, fewshot_delimiter, custom target_delimiter, process_docs
    shot = "Q: WHAT IS ONE PLUS ONE\nA: => two"
    context = f"Answer the quiz.\n\n{shot}\n---\nQ: WHAT IS TWO PLUS TWO\nA:"
    assert shouted[0]["arguments"] == [[context, " => three"], [context, " => four"]]
    # acc from the log-likelihoods, recomputed here
    for task in ("quiz_plain", "quiz_shouted"):
        mine = [r for r in records if r["task"] == task]
        expected = []
        for record, row in zip(mine, ROWS):
            scores = [resp[0][0] for resp in record["resps"]]
            expected.append(float(scores.index(max(scores)) == row["label"]))
        assert result.results["tasks"][task]["metrics"]["acc,none"]["value"] == pytest.approx(
            sum(expected) / len(expected)
        )
    group = result.results["groups"]["quiz"]["metrics"]["acc,none"]
    plain_acc = result.results["tasks"]["quiz_plain"]["metrics"]["acc,none"]["value"]
    shouted_acc = result.results["tasks"]["quiz_shouted"]["metrics"]["acc,none"]["value"]
    assert group["value"] == pytest.approx((plain_acc + shouted_acc) / 2)  # weight_by_size: false -> plain mean
    # lm-eval's layout of the run: an lm-eval task's metric,filter keys as lm-eval writes them
    exported = json.loads(next((tmp_path / "run" / "lm_eval").rglob("results_*.json")).read_text())
    block = exported["results"]["quiz_plain"]
    assert block["acc,none"] == plain_acc and "acc_stderr,none" in block and not any(k.count(",") > 1 for k in block)
    assert exported["results"]["quiz"]["acc,none"] == pytest.approx((plain_acc + shouted_acc) / 2)
    assert exported["higher_is_better"]["quiz_plain"] == {"acc": True}
    assert (
        exported["n-shot"]["quiz_plain"] == 0 and exported["n-shot"]["quiz_shouted"] == 1
    )  # lm-eval's own num_fewshot


def test_a_group_whose_list_names_no_metric_its_tasks_report_says_so(quiz, tiny_model, tmp_path):
    """lm-eval logs 'no values found' and prints no group number; proctor's run warns (console and results.json)."""
    folder, mapping = quiz
    (folder / "_quiz.yaml").write_text(GROUP.replace("metric: acc", "metric: accuracy"))
    tasks = load_tasks([folder], options={"lmeval_data": mapping, "trust_task_code": True})
    result = evaluate(tasks, tiny_model, output_dir=tmp_path / "run")
    assert result.results["groups"]["quiz"]["metrics"] == {}
    assert (
        "group 'quiz': none of its tasks (quiz_plain, quiz_shouted) reports the metric(s) its aggregate_metric_list "
        "names (accuracy) under the filters it names, so the group has no number"
    ) in result.results["warnings"]


def test_missing_local_copy_names_id_config_and_split(quiz, tiny_model, tmp_path, monkeypatch):
    folder, _ = quiz
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    tasks = load_tasks([folder / "quiz_plain.yaml"])
    with pytest.raises(ProctorError) as err:
        evaluate(tasks, tiny_model, output_dir=tmp_path / "run")
    message = str(err.value)
    assert "example/quiz" in message and "small" in message and "test" in message and "--lmeval-data" in message
    # a mapping that lacks the evaluated split is an error naming that split
    other = tmp_path / "only_train"
    other.mkdir()
    (other / "train.jsonl").write_text(json.dumps(SHOTS[0]) + "\n")
    tasks = load_tasks([folder / "quiz_plain.yaml"], options={"lmeval_data": {"example/quiz:small": str(other)}})
    with pytest.raises(ProctorError) as err:
        evaluate(tasks, tiny_model, output_dir=tmp_path / "run2")
    assert "split 'test'" in str(err.value) and "example/quiz" in str(err.value)


@pytest.mark.fast
def test_mapping_file_and_keys(tmp_path):
    (tmp_path / "copies").mkdir()
    (tmp_path / "copies" / "rows.csv").write_text("question,answer\nq1,a1\nq2,a2\n")
    mapping_file = tmp_path / "map.yaml"
    mapping_file.write_text("example/quiz:small:test: copies/rows.csv\n")
    mapping = data_map.read_mapping_file(mapping_file)
    assert mapping == {"example/quiz:small:test": str((tmp_path / "copies" / "rows.csv").resolve())}
    splits = data_map.lookup(mapping, "example/quiz", "small", {"test"})
    assert [dict(r) for r in splits["test"]] == [{"question": "q1", "answer": "a1"}, {"question": "q2", "answer": "a2"}]
    assert len(splits["train"]) == 0  # read only for few-shot examples: empty, checked when shots are drawn
    assert data_map.lookup(mapping, "example/quiz", "other", {"test"}) is None
    assert data_map.parse_key("a/b::validation") == ("a/b", None, "validation")
    with pytest.raises(ValueError):
        data_map.parse_key("a:b:c:d")


@pytest.mark.fast
def test_unsupported_keys_name_file_key_and_task(tmp_path):
    (tmp_path / "pic.yaml").write_text(
        "task: pictures\ndataset_path: x/y\noutput_type: generate_until\ndoc_to_text: q\n"
        "doc_to_target: a\ndoc_to_image: img\n"
    )
    with pytest.raises(TaskDefinitionError) as err:
        load_tasks([tmp_path / "pic.yaml"])
    assert "pic.yaml" in str(err.value) and "doc_to_image" in str(err.value) and "pictures" in str(err.value)


def test_catalogue_names_tags_and_suggestions():
    tasks = load_tasks(["lm_eval:ai2_arc"])  # a tag: its tasks
    assert sorted(t.name for t in tasks) == ["arc_challenge", "arc_easy"]
    assert tasks[0].spec.kind == "multiple_choice" and tasks[0].dialect == "lm-eval"
    with pytest.raises(TaskDefinitionError) as err:
        load_tasks(["lm_eval:arc_esay"])
    assert "arc_easy" in str(err.value)


def test_ls_lists_the_catalogue_by_name_with_output_types():
    from typer.testing import CliRunner

    from proctor.cli import app

    out = CliRunner().invoke(app, ["ls", "lm_eval:arc_*", "lm_eval:gsm8k", "lm_eval:mmlu"], terminal_width=200)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert any("arc_easy" in line and "multiple_choice" in line for line in lines)
    assert any("gsm8k " in line and "generate_until" in line for line in lines)
    assert any(" mmlu " in line and "group" in line for line in lines)


def test_run_time_overrides_not_wired_for_lm_eval_tasks_are_refused(quiz, tiny_model, tmp_path):
    """lm-eval's task objects build their own generation settings: an override proctor would not pass on
    is an error naming the flag and the task, not silently ignored; few-shot turns need the chat template."""
    from proctor.core.run_overrides import RunOverrides

    folder, mapping = quiz
    tasks = load_tasks([folder / "quiz_plain.yaml"], options={"lmeval_data": mapping})
    with pytest.raises(ProctorError, match=r"--epochs.*lm-evaluation-harness tasks.*quiz_plain"):
        evaluate(tasks, tiny_model, output_dir=tmp_path / "run", overrides=RunOverrides(epochs=2))
    with pytest.raises(ProctorError, match=r"--fewshot-as-multiturn needs the chat template.*quiz_plain"):
        evaluate(tasks, tiny_model, output_dir=tmp_path / "run", overrides=RunOverrides(fewshot_as_multiturn=True))


def test_num_fewshot_and_system_prompt_reach_lm_evals_prompts(quiz, tiny_model, tmp_path):
    """--num-fewshot as lm-eval's num_fewshot (a task that sets 0 keeps 0), --system-prompt as its
    system_instruction: in plain text, the system prompt, the fewshot delimiter, then the shots."""
    from proctor.core.run_overrides import RunOverrides

    folder, mapping = quiz
    tasks = load_tasks(
        [folder / "quiz_shouted.yaml", folder / "quiz_plain.yaml"],
        options={"lmeval_data": mapping, "trust_task_code": True},
    )
    evaluate(
        tasks, tiny_model, output_dir=tmp_path / "run", overrides=RunOverrides(num_fewshot=1, system_prompt="Be exact.")
    )
    records = {
        r["task"]: r
        for r in map(json.loads, (tmp_path / "run" / "samples.jsonl").read_text().splitlines())
        if r["doc_id"] == 0
    }
    # written out from lm-eval's rules: system_instruction + fewshot_delimiter + description, then one first_n shot
    shouted = "Be exact.\n---\nAnswer the quiz.\n\nQ: WHAT IS ONE PLUS ONE\nA: => two\n---\nQ: WHAT IS TWO PLUS TWO\nA:"
    assert records["quiz_shouted"]["arguments"][0][0] == shouted
    # num_fewshot unset: 1; no description, so nothing joins the system instruction to the first shot
    # (lm-eval's maybe_delimit)
    plain = "Be exact.Q: what is one plus one\nA: two\n\nQ: what is two plus two\nA:"
    assert records["quiz_plain"]["arguments"][0][0] == plain
    from proctor.dialects.lmeval.run_options import fewshot_count

    assert (fewshot_count(0, 2), fewshot_count(None, 2), fewshot_count(5, 2), fewshot_count(None, None)) == (
        0,
        2,
        2,
        0,
    )  # 0 in a YAML stays 0


def test_a_mapped_save_to_disk_folder_is_left_untouched(tiny_model, tmp_path):
    """HellaSwag's process_docs maps every row (``dataset.map``); on a Dataset read from the user's
    save_to_disk folder that would write cache-*.arrow files into it. The folder must stay as it was."""
    import datasets

    from tests.conftest import shared_path

    rows = [
        dict(r)
        for r in datasets.load_from_disk(
            str(shared_path("data", "hellaswag", "hf_arrow_validation")), keep_in_memory=True
        ).select(range(3))
    ]
    folder = tmp_path / "hellaswag_copy"
    datasets.DatasetDict({"validation": datasets.Dataset.from_list(rows)}).save_to_disk(str(folder))

    def listing():
        return sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*"))

    before = listing()
    result = evaluate(
        ["lm_eval:hellaswag"],
        tiny_model,
        output_dir=tmp_path / "run",
        limit=2,
        dialect_options={"lmeval_data": {"Rowan/hellaswag": str(folder)}},
    )
    assert result.results["tasks"]["hellaswag"]["n_samples"] == 2
    assert listing() == before


def test_metric_keys_resolve_without_filling_the_metric_registry():
    """lm-eval's ``metric,filter`` keys are resolved on lookup (no registry entry is added while loading);
    a direction a task's metric_list states itself rides in its spec and wins over lm-eval's default."""
    from proctor.dialects.lmeval.catalogue import Leaf
    from proctor.dialects.lmeval.specs import to_task
    from proctor.engine.prepare import _metrics
    from proctor.scoring.metrics import METRICS, get_metric

    config = {
        "task": "quiz",
        "output_type": "multiple_choice",
        "dataset_path": "local/quiz",
        "metric_list": [{"metric": "acc"}, {"metric": "acc_norm", "higher_is_better": False}],
    }
    task = to_task(Leaf("quiz", config, None), {}, "test")
    assert "acc,none" not in METRICS and "acc_norm,none" not in METRICS
    assert (
        get_metric("acc,none", "multiple_choice").higher_is_better is True
    )  # lm-eval's registry: acc is higher-better
    directions = {m.name: m.higher_is_better for m, _ in _metrics(task)}
    assert directions == {"acc,none": True, "acc_norm,none": False}
    assert "acc,none" not in METRICS


def test_lm_eval_layout_reports_a_size_weighted_group_by_its_micro_mean():
    """A group lm-eval averages by size (weight_by_size, e.g. MMLU) is exported with the sample-weighted
    mean and the pooled stderr, as lm-eval prints it; an unweighted one with the plain mean."""
    from proctor.runs.lm_eval_layout import results_file

    tasks = {
        name: {
            "kind": "multiple_choice",
            "n_samples": n,
            "version": "1",
            "metrics": {"acc,none": {"value": v, "stderr": s}},
        }
        for name, n, v, s in (("a", 10, 0.5, 0.1), ("b", 30, 0.9, 0.05))
    }
    metric = {"value": 0.7, "stderr": 0.0559, "micro": (10 * 0.5 + 30 * 0.9) / 40, "micro_stderr": 0.042}
    results = {
        "tasks": tasks,
        "groups": {
            "g": {"tasks": ["a", "b"], "n_samples": 40, "metrics": {"acc,none": metric}},
            "h": {"tasks": ["a", "b"], "n_samples": 40, "metrics": {"acc,none": metric}},
        },
    }
    specs = {
        "a": {"kind": "multiple_choice", "group": ["g", "h"], "size_weighted_groups": ["g"]},
        "b": {"kind": "multiple_choice", "group": ["g", "h"], "size_weighted_groups": ["g"]},
    }
    layout = results_file(results, specs)
    assert (
        layout["results"]["g"]["acc,none"] == pytest.approx(0.8) and layout["results"]["g"]["acc_stderr,none"] == 0.042
    )
    assert layout["results"]["h"]["acc,none"] == 0.7 and layout["results"]["h"]["acc_stderr,none"] == 0.0559


@pytest.fixture()
def gen_quiz(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "quiz_gen.yaml").write_text(GEN_TASK)
    data = tmp_path / "gen_data"
    data.mkdir()
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in MANY_SHOTS))
    return tmp_path / "gen" / "quiz_gen.yaml", {"example/quiz:small": str(data)}


def test_gen_kwargs_and_seed_take_lm_evals_meaning(gen_quiz, tiny_model, tmp_path):
    """--gen-kwargs merges into a generate task's generation_kwargs (lm-eval's set_config(update=True)); --seed S
    is the few-shot draw's seed (lm-eval's --seed S sets its fewshot seed, default 1234)."""
    from proctor.core.run_overrides import RunOverrides, parse_gen_kwargs

    path, mapping = gen_quiz
    tasks = load_tasks([path], options={"lmeval_data": mapping})
    assert first_shot(7) != first_shot(1234)  # else the test could not tell the seeds apart
    for name, overrides, shot, kwargs in (
        ("plain", RunOverrides(), first_shot(1234), {"until": ["\n"], "max_gen_toks": 5}),
        (
            "given",
            RunOverrides(gen_kwargs=parse_gen_kwargs("max_gen_toks=3,temperature=0"), seed=7),
            first_shot(7),
            {"until": ["\n"], "max_gen_toks": 3, "temperature": 0, "do_sample": False},
        ),
    ):
        evaluate(tasks, tiny_model, output_dir=tmp_path / name, overrides=overrides)
        records = [json.loads(line) for line in (tmp_path / name / "samples.jsonl").read_text().splitlines()]
        first = next(r for r in records if r["doc_id"] == 0)
        context, given = first["arguments"][0]
        assert context.startswith(f"Q: {shot}\nA:"), context
        assert given == kwargs


def test_gen_kwargs_on_lm_eval_tasks_that_generate_nothing_is_refused(quiz, tiny_model, tmp_path):
    from proctor.core.run_overrides import RunOverrides

    folder, mapping = quiz
    tasks = load_tasks([folder / "quiz_plain.yaml"], options={"lmeval_data": mapping})
    with pytest.raises(
        ProctorError, match=r"generation settings given \(max_tokens\) have no meaning.*quiz_plain.*generates text"
    ):
        evaluate(tasks, tiny_model, output_dir=tmp_path / "run", overrides=RunOverrides(gen_kwargs={"max_tokens": 3}))
    with pytest.raises(ProctorError, match=r"--gen-kwargs num_beams is not applied.*quiz_plain"):
        evaluate(tasks, tiny_model, output_dir=tmp_path / "run", overrides=RunOverrides(gen_kwargs={"num_beams": 2}))
