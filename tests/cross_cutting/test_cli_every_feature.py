"""Every dialect, every backend that runs here, and image tasks, the way users run them: the ``proctor``
command in a fresh interpreter (nothing imported by this test reaches it), on valid input, with the
numbers checked against values computed here without proctor (transformers called directly, or the
task's rule written out). An import only the tests perform can no longer hide a broken feature.

Earlier subprocess runs (test_glm.py, test_probsem.py, test_aisteer_engine.py, test_glm.py's
validate) check exit codes and files, not numbers; these check the numbers."""

from __future__ import annotations

import json
import math

import pytest

from tests.support.cli_runs import QUESTIONS, QUIZ, jsonl, proctor, results, samples, write
from tests.support.hf_reference import (  # noqa: F401  (reference: transformers on the tiny model)
    direct_loglikelihood,
    reference,
    reference_logprob,
)
from tests.support.vision_fixtures import image_set, tiny_vlm_dir  # noqa: F401  (fixtures)


def choice_scores(reference, context: str, continuations: list[str], move_whitespace: bool = True) -> list[float]:
    return [direct_loglikelihood(*reference, context, c, move_whitespace)[0] for c in continuations]


def expected_accuracy(
    reference, items: list[tuple[str, list[str], int]], move_whitespace: bool = True
) -> tuple[float, list]:
    """(share of items whose gold continuation scores highest, per-item scores)."""
    scored = [choice_scores(reference, context, options, move_whitespace) for context, options, _ in items]
    hits = [max(range(len(s)), key=s.__getitem__) == gold for s, (_, _, gold) in zip(scored, items)]
    return sum(hits) / len(hits), scored


def assert_scores(records: list[dict], scored: list[list[float]]) -> None:
    assert len(records) == len(scored)
    for record, want in zip(records, scored):
        assert record["logprobs"] == pytest.approx(want, abs=1e-4)


MC_ITEMS = [(f"Q: {q['question']}\nA:", [" " + c for c in q["choices"]], q["label"]) for q in QUESTIONS]


# --- native YAML on the Hugging Face backend --------------------------------------------------------
def test_native_yaml_on_hf(tiny_model_dir, reference, tmp_path):
    jsonl(tmp_path / "quiz" / "data.jsonl", QUESTIONS)
    write(tmp_path / "quiz" / "task.yaml", QUIZ)
    proctor("run", "quiz", "--model", str(tiny_model_dir), "-o", "run", "-q", cwd=tmp_path)
    want, scored = expected_accuracy(reference, MC_ITEMS)
    assert results(tmp_path / "run")["tasks"]["quiz"]["metrics"]["acc"]["value"] == pytest.approx(want)
    assert_scores(samples(tmp_path / "run"), scored)


def test_python_dash_m_proctor_runs_the_same_command(tiny_model_dir, reference, tmp_path):
    """``python -m proctor`` is the ``proctor`` command too (as ``python -m lm_eval`` is lm-eval's)."""
    jsonl(tmp_path / "quiz" / "data.jsonl", QUESTIONS)
    write(tmp_path / "quiz" / "task.yaml", QUIZ)
    proctor("run", "quiz", "--model", str(tiny_model_dir), "-o", "run", "-q", cwd=tmp_path, module="proctor")
    want, scored = expected_accuracy(reference, MC_ITEMS)
    assert results(tmp_path / "run")["tasks"]["quiz"]["metrics"]["acc"]["value"] == pytest.approx(want)
    assert_scores(samples(tmp_path / "run"), scored)


