"""Malformed lm-evaluation-harness task files for tests/cross_cutting/test_malformed_inputs.py: each was an
internal error, a raw exception from lm-eval's internals, an error only after the model ran, or a silently
wrong number before the lm-eval dialect checked it. None names a model: the tripwire default model shows that
each error comes before any model loads."""

from __future__ import annotations

from tests.support.malformed_cases import Case, jsonl
from tests.support.malformed_cases_more import LM_ROWS, LM_RUN, LM_TEMPLATE, lm

LMEVAL: list[Case] = []


def add(id, args, expect, files=None, before_model=True, setup=None, code=None):
    LMEVAL.append(Case(id, list(args), list(expect), dict(files or {}), before_model, setup, code))


LM_GENERATE = LM_TEMPLATE.replace("multiple_choice", "generate_until").replace("doc_to_choice: options\n", "")
# the quiz read by lm-eval's own local builder (dataset_path: json), with a train split for few-shot examples
LM_LOCAL = """task: quiz
dataset_path: json
dataset_kwargs:
  data_files:
    train: quiz/train.jsonl
    test: quiz/test.jsonl
output_type: multiple_choice
test_split: test
fewshot_split: train
doc_to_text: "Q: {{question}}\\nA:"
doc_to_choice: options
doc_to_target: label
"""
LOCAL_RUN = ["run", "quiz/quiz.yaml", "-o", "out"]


def local(yaml_text: str, rows=None, train=None, **extra) -> dict:
    files = {
        "quiz/quiz.yaml": yaml_text,
        "quiz/test.jsonl": jsonl(rows or LM_ROWS),
        "quiz/train.jsonl": jsonl(train or LM_ROWS),
    }
    files.update(extra)
    return files


