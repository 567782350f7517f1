"""GLM-130B task YAMLs: parsing, data roots, mul/gen/lm end to end with per-file and group
statistics, GLM's metrics, the metric registry, custom task classes and left truncation."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from proctor import TaskDefinitionError
from proctor.api import evaluate, load_tasks
from proctor.core.model_requests import GenerateResult
from proctor.engine.prepare import prepare_task
from proctor.models.base import Model
from tests.conftest import EXAMPLES, REPO, shared_path

TRUST = {"trust_task_code": True}  # these tests run task classes their YAML names


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


@pytest.mark.fast
def test_example_yamls_parse():
    folder = shared_path("examples", "glm130b")
    tasks = {t.name: t for t in load_tasks([folder])}
    assert set(tasks) == {
        "mytask_mul/validation",
        "glue_cola/validation",
        "openbook_qa/test",
        "openbook_qa/validation",
        "C3",
        "LAMBADA",
        "WikiText-2/test",
        "MMLU",  # module: task classes: one task per YAML, groups inside
    }
    assert {t.dialect for t in tasks.values()} == {"glm"}
    assert tasks["openbook_qa/test"].spec.task_options["micro_batch_size"] == 18  # snake_case key
    assert tasks["glue_cola/validation"].spec.task_options["micro_batch_size"] == 30  # kebab-case key
    assert tasks["C3"].spec.data[0].path == "${DATA_PATH}/CLUE/c3/**/*.json*"  # GLM's default file pattern
    lambada = tasks["LAMBADA"].spec
    assert lambada.handler.name == "glm.module" and lambada.handler.options.module == "tasks.lambada.task.LAMBADA"
    assert (
        lambada.task_class is None and lambada.prompt is None
    )  # a handler's task: no class path, no placeholder templates
    glm = lambada.handler.options.config
    assert (glm["num_beams"], glm["max_gen_length"], glm["no_repeat_ngram_size"], glm["use_task_mask"]) == (
        16,
        5,
        3,
        True,
    )
    assert glm["file_pattern"] == {"test": "**/test.jsonl", "validation": "**/validation.jsonl"}
    wiki = tasks["WikiText-2/test"].spec
    assert wiki.kind == "perplexity" and (wiki.perplexity.window, wiki.perplexity.stride) == (2047, 256)
    assert wiki.data[0].format == "text" and wiki.metrics[0].name == "PPL"
    assert [m.name for m in tasks["C3"].spec.metrics] == ["Accuracy"]
    assert tasks["MMLU"].spec.handler.options.roots[0] == "${DATA_PATH}/MMLU"


@pytest.mark.fast
def test_missing_module_fails_at_prepare_with_file_and_field(tmp_path):
    write_jsonl(tmp_path / "d" / "p1" / "test.jsonl", [{"inputs_pretokenized": "x", "targets_pretokenized": ["y"]}])
    path = write(
        tmp_path / "t.yaml",
        """
        name: t
        type: gen
        module: tasks.nowhere.Task
        path: d
    """,
    )
    (task,) = load_tasks([path], options=TRUST)
    with pytest.raises(TaskDefinitionError) as info:
        prepare_task(task, {})
    assert info.value.field == "module" and str(path) in str(info.value) and "tasks/nowhere.py" in str(info.value)


@pytest.fixture
def mul_data(tmp_path) -> Path:
    root = tmp_path / "DATA"
    rows = [
        {"inputs_pretokenized": f"Is {i} even?", "choices_pretokenized": ["no", "yes"], "label": int(i % 2 == 0)}
        for i in range(5)
    ]
    write_jsonl(root / "evens" / "prompt_1" / "validation.jsonl", rows[:3])
    write_jsonl(root / "evens" / "prompt_2" / "validation.jsonl", rows[3:])
    write_jsonl(root / "evens" / "prompt_2" / "test.jsonl", rows)
    return root


def test_synthetic_mul_example_runs_unmodified(tiny_model, tmp_path):
    folder = shared_path("examples", "glm130b", "SYNTHETIC_data_examples")
    result = evaluate([folder / "mytask_mul.yaml"], tiny_model, output_dir=tmp_path / "run")
    task = result.tasks["mytask_mul/validation"]
    assert task["dialect"] == "glm" and task["n_samples"] == 2
    assert task["metrics"]["Accuracy"]["value"] in (0.0, 50.0, 100.0)
    assert list(task["breakdown"]["_source"]) == ["prompt_1/validation.jsonl"]
    stats = task["breakdown_stats"]["_source"]["Accuracy"]
    assert stats["max"] == stats["median"] == stats["average"] == task["metrics"]["Accuracy"]["value"]
    expected = [100.0 * (r["prediction"] == r["target"]) for r in records(result.run_dir)]
    assert task["metrics"]["Accuracy"]["value"] == pytest.approx(sum(expected) / len(expected))


def test_mul_groups_files_and_data_path(tiny_model, tmp_path, mul_data, monkeypatch):
    yaml_path = write(
        tmp_path / "tasks" / "evens.yaml",
        """
        name: evens
        type: mul
        path: evens
        file-pattern:
          validation: "**/validation.jsonl"
          test: "**/test.jsonl"
        metrics: [Accuracy, Accuracy_per_token]
        micro_batch_size: 2
    """,
    )
    result = evaluate([yaml_path], tiny_model, output_dir=tmp_path / "run", data_path=mul_data)
    validation = result.tasks["evens/validation"]
    assert result.tasks["evens/test"]["n_samples"] == 5 and validation["n_samples"] == 5
    parts = validation["breakdown"]["_source"]
    assert list(parts) == ["prompt_1/validation.jsonl", "prompt_2/validation.jsonl"]
    assert [p["n_samples"] for p in parts.values()] == [3, 2]
    values = [p["metrics"]["Accuracy"]["value"] for p in parts.values()]
    stats = validation["breakdown_stats"]["_source"]["Accuracy"]
    assert stats["max"] == max(values) and stats["median"] == statistics.median(values)
    assert stats["average"] == pytest.approx((3 * values[0] + 2 * values[1]) / 5)
    assert stats["average"] == pytest.approx(validation["metrics"]["Accuracy"]["value"])
    ids = [r["id"] for r in records(result.run_dir) if r["task"] == "evens/validation"]
    assert len(set(ids)) == 5  # files of the same name in different prompt folders stay apart
    # without --data-path (and no DATA_PATH in the environment) the path is relative to the YAML
    monkeypatch.delenv("DATA_PATH", raising=False)
    with pytest.raises(TaskDefinitionError, match="DATA_PATH"):
        evaluate([yaml_path], tiny_model, output_dir=tmp_path / "run2")


def test_cli_data_path_and_group_report(tiny_model_dir, tmp_path, mul_data):
    yaml_path = write(
        tmp_path / "evens.yaml",
        """
        name: evens
        type: mul
        path: evens
        file-pattern: {validation: "**/validation.jsonl"}
    """,
    )
    command = [
        sys.executable,
        "-m",
        "proctor.cli",
        "run",
        str(yaml_path),
        "--data-path",
        str(mul_data),
        "--model",
        str(tiny_model_dir),
        "--output",
        str(tmp_path / "run"),
        "--quiet",
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "src")}
    )
    assert done.returncode == 0, done.stderr
    assert "prompt_2/validation.jsonl (2)" in done.stdout and "Accuracy: max = " in done.stdout


def test_gen_example_data_runs_with_glm_em_f1(tiny_model, tmp_path):
    data = shared_path("examples", "glm130b", "SYNTHETIC_data_examples")
    yaml_path = write(
        tmp_path / "mytask_gen.yaml",
        """
        name: mytask_gen
        type: gen
        path: mytask_gen
        file-pattern:
          validation: "**/validation.jsonl"
        max_gen_length: 6
    """,
    )
    result = evaluate([yaml_path], tiny_model, output_dir=tmp_path / "run", data_path=data)
    task = result.tasks["mytask_gen/validation"]
    assert set(task["metrics"]) == {"EM", "F1"} and task["breakdown_stats"]["_source"]["EM"]["n_parts"] == 1
    (record,) = records(result.run_dir)
    assert record["target"] == ["Paris", "Paris, France"]
    from proctor.dialects.glm.registered_metrics import glm_exact_match, glm_f1

    assert record["metrics"]["EM"] == 100 * max(glm_exact_match(record["generation"], t) for t in record["target"])
    assert record["metrics"]["F1"] == pytest.approx(
        100 * max(glm_f1(record["generation"], t) for t in record["target"])
    )


@pytest.mark.fast
def test_glm_em_f1_rules():
    from proctor.dialects.glm.registered_metrics import glm_exact_match, glm_f1
    from proctor.scoring.metrics import get_metric
    from proctor.scoring.outcomes import GenerationOutcome

    assert glm_exact_match("The Paris!", "paris") == 1.0 and glm_f1("", "") == 0.0
    assert glm_f1("paris france", "paris") == pytest.approx(2 * 0.5 * 1 / 1.5)
    em, f1 = get_metric("EM", "generate"), get_metric("F1", "generate")
    outcome = GenerationOutcome("Paris, France", "Paris, France", True, ("Lyon", "paris france"))
    assert em.compute(outcome) == 100.0 and f1.compute(outcome) == 100.0
    assert em.compute(GenerationOutcome("x", "x", True, ())) == 0.0  # no targets: 0, still counted


def test_lm_task_over_a_text_file(tiny_model_dir, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    from proctor.models.hf.model import HFModel

    # PTB / WikiText layout: tokens spaced, lines starting with a space, blank lines: GLM counts
    # len(raw_text.strip().split(" ")), which differs from str.split() here
    text = (
        " = Title = \n \n"
        + " The quick brown fox jumps over the lazy dog . \n" * 12
        + " It was the end of the story . \n"
    )
    assert len(text.strip().split(" ")) != len(text.split())
    (tmp_path / "corpus" / "wiki").mkdir(parents=True)
    (tmp_path / "corpus" / "wiki" / "wiki.test.tokens").write_text(text, encoding="utf-8")
    yaml_path = write(
        tmp_path / "lm.yaml",
        """
        name: tiny-wiki
        type: lm
        path: corpus
        file-pattern:
          test: "**/wiki.test.tokens"
        max_seq_length: 41
        generation-length: 16
    """,
    )
    model = HFModel(tiny_model_dir, batch_size=4, name="tiny-llama")
    result = evaluate([yaml_path], model, output_dir=tmp_path / "run")
    task = result.tasks["tiny-wiki/test"]
    (record,) = records(result.run_dir)
    glm_words = len(text.strip().split(" "))  # GLM's num_original_tokens, written out
    assert record["n_space_words"] == glm_words and record["n_words"] == len(text.split())
    assert task["metrics"]["PPL"]["value"] == pytest.approx(math.exp(min(20, -record["logprob"] / glm_words)))
    assert task["breakdown_stats"]["_source"]["PPL"]["max"] == pytest.approx(task["metrics"]["PPL"]["value"])
    # GLM's windows: 40 tokens each; the first scores all of them, later ones their last 16 tokens
    tokens = [model.prefix_token_id] + model.encode(text)
    reference = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
    total, start, end, n = 0.0, 0, min(40, len(tokens) - 1), len(tokens) - 1
    while start < n:
        window = tokens[max(0, end - 40) : end + 1]
        with torch.no_grad():
            logits = reference(torch.tensor([window[:-1]])).logits[0].float()
        lp = torch.log_softmax(logits, -1).gather(1, torch.tensor(window[1:])[:, None])[:, 0]
        total += float(lp[-(end - start) :].sum())
        start, end = end, min(end + 16, n)
    assert record["n_tokens"] == n and record["logprob"] == pytest.approx(total, abs=1e-3)


@pytest.mark.fast
def test_unknown_metric_is_an_error_and_plugins_extend_the_registry(tmp_path, mul_data):
    yaml_path = write(
        tmp_path / "t.yaml",
        """
        name: evens
        type: mul
        path: evens
        file-pattern: "**/test.jsonl"
        metrics: [Accuracy, MyMetric]
    """,
    )
    (task,) = load_tasks([yaml_path])
    with pytest.raises(TaskDefinitionError) as info:
        prepare_task(task, {"DATA_PATH": str(mul_data)})
    assert info.value.field == "metrics" and info.value.line == 5 and "unknown metric 'MyMetric'" in str(info.value)
    plugin = write(
        tmp_path / "my_metrics.py",
        """
        from proctor.scoring.metrics import register_metric

        @register_metric("MyMetric", ["multiple_choice"])
        def my_metric(outcome):
            return float(len(outcome.logprobs))
    """,
    )
    from proctor.scoring.metrics import METRICS, load_metric_file

    try:
        load_metric_file(str(plugin))
        prepared = prepare_task(task, {"DATA_PATH": str(mul_data)})
        assert [m.name for m, _ in prepared.metrics] == ["Accuracy", "MyMetric"]
    finally:
        METRICS.pop("MyMetric", None)


def test_lambada_style_example_with_custom_class(tiny_model, tmp_path):
    yaml_path = EXAMPLES / "glm130b" / "lambada_style" / "lambada_style.yaml"
    result = evaluate([yaml_path], tiny_model, output_dir=tmp_path / "run", dialect_options=TRUST)
    task = result.tasks["lambada_style/validation"]
    assert task["requests"]["type"] == "custom" and task["n_samples"] == 5
    assert list(task["breakdown"]["_source"]) == ["prompt_1/validation.jsonl", "prompt_2/validation.jsonl"]
    for record in records(result.run_dir):
        assert len(record["generation"].split()) <= 1  # the custom rule keeps one word
        assert record["metrics"]["Accuracy"] == 100.0 * (record["generation"] == record["target"][0])


@pytest.mark.fast
def test_custom_multiple_choice_class(tiny_model, tmp_path, mul_data):
    write(
        tmp_path / "tasks" / "glm" / "custom" / "rules.py",
        """
        from proctor.tasks.custom import GenerationTask, MultipleChoiceTask

        CALLS = []

        class AlwaysYes(MultipleChoiceTask):
            def predict_single_batch(self, batch):
                CALLS.append(len(batch))
                scores = self.model.cond_log_prob([b["inputs"] for b in batch], [b["choices"] for b in batch])
                assert len(scores) == len(batch)
                return [b["choices"].index("yes") for b in batch]

        class WrongBase(GenerationTask):
            pass
    """,
    )
    yaml_path = write(
        tmp_path / "tasks" / "glm" / "evens.yaml",
        """
        name: evens
        type: mul
        module: tasks.glm.custom.rules.AlwaysYes
        path: evens
        file-pattern: "**/test.jsonl"
        micro-batch-size: 2
    """,
    )
    result = evaluate([yaml_path], tiny_model, output_dir=tmp_path / "run", data_path=mul_data, dialect_options=TRUST)
    labels = [int(i % 2 == 0) for i in range(5)]
    assert result.tasks["evens"]["metrics"]["Accuracy"]["value"] == pytest.approx(100 * sum(labels) / 5)
    assert [r["prediction"] for r in records(result.run_dir)] == [1] * 5
    wrong = write(
        tmp_path / "tasks" / "glm" / "wrong.yaml",
        """
        name: wrong
        type: mul
        module: tasks.glm.custom.rules.WrongBase
        path: evens
    """,
    )
    (task,) = load_tasks([wrong], options=TRUST)
    with pytest.raises(TaskDefinitionError, match="must subclass proctor.tasks.custom.MultipleChoiceTask"):
        prepare_task(task, {"DATA_PATH": str(mul_data)})


@pytest.mark.fast
def test_left_truncation_to_max_seq_length(tiny_model):
    from proctor.core.model_requests import LoglikelihoodRequest
    from proctor.models.hf.packing import ScoringItem as _ScoringItem

    context = "word " * 60 + "The answer is"
    full, cut = tiny_model.loglikelihood(
        [LoglikelihoodRequest(context, " yes"), LoglikelihoodRequest(context, " yes", max_length=12)]
    )
    context_ids, continuation_ids = tiny_model.encode_pair(context, " yes")
    tail = tuple((context_ids + continuation_ids)[-13:])
    ((expected, _),) = tiny_model._score([_ScoringItem(tail, len(continuation_ids))])
    assert cut.logprob == pytest.approx(sum(expected), abs=1e-5) and cut.logprob != pytest.approx(
        full.logprob, abs=1e-6
    )


BAD_YAMLS = [
    ("name: t\ntype: mul\n", "path", "missing required field 'path'"),
    ("name: t\ntype: other\npath: x\n", "type", "'other' tasks"),
    ("name: t\ntype: mul\npath: x\nmax_seq_length: long\n", "max_seq_length", "must be int"),
    ("name: t\ntype: gen\npath: x\nnum-beams: 2\nnum_beams: 3\n", "num_beams", "given twice"),
    ("name: t\ntype: mul\npath: x\nunidirectional: true\n", "unidirectional", "requires 'use_task_mask'"),
    ("name: t\ntype: gen\npath: x\nsampling_strategy: Nucleus\n", "sampling_strategy", "unknown sampling_strategy"),
]


@pytest.mark.fast
@pytest.mark.parametrize("text,field,words", BAD_YAMLS, ids=[b[1] for b in BAD_YAMLS])
def test_bad_glm_yaml_names_file_and_field(tmp_path, text, field, words):
    path = tmp_path / "t.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TaskDefinitionError) as info:
        load_tasks([path])
    assert info.value.field == field and words in info.value.detail and str(path) in str(info.value)


def test_a_failing_yaml_does_not_abort_the_folder(tiny_model, tiny_model_dir, tmp_path, mul_data):
    folder = tmp_path / "tasks"
    write(
        folder / "a_good.yaml",
        """
        name: evens
        type: mul
        path: evens
        file-pattern: {validation: "**/validation.jsonl"}
    """,
    )
    bad_module = write(
        folder / "b_module.yaml",
        """
        name: broken
        type: mul
        module: tasks.nowhere.Task
        path: evens
    """,
    )
    bad_type = write(
        folder / "c_type.yaml",
        """
        name: other
        type: mystery
        path: evens
    """,
    )
    result = evaluate([folder], tiny_model, output_dir=tmp_path / "run", data_path=mul_data, dialect_options=TRUST)
    assert list(result.tasks) == ["evens/validation"] and result.tasks["evens/validation"]["n_samples"] == 5
    skipped = {Path(s["file"]).name: s["error"] for s in result.results["skipped"]}
    assert set(skipped) == {"b_module.yaml", "c_type.yaml"}
    assert "tasks/nowhere.py" in skipped["b_module.yaml"] and "unknown task type 'mystery'" in skipped["c_type.yaml"]
    saved = json.loads((result.run_dir / "results.json").read_text())
    assert len(saved["skipped"]) == 2
    # validate reports every file's problem, then fails
    command = [sys.executable, "-m", "proctor.cli", "validate", str(folder), "--data-path", str(mul_data)]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "src")}
    )
    assert done.returncode == 2
    assert "ok evens/validation" in done.stdout
    assert str(bad_module) in done.stderr and str(bad_type) in done.stderr and "mystery" in done.stderr
    assert "--trust-task-code" in done.stderr  # without the flag the module is refused, never imported
    # a file named directly still stops the run with its error
    with pytest.raises(TaskDefinitionError, match="mystery"):
        evaluate([bad_type], tiny_model, output_dir=tmp_path / "run2", data_path=mul_data)


def test_numbers_written_as_text_are_read_as_glm_reads_them(tiny_model_dir, tmp_path):
    """GLM's YAMLWizard (dataclass-wizard 0.22) converts "41" to 41 for a count, "yes" / 1 to true for a flag and
    a number to text for a name; such an upstream file runs with the same numbers as one written with plain
    values. A fractional count (which dataclass-wizard would round) is refused, naming the key."""
    from tests.support.cli_runs import proctor, proctor_error

    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "wiki.test.tokens").write_text(" The quick brown fox jumps over the lazy dog . \n" * 12)
    plain = "name: wiki\ntype: lm\npath: corpus\nfile-pattern:\n  test: '**/wiki.test.tokens'\n"

    def logprob(extra: str, run: str) -> float:
        (tmp_path / f"{run}.yaml").write_text(plain.replace("name: wiki", f"name: {run}") + extra)
        proctor("run", f"{run}.yaml", "--model", str(tiny_model_dir), "-o", run, cwd=tmp_path)
        (record,) = [json.loads(line) for line in (tmp_path / run / "samples.jsonl").read_text().splitlines()]
        return record["logprob"]  # the PPL itself is capped at exp(20) on this random model

    windows = logprob("max_seq_length: 41\ngeneration-length: 16\nunidirectional: false\n", "plain")
    as_text = logprob("max_seq_length: '41'\ngeneration-length: 16.0\nunidirectional: 'no'\n", "text")
    # the same settings read two ways: the same windows, every bit (two processes once differed in the 10th digit:
    # MKL's first parallel cos, set up racily; models.torch_runtime settles it before a model runs)
    assert as_text == windows
    assert logprob("", "default") != pytest.approx(windows, rel=1e-6)  # the windows took effect (6.7e-5 here)
    (tmp_path / "frac.yaml").write_text(plain + "max_seq_length: '41.5'\n")
    message = proctor_error("run", "frac.yaml", "--model", str(tiny_model_dir), "-o", "frac", cwd=tmp_path)
    assert "frac.yaml" in message and "max_seq_length" in message


def test_raw_text_with_windows_line_ends_scores_as_glm_reads_it(tmp_path):
    """GLM's LanguageModelTaskDataset reads a raw text file with open() (universal newlines): a file saved with
    CRLF line ends is the same text, and its perplexity is GLM's (red team 13, 136: the carriage returns were
    scored as characters of the text, and counted among its words)."""
    from proctor.engine.prepare import prepare_task

    text = "The quick brown fox .\nIt jumps over the dog .\n"
    found = {}
    for name, raw in (("lf", text.encode()), ("crlf", text.replace("\n", "\r\n").encode())):
        (tmp_path / name / "corpus").mkdir(parents=True)
        (tmp_path / name / "corpus" / "wiki.test.tokens").write_bytes(raw)
        task_file = tmp_path / name / "t.yaml"
        task_file.write_text(f"name: {name}\ntype: lm\npath: corpus\nfile-pattern:\n  test: '**/wiki.test.tokens'\n")
        (task,) = load_tasks([task_file])
        found[name] = [s.text for s in prepare_task(task, {"data_path": str(tmp_path / name)}).samples]
    assert found["crlf"] == found["lf"] == [text]


class _Echo(Model):
    """Answers each prompt with its last word (GLM's gen items here: 'Name it: alpha' -> 'alpha')."""

    name = "echo"

    @property
    def fingerprint(self) -> dict:
        return {"backend": "echo", "model": "echo"}

    def loglikelihood(self, requests, progress=None):
        raise NotImplementedError

    def rolling_loglikelihood(self, requests, progress=None):
        raise NotImplementedError

    def generate(self, requests, progress=None):
        return [GenerateResult(str(r.prompt).split()[-1], "stop", 3, 1) for r in requests]


def test_a_gen_item_without_targets_counts_as_glm_counts_it(tmp_path):
    """GLM's EM and F1 score an item whose targets_pretokenized is [] as 0 and count it (``0 if no targets``):
    EM = 100 * 1/3 over three items, one right. proctor refused the file (red team 13, 132); it now scores it
    as GLM does, and the audit says the row can never be right."""
    items = [("alpha", ["alpha"]), ("beta", []), ("gamma", ["delta"])]
    folder = tmp_path / "data" / "names"
    folder.mkdir(parents=True)
    lines = [json.dumps({"inputs_pretokenized": f"Name it: {w}", "targets_pretokenized": t}) for w, t in items]
    (folder / "a.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "t.yaml").write_text("name: names\ntype: gen\npath: names\nfile-pattern: '*.jsonl'\n")
    run = evaluate([tmp_path / "t.yaml"], _Echo(), output_dir=tmp_path / "run", data_path=tmp_path / "data")
    entry = run.tasks["names"]
    assert entry["metrics"]["EM"]["value"] == pytest.approx(100 / 3) and entry["n_samples"] == 3
    (found,) = [w for w in entry["warnings"] if "references.empty" in w]
    assert "a.jsonl, row 2" in found and "no reference answer" in found