# --- lm-evaluation-harness task YAML ----------------------------------------------------------------
def test_lmeval_yaml_on_hf(tiny_model_dir, reference, tmp_path):
    pytest.importorskip("lm_eval")
    jsonl(tmp_path / "copy" / "test.jsonl", QUESTIONS)
    write(
        tmp_path / "tasks" / "quiz.yaml",
        """\
        task: quiz_lm
        dataset_path: example/quiz
        output_type: multiple_choice
        test_split: test
        doc_to_text: "Q: {{question}}\\nA:"
        doc_to_choice: choices
        doc_to_target: label
        metric_list:
          - metric: acc
            aggregation: mean
            higher_is_better: true
        metadata:
          version: 1
        """,
    )
    proctor(
        "run",
        "tasks/quiz.yaml",
        "--model",
        str(tiny_model_dir),
        "-o",
        "run",
        "-q",
        "--lmeval-data",
        f"example/quiz={tmp_path / 'copy'}",
        cwd=tmp_path,
        env={"HF_DATASETS_OFFLINE": "1"},
    )
    want, _ = expected_accuracy(reference, MC_ITEMS)
    assert results(tmp_path / "run")["tasks"]["quiz_lm"]["metrics"]["acc,none"]["value"] == pytest.approx(want)


# --- probsem ----------------------------------------------------------------------------------------
def test_probsem_on_hf(tiny_model_dir, reference, tmp_path):
    prompt = "Decide whether each statement is true.\n"
    suite = {
        "pretext": "Statement:",
        "posttext": "Verdict:",
        "queries": [" true", " false"],
        "context": [
            {"text": "Water is wet.", "expected": 0},
            {"text": "Fish can fly.", "expected": 1},
            {"text": "Ice is hot.", "expected": 1},
            {"text": "Birds have wings.", "expected": 0},
        ],
    }
    write(tmp_path / "inputs" / "claims.txt", prompt)
    write(tmp_path / "inputs" / "claims_facts.json", json.dumps(suite))
    proctor("run", "inputs", "--model", str(tiny_model_dir), "-o", "run", "-q", cwd=tmp_path)
    items = [
        (f"{prompt}\n{suite['pretext']}\n{c['text']}\n{suite['posttext']}\n", suite["queries"], c["expected"])
        for c in suite["context"]
    ]
    want, scored = expected_accuracy(reference, items, move_whitespace=False)  # probsem scores the query as written
    assert results(tmp_path / "run")["tasks"]["claims_facts"]["metrics"]["distribution_acc"]["value"] == pytest.approx(
        want
    )
    assert_scores(samples(tmp_path / "run"), scored)


# --- GLM-130B ---------------------------------------------------------------------------------------
def test_glm_on_hf(tiny_model_dir, reference, tmp_path):
    rows = [
        {
            "inputs_pretokenized": f"Question: {q['question']} Answer:",
            "choices_pretokenized": q["choices"],
            "label": q["label"],
        }
        for q in QUESTIONS
    ]
    jsonl(tmp_path / "DATA" / "quiz" / "prompt_1" / "test.jsonl", rows)
    write(
        tmp_path / "tasks" / "quiz.yaml",
        """\
        name: quiz
        type: mul
        path: quiz
        file-pattern: {test: "**/test.jsonl"}
        """,
    )
    proctor(
        "run", "tasks/quiz.yaml", "--data-path", "DATA", "--model", str(tiny_model_dir), "-o", "run", "-q", cwd=tmp_path
    )
    items = [(r["inputs_pretokenized"], [" " + c for c in r["choices_pretokenized"]], r["label"]) for r in rows]
    want, scored = expected_accuracy(reference, items)
    assert results(tmp_path / "run")["tasks"]["quiz/test"]["metrics"]["Accuracy"]["value"] == pytest.approx(100 * want)
    assert_scores(samples(tmp_path / "run"), scored)


# --- SEA-HELM ---------------------------------------------------------------------------------------
SEAHELM = """\
echo:
  name: echo
  competency: nlg
  metric_file: src/metrics/logprob_metric.py
  metric_class: LogProbMetric
  metric: average_cumulative_logprobs
  use_logprobs: true
  languages:
    en:
      filepath: seahelm_tasks/nlg/echo/data.jsonl
      max_tokens: 6
      prompt_template:
        task_template: "Repeat: {text}"
        answer_tag: "\\n"
        answer_template: "{answer_tag} {label}"
"""


