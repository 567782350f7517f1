"""`proctor export` against a results file that lm-evaluation-harness 0.4.13 itself wrote for the same
tasks (same data, prompts, metrics, group, limit) on the tiny random Llama: every key lm-eval writes is
there with the same value type, per-sample files follow its layout, and lm-eval's own readers work."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

lm_eval = pytest.importorskip("lm_eval", reason="needs lm-evaluation-harness (pip install lm-eval==0.4.13)")

DATA = EXAMPLES / "quickstart" / "data"
LIMIT = 4

LM_EVAL_TASKS = {
    "qs_mc.yaml": f"""
        task: qs_mc
        dataset_path: json
        dataset_kwargs: {{data_files: {{test: {DATA / 'science_mc.jsonl'}}}}}
        test_split: test
        output_type: multiple_choice
        doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
        doc_to_choice: "{{{{choices}}}}"
        doc_to_target: "{{{{['A','B','C','D'].index(answer)}}}}"
        metric_list: [{{metric: acc, aggregation: mean, higher_is_better: true}}, {{metric: acc_norm, aggregation: mean, higher_is_better: true}}]
        metadata: {{version: 1.0}}
        """,  # noqa: E501 (a task file's text, line for line)
    "qs_mc2.yaml": f"""
        task: qs_mc2
        dataset_path: json
        dataset_kwargs: {{data_files: {{test: {DATA / 'science_mc.jsonl'}}}}}
        test_split: test
        output_type: multiple_choice
        doc_to_text: "Q: {{{{question}}}}\\nA:"
        doc_to_choice: "{{{{choices}}}}"
        doc_to_target: "{{{{['A','B','C','D'].index(answer)}}}}"
        metric_list: [{{metric: acc, aggregation: mean, higher_is_better: true}}, {{metric: acc_norm, aggregation: mean, higher_is_better: true}}]
        metadata: {{version: 1.0}}
        """,  # noqa: E501 (a task file's text, line for line)
    "qs_gen.yaml": f"""
        task: qs_gen
        dataset_path: json
        dataset_kwargs: {{data_files: {{test: {DATA / 'short_answers.jsonl'}}}}}
        test_split: test
        output_type: generate_until
        doc_to_text: "Q: {{{{question}}}}\\nA:"
        doc_to_target: "{{{{answers[0]}}}}"
        generation_kwargs: {{until: ["\\n"], max_gen_toks: 8, do_sample: false}}
        metric_list: [{{metric: exact_match, aggregation: mean, higher_is_better: true}}]
        metadata: {{version: 2.0}}
        """,
    "qs_group.yaml": """
        group: qs_group
        task: [qs_mc, qs_mc2]
        aggregate_metric_list: [{metric: acc}, {metric: acc_norm}]
        metadata: {version: 1.0}
        """,
}

PROCTOR_TASKS = """
tasks:
  - name: qs_mc
    kind: multiple_choice
    version: 1
    group: qs_group
    data: {path: "${QUICKSTART_DATA}/science_mc.jsonl", id: id}
    prompt: "Question: {{question}}\\nAnswer:"
    choices: "{{ choices }}"
    target: "{{ 'ABCD'.index(answer) }}"
    metrics: [acc, acc_norm]
  - name: qs_mc2
    kind: multiple_choice
    version: 1
    group: qs_group
    data: {path: "${QUICKSTART_DATA}/science_mc.jsonl", id: id}
    prompt: "Q: {{question}}\\nA:"
    choices: "{{ choices }}"
    target: "{{ 'ABCD'.index(answer) }}"
    metrics: [acc, acc_norm]
  - name: qs_gen
    kind: generate
    version: 2
    data: {path: "${QUICKSTART_DATA}/short_answers.jsonl", id: id}
    prompt: "Q: {{question}}\\nA:"
    target: "{{ answers[0] }}"
    generation: {max_tokens: 8, stop: ["\\n"]}
    metrics: [exact_match]
"""


@pytest.fixture(scope="module")
def lm_eval_output(tiny_model_dir, tmp_path_factory) -> Path:
    """lm-eval's own results and samples files for the three tasks and the group."""
    import os

    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")  # local json data only
    folder = tmp_path_factory.mktemp("lm-eval")
    for name, text in LM_EVAL_TASKS.items():
        (folder / "tasks").mkdir(exist_ok=True)
        (folder / "tasks" / name).write_text(textwrap.dedent(text))
    tracker = EvaluationTracker(output_path=str(folder / "out"))
    results = lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_model_dir},dtype=float32",
        tasks=["qs_group", "qs_gen"],
        limit=LIMIT,
        task_manager=TaskManager(include_path=str(folder / "tasks")),
        batch_size=2,
        device="cpu",
        log_samples=True,
        evaluation_tracker=tracker,
    )
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for name in results["configs"]:
        tracker.save_results_samples(task_name=name, samples=samples[name])
    (out,) = (folder / "out").iterdir()
    return out


@pytest.fixture(scope="module")
def proctor_output(tiny_model_dir, tmp_path_factory) -> Path:
    from proctor import evaluate
    from proctor.models.hf.model import HFModel

    folder = tmp_path_factory.mktemp("proctor")
    (folder / "tasks.yaml").write_text(PROCTOR_TASKS)
    model = HFModel(tiny_model_dir, batch_size=2)
    run = evaluate(
        [folder / "tasks.yaml"], model, output_dir=folder / "run", limit=LIMIT, variables={"QUICKSTART_DATA": str(DATA)}
    )
    (out,) = (run.run_dir / "lm_eval").iterdir()
    return out


