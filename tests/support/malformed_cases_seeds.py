"""Malformed inputs of the four seed dialects (probsem, GLM-130B, SEA-HELM, AISteer360 use cases) for
tests/cross_cutting/test_malformed_inputs.py, beyond malformed_cases.py and malformed_cases_more.py: each was
seen to end in a traceback, an internal error, a raw exception, an error after the model loaded, or a run
that completed on nonsense, before its fix."""

from __future__ import annotations

import json

from tests.support.malformed_cases import GLM, GLM_ROWS, Case, jsonl
from tests.support.malformed_cases_more import SEAHELM_ROWS, SEAHELM_RUN, _lines, seahelm

SEEDS: list[Case] = []


def add(id, args, expect, files=None, before_model=True, setup=None, code=None):
    assert id.startswith("seed-"), id
    SEEDS.append(Case(id, list(args), list(expect), dict(files or {}), before_model, setup, code))


# --- SEA-HELM --------------------------------------------------------------------------------------------
add(
    "seed-seahelm-prompts-item-text",
    SEAHELM_RUN,
    ["copy", "row 2", "prompts"],
    setup=seahelm(_lines([SEAHELM_ROWS[0], {**SEAHELM_ROWS[1], "prompts": ["Buruk"]}, SEAHELM_ROWS[2]])),
)

# --- AISteer360 use case files ---------------------------------------------------------------------------
MCQA_ROWS = [
    {"id": "q1", "question": "Sky colour?", "answer": "blue", "choices": ["blue", "green", "red"]},
    {"id": "q2", "question": "Grass colour?", "answer": "green", "choices": ["blue", "green", "red"]},
]


def mcqa_file(kwargs="num_shuffling_runs=1", metrics="[MCQAAccuracy()]", tail='gen_kwargs = {"max_new_tokens": 2}\n'):
    """An AISteer360 CommonsenseMCQA use case file, written with AISteer360's module names."""
    return (
        "from aisteer360.evaluation.metrics.custom.commonsense_mcqa.mcqa_accuracy import MCQAAccuracy\n"
        "from aisteer360.evaluation.metrics.custom.commonsense_mcqa.mcqa_calibration import MCQACalibration\n"
        "from aisteer360.evaluation.use_cases.commonsense_mcqa.use_case import CommonsenseMCQA\n\n"
        f"use_case = CommonsenseMCQA(evaluation_data={MCQA_ROWS!r}, evaluation_metrics={metrics}, {kwargs})\n" + tail
    )


MRUN = ["run", "uc.py", "-o", "out"]  # the tripwire model: every error comes before it loads
add(
    "seed-usecase-gen-kwargs-text-count",
    MRUN,
    ["uc.py:6", "gen_kwargs", "max_new_tokens"],
    {"uc.py": mcqa_file(tail='gen_kwargs = {"max_new_tokens": "2"}\n')},
)
add(
    "seed-usecase-batch-size-zero",
    MRUN,
    ["uc.py:7", "batch_size", "0"],
    {"uc.py": mcqa_file(tail='gen_kwargs = {"max_new_tokens": 2}\nbatch_size = 0\n')},
)
add(
    "seed-usecase-config-runtime-overrides-list",
    MRUN + ["--use-case-config", "cfg.yaml"],
    ["cfg.yaml", "runtime_overrides", "mapping"],
    {"uc.py": mcqa_file(), "cfg.yaml": "runtime_overrides: [1]\n"},
)
add(
    "seed-usecase-config-metrics-ignored",
    MRUN + ["--use-case-config", "cfg.yaml"],
    ["uc.py:5", "evaluation_metrics", "ignored"],
    {"uc.py": mcqa_file(), "cfg.yaml": "evaluation_metrics: [MCQAAcc]\n"},
)
add(
    "seed-usecase-data-option-ignored",
    MRUN + ["--use-case-data", "rows.jsonl"],
    ["uc.py:5", "evaluation_data", "--use-case-data"],
    {"uc.py": mcqa_file(), "rows.jsonl": "".join(json.dumps(r) + "\n" for r in MCQA_ROWS)},
)
add(
    "seed-usecase-shuffling-runs-zero",
    MRUN,
    ["uc.py:5", "num_shuffling_runs", "0"],
    {"uc.py": mcqa_file(kwargs="num_shuffling_runs=0")},
)
add(
    "seed-usecase-num-samples-text",
    MRUN,
    ["uc.py:5", "num_samples", "'2'"],
    {"uc.py": mcqa_file(kwargs="num_samples='2'")},
)
add(
    "seed-usecase-metric-setting-text",
    MRUN,
    ["uc.py:5", "n_bins", "five"],
    {"uc.py": mcqa_file(metrics="[MCQACalibration(n_bins='five')]")},
)

# --- GLM-130B ----------------------------------------------------------------------------------------------
G = {"glm.yaml": GLM, "data/test.jsonl": jsonl(GLM_ROWS)}
GRUN = ["run", "glm.yaml", "-o", "out", "--data-path", "."]
add(
    "seed-glm-file-pattern-group-empty",
    GRUN,
    ["glm.yaml:4", "file-pattern", "test", "empty"],
    {**G, "glm.yaml": GLM.replace('"**/test.jsonl"', '""')},
)
add(
    "seed-glm-metrics-empty-list",
    GRUN,
    ["glm.yaml:7", "metrics", "empty"],
    {**G, "glm.yaml": GLM + "metrics: []\n"},
)
add(
    "seed-glm-metrics-item-number",
    GRUN,
    ["glm.yaml:7", "metrics", "1"],
    {**G, "glm.yaml": GLM + "metrics: [1]\n"},
)
add(
    "seed-glm-inputs-list",
    GRUN,
    ["test.jsonl", "row 2", "inputs_pretokenized", "list"],
    {**G, "data/test.jsonl": jsonl([GLM_ROWS[0], {**GLM_ROWS[1], "inputs_pretokenized": ["Grass", "is"]}])},
)
add(
    "seed-glm-gen-inputs-object",
    GRUN,
    ["test.jsonl", "row 1", "inputs_pretokenized", "dict"],
    {
        "glm.yaml": GLM.replace('"mul"', '"gen"'),
        "data/test.jsonl": jsonl([{"inputs_pretokenized": {"text": "The sky is"}, "targets_pretokenized": ["blue"]}]),
    },
)
add(
    "seed-glm-label-text",
    GRUN,
    ["test.jsonl", "row 2", "label", "'1'"],
    {**G, "data/test.jsonl": jsonl([GLM_ROWS[0], {**GLM_ROWS[1], "label": "1"}])},
)
add(
    "seed-glm-label-list",
    GRUN,
    ["test.jsonl", "row 2", "label", "list"],
    {**G, "data/test.jsonl": jsonl([GLM_ROWS[0], {**GLM_ROWS[1], "label": [0, 1]}])},
)
add(
    "seed-glm-lm-empty-text-file",
    GRUN,
    ["b.txt", "text", "empty"],
    {
        "glm.yaml": GLM.replace('"mul"', '"lm"').replace('"**/test.jsonl"', '"**/*.txt"'),
        "data/a.txt": "The sky is blue and the grass is green.\n",
        "data/b.txt": "\n",
    },
)
add(
    "seed-glm-lm-jsonl-text-number",
    GRUN,
    ["test.jsonl", "row 1", "text_pretokenized", "int"],
    {"glm.yaml": GLM.replace('"mul"', '"lm"'), "data/test.jsonl": jsonl([{"text_pretokenized": 5}])},
)