def test_seahelm_on_hf(tiny_model_dir, reference, tmp_path):
    """SEA-HELM's log-prob strategy: generate up to the answer tag (this model's first token is a newline,
    the tag here), then score the tag separator + the gold label after the chat prompt and that text."""
    import statistics

    labels = ["the cat sat", "a red apple", "rain again today"]
    rows = [
        {"id": i, "label": label, "prompts": [{"text": label}], "metadata": {"language": "en"}}
        for i, label in enumerate(labels)
    ]
    tasks = tmp_path / "repo" / "seahelm_tasks"
    write(tasks / "nlg" / "echo" / "config.yaml", SEAHELM)
    jsonl(tasks / "nlg" / "echo" / "data.jsonl", rows)
    proctor("run", str(tasks / "nlg" / "echo"), "--model", str(tiny_model_dir), "-o", "run", "-q", cwd=tmp_path)
    metrics = results(tmp_path / "run")["tasks"]["echo/en"]["metrics"]
    model, tokenizer = reference
    logprobs = []
    for label in labels:
        chat = tokenizer.apply_chat_template(
            [{"role": "user", "content": f"Repeat: {label}"}], tokenize=False, add_generation_prompt=True
        )
        logprobs.append(direct_loglikelihood(model, tokenizer, chat + "\n", " " + label, move_whitespace=False)[0])
    assert metrics["null_count"]["value"] == 0
    assert metrics["average_cumulative_logprobs"]["value"] == pytest.approx(statistics.mean(logprobs), abs=1e-3)
    assert metrics["clt_se_cumulative_logprobs"]["value"] == pytest.approx(
        statistics.stdev(logprobs) / math.sqrt(3), abs=1e-3
    )


# --- AISteer360-style use case ----------------------------------------------------------------------
USE_CASE = """\
from proctor.dialects.aisteer import UseCase, batch_retry_generate


class Continue(UseCase):
    def validate_evaluation_data(self, data):
        pass

    def generate(self, model_or_pipeline, tokenizer, gen_kwargs=None, runtime_overrides=None, **kwargs):
        prompts = [{"prompt": row["prompt"]} for row in self.evaluation_data]
        texts = batch_retry_generate(prompts, model_or_pipeline, tokenizer, gen_kwargs={"max_new_tokens": 5}, use_chat=False)
        return [{"id": row["id"], "text": text} for row, text in zip(self.evaluation_data, texts)]

    def evaluate(self, generations):
        return {"characters": float(sum(len(g["text"]) for g in generations)), "n": float(len(generations))}


evaluation_data = "rows.jsonl"
evaluation_metrics = []
"""  # noqa: E501 (a file's text, line for line)


def test_use_case_on_hf(tiny_model_dir, reference, tmp_path):
    import torch

    rows = [
        {"id": str(i), "prompt": p} for i, p in enumerate(["Once upon a time", "The capital of France is", "1, 2, 3,"])
    ]
    jsonl(tmp_path / "uc" / "rows.jsonl", rows)
    write(tmp_path / "uc" / "continue_case.py", USE_CASE)
    proctor("run", "uc/continue_case.py", "--model", str(tiny_model_dir), "-o", "run", "-q", cwd=tmp_path)
    task = results(tmp_path / "run")["tasks"]["continue_case:Continue"]
    model, tokenizer = reference
    lengths = 0
    for row in rows:
        ids = tokenizer(row["prompt"], return_tensors="pt").input_ids
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=5, do_sample=False, pad_token_id=tokenizer.eos_token_id)
        lengths += len(tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True))
    assert task["evaluations"] == {"characters": lengths, "n": 3.0}