add(
    "lmeval-output-type-null",
    LM_RUN,
    ["quiz.yaml", "output_type", "null", "multiple_choice", "generate_until"],
    lm(LM_TEMPLATE.replace("output_type: multiple_choice", "output_type: null")),
)
add(
    "lmeval-output-type-misspelt-lists-types",
    LM_RUN,
    ["quiz.yaml", "output_type", "generate_untill", "loglikelihood_rolling", "generate_until"],
    lm(LM_GENERATE.replace("output_type: generate_until", "output_type: generate_untill")),
)
add(
    "lmeval-num-fewshot-larger-than-pool",
    LOCAL_RUN,
    ["quiz.yaml", "num_fewshot", "5", "2"],
    local(LM_LOCAL + "num_fewshot: 5\n"),
)
add(
    "lmeval-choice-not-text-later-doc",
    LOCAL_RUN,
    ["quiz.yaml", "row 2", "doc_to_choice", "3"],
    local(
        LM_LOCAL.replace("\n    train: quiz/train.jsonl\n    test: quiz/test.jsonl", " quiz/test.jsonl")
        .replace("test_split: test", "test_split: train")
        .replace("fewshot_split: train\n", ""),
        rows=[LM_ROWS[0], {**LM_ROWS[1], "options": ["blue", 3]}],
    ),
)
HUB_SHAPED = [{**r, "options": {"text": r["options"][:2], "label": ["A", "B"]}, "key": "A"} for r in LM_ROWS]
add(  # ARC's rows in the hub's shape: choices is {text: [...], label: [...]}, which lm-eval fails on with KeyError
    "lmeval-choices-a-mapping",
    LOCAL_RUN,
    ["quiz.yaml", "row 1", "doc_to_choice", "dict", "choices.text"],
    local(
        LM_LOCAL.replace("doc_to_target: label", 'doc_to_target: "{{ options.label.index(key) }}"'),
        rows=HUB_SHAPED,
        train=HUB_SHAPED,
    ),
)
add(
    "lmeval-choice-not-text-in-yaml",
    LM_RUN,
    ["quiz.yaml", "row 1", "doc_to_choice", "3"],
    lm(LM_TEMPLATE.replace("doc_to_choice: options", 'doc_to_choice: ["four", 3]')),
)
add(
    "lmeval-data-column-mixes-types",
    LM_RUN,
    ["test.jsonl", "row 2", "options"],
    lm(LM_TEMPLATE, rows=[LM_ROWS[0], {**LM_ROWS[1], "options": ["blue", 3]}]),
)
add(
    "lmeval-data-column-changes-type",
    LM_RUN,
    ["test.jsonl", "row 2", "label", "row 1"],
    lm(LM_TEMPLATE, rows=[LM_ROWS[0], {**LM_ROWS[1], "label": "zero"}]),
)
add(
    "lmeval-target-text-not-a-choice",
    LM_RUN,
    ["quiz.yaml", "row 2", "doc_to_target", "purple"],
    lm(LM_TEMPLATE, rows=[{**LM_ROWS[0], "label": "four"}, {**LM_ROWS[1], "label": "purple"}]),
)
add(
    "lmeval-target-none",
    LM_RUN,
    ["quiz.yaml", "row 2", "doc_to_target"],
    lm(LM_TEMPLATE, rows=[LM_ROWS[0], {**LM_ROWS[1], "label": None}]),
)
add(
    "lmeval-target-float",
    LM_RUN,
    ["quiz.yaml", "row 1", "doc_to_target", "float"],
    lm(LM_TEMPLATE, rows=[LM_ROWS[0], {**LM_ROWS[1], "label": 0.5}]),
)
add(
    "lmeval-template-undefined-later-doc",
    LM_RUN,
    ["quiz.yaml", "row 2", "doc_to_text", "hint"],
    lm(LM_TEMPLATE.replace("{{question}}", "{{question}}{% if question == 'sky colour' %}{{hint}}{% endif %}")),
)
add(
    "lmeval-aggregation-unknown",
    LM_RUN,
    ["quiz.yaml", "metric_list[0].aggregation", "meen"],
    lm(LM_TEMPLATE + "metric_list:\n  - metric: acc\n    aggregation: meen\n"),
)
add(
    "lmeval-metric-entry-without-metric",
    LM_RUN,
    ["quiz.yaml", "metric_list[0]", "metric"],
    lm(LM_TEMPLATE + "metric_list:\n  - aggregation: mean\n"),
)
add(
    "lmeval-filter-unknown-function",
    LM_RUN,
    ["quiz.yaml", "filter_list[0].filter[0].function", "take_frist"],
    lm(LM_GENERATE + "filter_list:\n  - name: f\n    filter:\n      - function: take_frist\n"),
)
add(
    "lmeval-filter-step-without-function",
    LM_RUN,
    ["quiz.yaml", "filter_list[0].filter[0]", "function"],
    lm(LM_GENERATE + "filter_list:\n  - name: f\n    filter:\n      - regex_pattern: a\n"),
)
add(
    "lmeval-generation-do-sample-text",
    LM_RUN,
    ["quiz.yaml", "generation_kwargs.do_sample"],
    lm(LM_GENERATE + "generation_kwargs: {do_sample: maybe, max_gen_toks: 4}\n"),
)
add(
    "lmeval-data-files-missing",
    LOCAL_RUN,
    ["quiz.yaml", "dataset_kwargs.data_files", "nowhere.jsonl"],
    local(LM_LOCAL.replace("test: quiz/test.jsonl", "test: quiz/nowhere.jsonl")),
)
add(
    "lmeval-local-split-missing",
    LOCAL_RUN,
    ["quiz.yaml", "validation", "test_split"],
    local(LM_LOCAL.replace("test_split: test", "test_split: validation")),
)
add(
    "lmeval-local-fewshot-split-missing",
    LOCAL_RUN,
    ["quiz.yaml", "dev", "fewshot_split"],
    local(LM_LOCAL.replace("fewshot_split: train", "fewshot_split: dev") + "num_fewshot: 1\n"),
)
add(
    "lmeval-fewshot-config-sampler-unknown",
    LOCAL_RUN,
    ["quiz.yaml", "fewshot_config.sampler", "fancy"],
    local(LM_LOCAL + "num_fewshot: 1\nfewshot_config:\n  sampler: fancy\n"),
)
add(
    "lmeval-fewshot-config-not-mapping",
    LOCAL_RUN,
    ["quiz.yaml", "fewshot_config"],
    local(LM_LOCAL + "num_fewshot: 1\nfewshot_config: 5\n"),
)
add(
    "lmeval-fewshot-first-n-too-many",
    LOCAL_RUN,
    ["quiz.yaml", "num_fewshot", "3"],
    local(LM_LOCAL + "num_fewshot: 3\nfewshot_config:\n  sampler: first_n\n"),
)
add(
    "lmeval-target-delimiter-number",
    LM_RUN,
    ["quiz.yaml", "target_delimiter"],
    lm(LM_TEMPLATE + "target_delimiter: 5\n"),
)
add(
    "lmeval-choice-empty-list",
    LM_RUN,
    ["quiz.yaml", "row 2", "doc_to_choice"],
    lm(LM_TEMPLATE, rows=[LM_ROWS[0], {**LM_ROWS[1], "options": []}]),
)
add(
    "lmeval-repeats-zero",
    LM_RUN,
    ["quiz.yaml", "repeats"],
    lm(LM_GENERATE + "repeats: 0\n"),
)
add(
    "lmeval-repeats-text",
    LM_RUN,
    ["quiz.yaml", "repeats"],
    lm(LM_GENERATE + "repeats: two\n"),
)
add(
    "lmeval-hook-module-syntax-error",
    LM_RUN + ["--trust-task-code"],
    ["broken.py:1", "!function", "quiz.yaml"],
    lm(LM_TEMPLATE + "process_docs: !function broken.fn\n", **{"quiz/broken.py": "def fn(:\n"}),
)
add(
    "lmeval-process-docs-returns-list",
    LM_RUN + ["--trust-task-code"],
    ["quiz.yaml", "process_docs"],
    lm(
        LM_TEMPLATE + "process_docs: !function hooks.listed\n",
        **{"quiz/hooks.py": "def listed(dataset):\n    return list(dataset)\n"},
    ),
)