def type_differences(theirs, ours, path="") -> list[str]:
    """Every key lm-eval wrote that proctor lacks, and every value whose type differs (recursively).
    Proctor may add keys; lists are compared element by element."""
    problems = []
    if isinstance(theirs, dict):
        if not isinstance(ours, dict):
            return [f"{path}: dict vs {type(ours).__name__}"]
        for key, value in theirs.items():
            if key not in ours:
                problems.append(f"{path}/{key}: missing")
            else:
                problems += type_differences(value, ours[key], f"{path}/{key}")
    elif isinstance(theirs, list):
        if not isinstance(ours, list):
            return [f"{path}: list vs {type(ours).__name__}"]
        for i, (a, b) in enumerate(zip(theirs, ours)):
            problems += type_differences(a, b, f"{path}[{i}]")
    elif type(theirs) is not type(ours):
        problems.append(f"{path}: {type(theirs).__name__} {theirs!r:.40} vs {type(ours).__name__} {ours!r:.40}")
    return problems


def only(folder: Path, prefix: str) -> Path:
    (path,) = folder.glob(f"{prefix}*")
    return path


def test_results_file_has_every_key_and_type_lm_eval_writes(lm_eval_output, proctor_output):
    theirs = json.loads(only(lm_eval_output, "results_").read_text())
    ours = json.loads(only(proctor_output, "results_").read_text())
    assert type_differences(theirs, ours) == []
    # values, not only types: the same tasks, groups, counts and few-shot settings
    assert ours["group_subtasks"] == theirs["group_subtasks"] == {"qs_group": ["qs_mc", "qs_mc2"]}
    assert ours["n-samples"] == theirs["n-samples"]
    assert ours["n-shot"] == theirs["n-shot"] and ours["versions"] == theirs["versions"]
    assert ours["higher_is_better"] == theirs["higher_is_better"]
    for task in ("qs_mc", "qs_mc2", "qs_gen"):
        assert ours["results"][task]["sample_len"] == LIMIT
        for key in (
            "num_fewshot",
            "output_type",
            "doc_to_text",
            "metric_list",
            "target_delimiter",
            "fewshot_delimiter",
        ):
            assert ours["configs"][task][key] == theirs["configs"][task][key], (task, key)
    assert ours["configs"]["qs_gen"]["generation_kwargs"]["until"] == ["\n"]
    assert ours["configs"]["qs_gen"]["generation_kwargs"]["max_gen_toks"] == 8
    assert ours["config"]["model_num_parameters"] == theirs["config"]["model_num_parameters"]
    assert ours["config"]["batch_size"] == theirs["config"]["batch_size"] == 2 and ours["config"]["device"] == "cpu"
    for key in ("tokenizer_pad_token", "tokenizer_eos_token", "tokenizer_bos_token", "eot_token_id", "max_length"):
        assert ours[key] == theirs[key], key
    # the group's acc: lm-eval's weighted-by-size mean of its two tasks, and proctor's numbers for them
    for metric in ("acc", "acc_norm"):
        tasks = [ours["results"][t][f"{metric},none"] for t in ("qs_mc", "qs_mc2")]
        assert ours["groups"]["qs_group"][f"{metric},none"] == pytest.approx(sum(tasks) / 2)


def test_samples_files_follow_lm_eval_layout(lm_eval_output, proctor_output):
    for task in ("qs_mc", "qs_mc2", "qs_gen"):
        theirs = [json.loads(x) for x in only(lm_eval_output, f"samples_{task}_").read_text().splitlines()]
        ours = [json.loads(x) for x in only(proctor_output, f"samples_{task}_").read_text().splitlines()]
        assert len(ours) == len(theirs) == LIMIT
        for a, b in zip(theirs, ours):
            assert type_differences(a, b) == [], task
            assert b["doc"] == a["doc"] and b["target"] == a["target"] and b["arguments"] == a["arguments"]
            assert b["prompt_hash"] == a["prompt_hash"] and b["target_hash"] == a["target_hash"]


def test_lm_eval_readers_on_proctor_export(proctor_output):
    from lm_eval.utils import (
        get_file_datetime,
        get_file_task_name,
        get_latest_filename,
        get_results_filenames,
        get_sample_results_filenames,
        make_table,
    )

    files = [str(p) for p in sorted(proctor_output.iterdir())]
    results = get_results_filenames(files)
    assert len(results) == 1
    older = str(proctor_output / "results_2000-01-01T00-00-00.000000.json")
    assert get_latest_filename(results + [older]) == results[0]  # the run's date sorts as lm-eval expects
    samples = get_sample_results_filenames(files)
    assert sorted(get_file_task_name(Path(f).name) for f in samples) == ["qs_gen", "qs_mc", "qs_mc2"]
    assert {get_file_datetime(f) for f in samples} == {get_file_datetime(results[0]).replace(".json", "")}
    data = json.loads(Path(results[0]).read_text())
    table = make_table(data)
    assert "qs_mc" in table and "acc_norm" in table and "exact_match" in table
    groups = make_table(data, "groups")
    assert "qs_group" in groups