# --- images on the vision backend -------------------------------------------------------------------
def test_image_task_on_hf_vision(tiny_vlm_dir, image_set, tmp_path):
    pytest.importorskip("PIL")
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    write(
        tmp_path / "colours.yaml",
        """\
        name: colours
        kind: multiple_choice
        data: ${PROCTOR_DATA}/paths.jsonl
        prompt: "{{ question }}"
        choices: "{{ choices }}"
        target: "{{ answer }}"
        images: "{{ path }}"
        metrics: [acc]
        """,
    )
    proctor(
        "run",
        "colours.yaml",
        "--model",
        f"hf-vision:{tiny_vlm_dir}",
        "--data-dir",
        str(image_set),
        "-o",
        "run",
        "-q",
        cwd=tmp_path,
    )
    direct = (
        AutoProcessor.from_pretrained(tiny_vlm_dir),
        AutoModelForImageTextToText.from_pretrained(tiny_vlm_dir).eval(),
    )
    rows = [json.loads(line) for line in (image_set / "paths.jsonl").read_text().splitlines()]
    hits, records = [], samples(tmp_path / "run")
    with torch.no_grad():
        for row, record in zip(rows, records):
            image = (image_set / row["path"]).read_bytes()
            scores = [
                sum(reference_logprob(direct, "<image>\n" + row["question"], image, " " + c)) for c in row["choices"]
            ]
            assert record["logprobs"] == pytest.approx(scores, abs=1e-4)
            hits.append(max(range(len(scores)), key=scores.__getitem__) == row["answer"])
    assert len(records) == 4 and results(tmp_path / "run")["tasks"]["colours"]["metrics"]["acc"][
        "value"
    ] == pytest.approx(sum(hits) / 4)


# --- the OpenAI-compatible backend against a real loopback server ----------------------------------
def test_native_yaml_on_openai_server(tiny_model_dir, reference, tmp_path):
    pytest.importorskip("httpx")
    from tests.support.openai_fakes import TrueLogprobServer

    jsonl(tmp_path / "quiz" / "data.jsonl", QUESTIONS)
    write(tmp_path / "quiz" / "task.yaml", QUIZ)
    with TrueLogprobServer(tiny_model_dir) as server:
        proctor(
            "run",
            "quiz",
            "--model",
            "openai:tiny",
            "--base-url",
            server.url,
            "-o",
            "run",
            "-q",
            cwd=tmp_path,
            env={"OPENAI_API_KEY": "sk-test"},
        )
    task = results(tmp_path / "run")["tasks"]["quiz"]
    want, scored = expected_accuracy(reference, MC_ITEMS)
    assert task["mc_format"] == "loglikelihood" and task["metrics"]["acc"]["value"] == pytest.approx(want)
    assert_scores(samples(tmp_path / "run"), scored)
    assert all(math.isfinite(x) for r in samples(tmp_path / "run") for x in r["logprobs"])


# --- a steering pipeline as the model (steer:FILE.py:NAME) -------------------------------------------
def test_native_yaml_on_a_steering_pipeline(tiny_model_dir, reference, tmp_path):
    """The steer: backend from the command line: a control of strength zero gives the base model's
    numbers (computed here with transformers); a real one changes them, and results.json says which."""
    jsonl(tmp_path / "quiz" / "data.jsonl", QUESTIONS)
    write(tmp_path / "quiz" / "task.yaml", QUIZ)
    write(
        tmp_path / "pipes.py",
        """\
        from proctor.dialects.aisteer import ActivationAddition
        ZERO = [ActivationAddition([0], 0.0, ["good"], ["bad"])]
        STRONG = [ActivationAddition([0], 8.0, ["good"], ["bad"])]
        """,
    )
    for name in ("ZERO", "STRONG"):
        proctor(
            "run",
            "quiz",
            "--model",
            f"steer:pipes.py:{name}",
            "--model-arg",
            f"base={tiny_model_dir}",
            "-o",
            name,
            "-q",
            cwd=tmp_path,
        )
    want, scored = expected_accuracy(reference, MC_ITEMS)
    zero = results(tmp_path / "ZERO")
    assert zero["model"]["steering"]["controls"][0]["control"] == "ActivationAddition"
    assert zero["tasks"]["quiz"]["metrics"]["acc"]["value"] == pytest.approx(want)
    assert_scores(samples(tmp_path / "ZERO"), scored)
    strong = [r["logprobs"] for r in samples(tmp_path / "STRONG")]
    assert (
        all(len(s) == 3 for s in strong)
        and max(abs(a - b) for s, w in zip(strong, scored) for a, b in zip(s, w)) > 1e-3
    )
