"""The corpus of malformed inputs run by tests/cross_cutting/test_malformed_inputs.py (more in malformed_cases_more.py).

Each case: an id, the files to write into a fresh folder (on top of ``BASE``), the ``proctor``
arguments, and the words the one error message must contain (the file, the row or line, the field
or option). Every case must end with a non-zero exit, no traceback, and (where the problem is
knowable then) before any model loads. ``{model}`` in the arguments is a small local model (for
problems that show only while a task runs); ``setup(folder)`` prepares what files cannot say (a copy
of a shared task folder, a run folder); ``code`` is the exit code when one is required.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional


def jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


ROWS = [
    {"id": "a", "question": "2+2?", "choices": ["3", "4"], "label": 1},
    {"id": "b", "question": "1+1?", "choices": ["2", "5"], "label": 0},
    {"id": "c", "question": "3+3?", "choices": ["6", "9"], "label": 0},
]

NATIVE = """\
tasks:
  - name: arith
    kind: multiple_choice
    data: data.jsonl
    prompt: "Q: {{ question }}\\nA:"
    choices: "{{ choices }}"
    target: "{{ label }}"
    metrics: [acc]
"""

GEN = """\
tasks:
  - name: gen
    kind: generate
    data: data.jsonl
    prompt: "Q: {{ question }}\\nA:"
    target: "{{ choices[label] }}"
    generation: {max_tokens: 4}
    metrics: [exact_match]
"""

PROBSEM_PROMPT = "Read the statements and judge them.\n"
PROBSEM_SUITE = {
    "pretext": "Is it true?",
    "context": [{"text": "The sky is blue.", "expected": 0}, {"text": "Fish can fly.", "expected": 1}],
    "posttext": "Answer:",
    "queries": ["True", "False"],
}

GLM = """\
name: "glmtask"
type: "mul"
path: "data"
file-pattern:
  test: "**/test.jsonl"
micro-batch-size: 2
"""
GLM_ROWS = [
    {"inputs_pretokenized": "The sky is", "choices_pretokenized": ["blue", "green"], "label": 0},
    {"inputs_pretokenized": "Grass is", "choices_pretokenized": ["red", "green"], "label": 1},
]

USECASE = """\
from proctor.dialects.aisteer.base import UseCase


class Echo(UseCase):
    def validate_evaluation_data(self, data):
        pass

    def generate(self, model_or_pipeline, tokenizer, gen_kwargs=None, runtime_overrides=None, **kwargs):
        return []

    def evaluate(self, generations):
        return {}


evaluation_data = [{"id": "1", "question": "hi"}]
evaluation_metrics = []
"""

BASE = {
    "task.yaml": NATIVE,
    "data.jsonl": jsonl(ROWS),
}


@dataclass
class Case:
    id: str
    args: list
    expect: list  # words the message must contain (case-insensitive)
    files: dict = field(default_factory=dict)
    before_model: bool = True  # the error must come before any model loads
    setup: Optional[Callable[[Path], None]] = None
    code: Optional[int] = None  # the exit code, when one is required (else any non-zero one)


def native(**changes) -> str:
    text = NATIVE
    for old, new in changes.items():
        text = text.replace(old, new)
    return text


def _with(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


CASES: list[Case] = []


def add(id, args, expect, files=None, before_model=True, setup=None, code=None):
    CASES.append(Case(id, list(args), list(expect), dict(files or {}), before_model, setup, code))


RUN = ["run", "task.yaml", "-o", "out"]

# --- command-line options -------------------------------------------------------------------------
add("cli-unknown-option", RUN + ["--limt", "3"], ["--limt"])
add("cli-limit-negative", RUN + ["--limit", "-1"], ["--limit"])
add("cli-limit-zero", RUN + ["--limit", "0"], ["--limit"])
add("cli-limit-text", RUN + ["--limit", "abc"], ["--limit"])
# a fraction a float reads as 1.0 (one row, not nearly all of them) or as 0.0: exit 0 on one row, or "0.0"
add("cli-limit-fraction-rounds-to-one", RUN + ["--limit", "0.99999999999999999999"], ["--limit", "fewer digits"])
add("cli-limit-fraction-rounds-to-zero", RUN + ["--limit", "1e-400"], ["--limit", "fewer digits"])
add("cli-limit-count-with-a-fraction", RUN + ["--limit", "1.0000000000000001"], ["--limit", "neither a count"])
add("cli-batch-size-zero", RUN + ["--batch-size", "0"], ["--batch-size"])
add("cli-batch-size-text", RUN + ["--batch-size", "many"], ["--batch-size"])
add("cli-batch-size-negative", RUN + ["--batch-size", "-4"], ["--batch-size"])
add("cli-chunk-size-zero", RUN + ["--chunk-size", "0"], ["--chunk-size"])
add("cli-chunk-size-text", RUN + ["--chunk-size", "x"], ["--chunk-size"])
add("cli-chat-template-yes", RUN + ["--chat-template", "yes"], ["--chat-template", "yes"])
add("cli-var-no-equals", RUN + ["--var", "X"], ["--var", "X"])
add("cli-var-empty-key", RUN + ["--var", "=1"], ["--var"])
add("cli-model-arg-no-equals", RUN + ["--model-arg", "x"], ["--model-arg", "x"])
add("cli-model-arg-misspelled-hf", RUN + ["--model-arg", "dtyp=float16"], ["--model-arg", "dtyp"])
add(
    "cli-model-arg-misspelled-openai",
    RUN + ["-m", "openai:x", "--base-url", "http://127.0.0.1:9/v1", "--model-arg", "concurency=2"],
    ["--model-arg", "concurency"],
)
add("cli-seahelm-data-no-equals", RUN + ["--seahelm-data", "x"], ["--seahelm-data", "x"])
add("cli-seahelm-data-missing-path", RUN + ["--seahelm-data", "org/ds=nowhere"], ["--seahelm-data", "nowhere"])
# use case files and task files run together (one pipeline); the run-time overrides use cases cannot take are refused
add(
    "cli-py-with-yaml-and-fewshot",
    ["run", "task.yaml", "uc.py", "-o", "out", "--num-fewshot", "1"],
    ["use case files", "num_fewshot"],
    {"uc.py": USECASE},
)
add("cli-device-gpu", RUN + ["--device", "gpu"], ["--device", "gpu"])
add("cli-device-cuda-text", RUN + ["--device", "cuda:x"], ["--device", "cuda:x"])
add("cli-dtype-bad", RUN + ["--dtype", "float8"], ["--dtype", "float8"])
add("cli-max-length-negative", RUN + ["--max-length", "-5"], ["--max-length"])
add("cli-max-length-zero", RUN + ["--max-length", "0"], ["--max-length"])
add("cli-output-is-file", ["run", "task.yaml", "-o", "afile"], ["--output", "afile"], {"afile": "x"})
add("cli-output-parent-is-file", ["run", "task.yaml", "-o", "afile/run"], ["--output", "afile"], {"afile": "x"})
add("cli-cache-is-file", RUN + ["--cache", "afile"], ["--cache", "afile"], {"afile": "x"})
add("cli-mc-format-bad", RUN + ["--mc-format", "letters"], ["--mc-format", "letters"])
add("cli-mc-shuffle-with-loglikelihood", RUN + ["--mc-format", "loglikelihood", "--mc-shuffle", "3"], ["--mc-shuffle"])
add("cli-temp-on-native", RUN + ["--temp", "0.5"], ["--temp", "probsem"])
add("cli-norm-on-native", RUN + ["--norm"], ["--norm", "probsem"])
add(
    "cli-temp-zero",
    ["run", "p.txt", "-o", "out", "--temp", "0"],
    ["--temp"],
    {"p.txt": PROBSEM_PROMPT, "p_A.json": json.dumps(PROBSEM_SUITE)},
)
add(
    "cli-temp-inf",
    ["run", "p.txt", "-o", "out", "--temp", "inf"],
    ["--temp"],
    {"p.txt": PROBSEM_PROMPT, "p_A.json": json.dumps(PROBSEM_SUITE)},
)
add(
    "cli-temp-nan",
    ["run", "p.txt", "-o", "out", "--temp", "nan"],
    ["--temp"],
    {"p.txt": PROBSEM_PROMPT, "p_A.json": json.dumps(PROBSEM_SUITE)},
)
add(
    "cli-temp-negative",
    ["run", "p.txt", "-o", "out", "--temp", "-1"],
    ["--temp"],
    {"p.txt": PROBSEM_PROMPT, "p_A.json": json.dumps(PROBSEM_SUITE)},
)
add("cli-path-missing", ["run", "nowhere.yaml", "-o", "out"], ["nowhere.yaml"])
add("cli-tasks-glob-matches-nothing", RUN + ["--tasks", "arth*"], ["arth*", "arith"])
add("cli-workers-zero", RUN + ["--workers", "0"], ["--workers"])
add("cli-seahelm-runs-zero", RUN + ["--seahelm-runs", "0"], ["--seahelm-runs"])
add("cli-judge-arg-without-openai-judge", RUN + ["--judge-arg", "a=1"], ["--judge-arg"])
add(
    "cli-worker-resources-bad",
    RUN + ["--worker-resources", "GPU=lots", "--workers", "2"],
    ["--worker-resources", "GPU=lots"],
)
add("cli-judge-base-url-without-judge", RUN + ["--judge-base-url", "http://127.0.0.1:9/v1"], ["--judge-base-url"])
add("cli-judge-key-env-without-judge", RUN + ["--judge-api-key-env", "KEY"], ["--judge-api-key-env"])
add("cli-seahelm-judge-on-native", RUN + ["--seahelm-judge", "openai:x"], ["--seahelm-judge", "seahelm"])
add("cli-seahelm-runs-on-native", RUN + ["--seahelm-runs", "3"], ["--seahelm-runs", "seahelm"])
add("cli-base-model-on-native", RUN + ["--base-model"], ["--base-model", "seahelm"])
add("cli-tasks-second-glob-typo", RUN + ["--tasks", "arith", "--tasks", "arth*"], ["arth*", "arith"])
add("cli-missing-paths", ["run"], ["paths"])
add("cli-mc-shuffle-text", RUN + ["--mc-shuffle", "x"], ["--mc-shuffle"])
add("cli-cpus-per-worker-negative", RUN + ["--cpus-per-worker", "-1"], ["--cpus-per-worker"])
add("cli-steer-no-name", RUN + ["-m", "steer:uc.py"], ["steer", "uc.py"], {"uc.py": USECASE})
add("cli-steer-missing-file", RUN + ["-m", "steer:nofile.py:X"], ["nofile.py"])
add("ls-temp-on-native", ["ls", "task.yaml", "--temp", "0.5"], ["--temp", "probsem"])
add("cli-update-and-restart", RUN + ["--update", "--restart"], ["--update", "--restart"])
add("cli-plugin-missing", RUN + ["--plugin", "nope.py"], ["nope.py"])
add("cli-plugin-syntax-error", RUN + ["--plugin", "plug.py"], ["plug.py", "line 1"], {"plug.py": "def (:\n"})
add(
    "cli-plugin-raises", RUN + ["--plugin", "plug.py"], ["plug.py", "boom"], {"plug.py": "raise RuntimeError('boom')\n"}
)
add("cli-data-dir-missing", RUN + ["--data-dir", "nodir"], ["--data-dir", "nodir"])
add("cli-data-path-missing", RUN + ["--data-path", "nodir"], ["--data-path", "nodir"])
add("cli-base-url-without-openai", RUN + ["--base-url", "http://127.0.0.1:9/v1"], ["--base-url"])
add("cli-openai-without-base-url", RUN + ["-m", "openai:x"], ["--base-url"])
add("cli-model-unknown-backend", RUN + ["-m", "foo:bar"], ["foo"], before_model=False)
add("cli-model-empty-folder", RUN + ["-m", "emptymodel"], ["emptymodel"], {"emptymodel/.keep": ""}, before_model=False)
add("cli-model-missing-folder", RUN + ["-m", "./nomodel"], ["nomodel"], before_model=False)
add("validate-no-tasks", ["validate", "emptydir"], ["emptydir", "no task"], {"emptydir/readme.md": "hi"})
add("validate-unknown-option", ["validate", "task.yaml", "--limt", "1"], ["--limt"])
add("ls-missing-path", ["ls", "nowhere"], ["nowhere"])
add("report-missing-run", ["report", "norun"], ["norun"])
add("report-not-a-run", ["report", "emptydir"], ["emptydir", "results.json"], {"emptydir/readme.md": "hi"})
add(
    "report-bad-results-json",
    ["report", "run"],
    ["results.json"],
    {"run/results.json": "{nope", "run/samples.jsonl": ""},
)
add("compare-one-run", ["compare", "norun"], ["two run folders"])
add("compare-missing-run", ["compare", "norun", "norun2"], ["norun"])
add(
    "export-bad-format",
    ["export", "run", "--format", "csv"],
    ["format", "csv"],
    {"run/results.json": "{}", "run/samples.jsonl": ""},
)
add("compare-alpha-out-of-range", ["compare", "a", "b", "--alpha", "2"], ["--alpha"])

# --- native YAML ------------------------------------------------------------------------------------
add("yaml-syntax", RUN, ["task.yaml:4"], {"task.yaml": native(**{"kind: multiple_choice": "kind: [multiple_choice"})})
add(
    "yaml-unknown-field",
    RUN,
    ["task.yaml", "promtp"],
    {"task.yaml": native(**{"metrics: [acc]": "metrics: [acc]\n    promtp: x"})},
)
add(
    "yaml-missing-prompt",
    RUN,
    ["task.yaml", "prompt"],
    {"task.yaml": native(**{'    prompt: "Q: {{ question }}\\nA:"\n': ""})},
)
add("yaml-bad-kind", RUN, ["task.yaml", "kind"], {"task.yaml": native(**{"multiple_choice": "multiple-choice"})})
add(
    "yaml-bad-limit-type",
    RUN,
    ["task.yaml", "limit"],
    {"task.yaml": native(**{"metrics: [acc]": "metrics: [acc]\n    limit: many"})},
)
add("yaml-unknown-metric", RUN, ["task.yaml", "accuracy_norm"], {"task.yaml": native(**{"[acc]": "[accuracy_norm]"})})
add("yaml-metric-wrong-kind", RUN, ["task.yaml", "exact_match"], {"task.yaml": native(**{"[acc]": "[exact_match]"})})
add("yaml-template-syntax", RUN, ["task.yaml", "prompt"], {"task.yaml": native(**{"{{ question }}": "{{ question }"})})
add(
    "yaml-undefined-variable",
    RUN,
    ["data.jsonl", "row 1", "prompt", "questoin"],
    {"task.yaml": native(**{"{{ question }}": "{{ questoin }}"})},
)
add(
    "yaml-target-out-of-range",
    RUN,
    ["data.jsonl", "row 1", "target"],
    {"task.yaml": native(**{"{{ label }}": "{{ label + 5 }}"})},
)
add(
    "yaml-target-not-int", RUN, ["data.jsonl", "row 1", "target"], {"task.yaml": native(**{"{{ label }}": "{{ 'x' }}"})}
)
add(
    "yaml-choices-not-list",
    RUN,
    ["data.jsonl", "row 1", "choices"],
    {"task.yaml": native(**{'"{{ choices }}"': '"{{ question }}"'})},
)
add("yaml-data-missing", RUN, ["nowhere.jsonl"], {"task.yaml": native(**{"data.jsonl": "nowhere.jsonl"})})
add("yaml-empty-file", RUN, ["task.yaml"], {"task.yaml": ""})
add("yaml-no-tasks-list", RUN, ["task.yaml"], {"task.yaml": "tasks: 3\n"})
add("yaml-task-not-mapping", RUN, ["task.yaml"], {"task.yaml": "tasks:\n  - 3\n"})
add("yaml-duplicate-task-name", RUN, ["arith"], {"task.yaml": NATIVE + NATIVE.replace("tasks:\n", "")})
add("yaml-non-utf8", RUN, ["task.yaml"], {"task.yaml": NATIVE.encode() + b"# \xff\xfe\n"})
add("yaml-unset-variable", RUN, ["task.yaml", "NOPE"], {"task.yaml": native(**{"data.jsonl": "${NOPE}/data.jsonl"})})
add(
    "yaml-filter-error",
    RUN,
    ["task.yaml", "filter"],
    {
        "task.yaml": native(
            **{"    data: data.jsonl": '    data:\n      path: data.jsonl\n      filter: "{{ label > }}"'}
        )
    },
)
add(
    "yaml-filter-runtime-error",
    RUN,
    ["filter", "row 1"],
    {
        "task.yaml": native(
            **{"    data: data.jsonl": '    data:\n      path: data.jsonl\n      filter: "{{ nope.x }}"'}
        )
    },
)
add(
    "yaml-fewshot-too-many",
    RUN,
    ["fewshot", "count"],
    {"task.yaml": native(**{"metrics: [acc]": "metrics: [acc]\n    fewshot: {count: 10}"})},
)
add(
    "yaml-fewshot-negative",
    RUN,
    ["fewshot", "count"],
    {"task.yaml": native(**{"metrics: [acc]": "metrics: [acc]\n    fewshot: {count: -1}"})},
)
add(
    "yaml-generation-negative-tokens",
    RUN,
    ["task.yaml", "max_tokens"],
    {"task.yaml": GEN.replace("max_tokens: 4", "max_tokens: -4")},
)
add(
    "yaml-extraction-bad-regex",
    RUN,
    ["task.yaml", "regex"],
    {"task.yaml": GEN.replace("    metrics:", '    extraction: {regex: "([a-"}\n    metrics:')},
)

# --- data readers -----------------------------------------------------------------------------------
add("data-invalid-json-line", RUN, ["data.jsonl", "line 2"], {"data.jsonl": jsonl(ROWS[:1]) + "{not json\n"})
add("data-non-utf8-jsonl", RUN, ["data.jsonl", "2"], {"data.jsonl": jsonl(ROWS[:1]).encode() + b'{"id": "\xff"}\n'})
add("data-empty-jsonl", RUN, ["data.jsonl", "empty"], {"data.jsonl": ""})
add("data-blank-lines-only", RUN, ["data.jsonl", "empty"], {"data.jsonl": "\n\n"})
add("data-jsonl-row-not-object", RUN, ["data.jsonl", "2"], {"data.jsonl": jsonl(ROWS[:1]) + "[1, 2]\n"})
add(
    "data-null-choice",
    RUN,
    ["data.jsonl", "row 2", "choices"],
    {"data.jsonl": jsonl([ROWS[0], {**ROWS[1], "choices": ["2", None]}])},
)
add(
    "data-nan-label",
    RUN,
    ["data.jsonl", "row 2", "target"],
    {"data.jsonl": jsonl(ROWS[:1]) + '{"id": "b", "question": "q", "choices": ["a", "b"], "label": NaN}\n'},
)
add(
    "data-null-label",
    RUN,
    ["data.jsonl", "row 2", "target"],
    {"data.jsonl": jsonl([ROWS[0], {**ROWS[1], "label": None}])},
)
add(
    "data-float-label",
    RUN,
    ["data.jsonl", "row 2", "target"],
    {"data.jsonl": jsonl([ROWS[0], {**ROWS[1], "label": 0.5}])},
)
add(
    "data-null-in-choice-templates",
    RUN,
    ["data.jsonl", "row 2", "choices[1]"],
    {
        "task.yaml": native(**{'"{{ choices }}"': '["{{ a }}", "{{ b }}"]', "{{ label }}": "{{ label }}"}),
        "data.jsonl": jsonl(
            [{"question": "q", "a": "x", "b": "y", "label": 0}, {"question": "q", "a": "x", "b": None, "label": 0}]
        ),
    },
)
add(
    "data-empty-choices",
    RUN,
    ["data.jsonl", "row 2", "choices"],
    {"data.jsonl": jsonl([ROWS[0], {**ROWS[1], "choices": []}])},
)
add(
    "data-bool-label",
    RUN,
    ["data.jsonl", "row 2", "target"],
    {"data.jsonl": jsonl([ROWS[0], {**ROWS[1], "label": True}])},
)
add(
    "data-json-invalid",
    RUN,
    ["data.json"],
    {"task.yaml": native(**{"data.jsonl": "data.json"}), "data.json": '[{"a": 1},'},
)
add("data-json-not-list", RUN, ["data.json"], {"task.yaml": native(**{"data.jsonl": "data.json"}), "data.json": "3"})
add(
    "data-json-empty-list",
    RUN,
    ["data.json", "empty"],
    {"task.yaml": native(**{"data.jsonl": "data.json"}), "data.json": "[]"},
)
add(
    "data-csv-header-only",
    RUN,
    ["data.csv", "empty"],
    {
        "task.yaml": native(**{"data.jsonl": "data.csv", '"{{ choices }}"': '"{{ [a, b] }}"'}),
        "data.csv": "question,a,b,label\n",
    },
)
add("data-csv-empty", RUN, ["data.csv", "empty"], {"task.yaml": native(**{"data.jsonl": "data.csv"}), "data.csv": ""})
add(
    "data-csv-wrong-columns",
    RUN,
    ["data.csv:3"],
    {
        "task.yaml": native(
            **{"data.jsonl": "data.csv", '"{{ choices }}"': '"{{ [a, b] }}"', "{{ label }}": "{{ label | int }}"}
        ),
        "data.csv": "question,a,b,label\nq,x,y,0\nq,x,0\n",
    },
)
add(
    "data-csv-non-utf8",
    RUN,
    ["data.csv", "2"],
    {
        "task.yaml": native(
            **{"data.jsonl": "data.csv", '"{{ choices }}"': '"{{ [a, b] }}"', "{{ label }}": "{{ label | int }}"}
        ),
        "data.csv": b"question,a,b,label\nq\xff,x,y,0\n",
    },
)
add(
    "data-csv-label-text",
    RUN,
    ["data.csv", "row 2", "target", "zero"],
    {
        "task.yaml": native(
            **{"data.jsonl": "data.csv", '"{{ choices }}"': '"{{ [a, b] }}"', "{{ label }}": "{{ label | int }}"}
        ),
        "data.csv": "question,a,b,label\nq,x,y,zero\n",
    },
)
add(
    "data-parquet-corrupt",
    RUN,
    ["data.parquet"],
    {"task.yaml": native(**{"data.jsonl": "data.parquet"}), "data.parquet": b"PAR1garbage"},
)
add("data-unknown-extension", RUN, ["data.xyz"], {"task.yaml": native(**{"data.jsonl": "data.xyz"}), "data.xyz": "x"})
add("data-glob-matches-nothing", RUN, ["*.missing"], {"task.yaml": native(**{"data.jsonl": "'*.missing'"})})
add("data-is-a-directory", RUN, ["datadir"], {"task.yaml": native(**{"data.jsonl": "datadir"}), "datadir/x.txt": ""})
add(
    "data-duplicate-ids",
    RUN,
    ["data.jsonl", "id"],
    {
        "task.yaml": native(**{"    data: data.jsonl": "    data:\n      path: data.jsonl\n      id: id"}),
        "data.jsonl": jsonl([ROWS[0], ROWS[0]]),
    },
)
add(
    "data-id-field-missing",
    RUN,
    ["data.jsonl", "row 1", "id"],
    {"task.yaml": native(**{"    data: data.jsonl": "    data:\n      path: data.jsonl\n      id: ident"})},
)
add(
    "data-limit-in-yaml-zero",
    RUN,
    ["task.yaml", "limit"],
    {"task.yaml": native(**{"metrics: [acc]": "metrics: [acc]\n    limit: 0"})},
)

# --- probsem ----------------------------------------------------------------------------------------
P = {"p.txt": PROBSEM_PROMPT}
PRUN = ["run", "p.txt", "-o", "out"]
add("probsem-suite-invalid-json", PRUN, ["p_A.json:1"], {**P, "p_A.json": '{"pretext": "x",'})
add("probsem-suite-non-utf8", PRUN, ["p_A.json"], {**P, "p_A.json": b'{"pretext": "\xff"}'})
add("probsem-prompt-non-utf8", PRUN, ["p.txt"], {"p.txt": b"\xff\xfe bad", "p_A.json": json.dumps(PROBSEM_SUITE)})
add(
    "probsem-suite-without-prompt",
    ["run", "p_A.json", "-o", "out"],
    ["p_A.json", "p.txt"],
    {"p_A.json": json.dumps(PROBSEM_SUITE)},
)
add("probsem-prompt-without-suite", PRUN, ["p.txt"], {**P})
add(
    "probsem-suite-missing-queries",
    PRUN,
    ["p_A.json", "queries"],
    {**P, "p_A.json": json.dumps({k: v for k, v in PROBSEM_SUITE.items() if k != "queries"})},
)
add(
    "probsem-suite-empty-queries",
    PRUN,
    ["p_A.json", "queries"],
    {**P, "p_A.json": json.dumps({**PROBSEM_SUITE, "queries": []})},
)
add(
    "probsem-suite-null-query",
    PRUN,
    ["p_A.json", "queries"],
    {**P, "p_A.json": json.dumps({**PROBSEM_SUITE, "queries": ["True", None]})},
)
add(
    "probsem-suite-expected-out-of-range",
    PRUN,
    ["p_A.json", "expected"],
    {**P, "p_A.json": json.dumps({**PROBSEM_SUITE, "context": [{"text": "x", "expected": 5}]})},
)
add(
    "probsem-suite-context-not-list",
    PRUN,
    ["p_A.json", "context"],
    {**P, "p_A.json": json.dumps({**PROBSEM_SUITE, "context": "x"})},
)
add(
    "probsem-suite-context-no-text",
    PRUN,
    ["p_A.json", "text"],
    {**P, "p_A.json": json.dumps({**PROBSEM_SUITE, "context": [{"expected": 0}]})},
)
add("probsem-suite-not-object", PRUN, ["p_A.json"], {**P, "p_A.json": "[1, 2]"})
add("probsem-suite-empty-file", PRUN, ["p_A.json"], {**P, "p_A.json": ""})
add(
    "probsem-suite-nan-expected",
    PRUN,
    ["p_A.json", "expected"],
    {
        **P,
        "p_A.json": '{"pretext": "", "posttext": "", "queries": ["a", "b"], '
        '"context": [{"text": "x", "expected": NaN}]}',
    },
)

# --- GLM-130B -----------------------------------------------------------------------------------------
G = {"glm.yaml": GLM, "data/test.jsonl": jsonl(GLM_ROWS)}
GRUN = ["run", "glm.yaml", "-o", "out", "--data-path", "."]
add("glm-bad-type", GRUN, ["glm.yaml", "type"], {**G, "glm.yaml": GLM.replace('"mul"', '"mult"')})
add("glm-no-files", GRUN, ["glm.yaml", "test.jsonl"], {"glm.yaml": GLM})
add("glm-invalid-json-row", GRUN, ["test.jsonl", "2"], {**G, "data/test.jsonl": jsonl(GLM_ROWS[:1]) + "{oops\n"})
add(
    "glm-non-utf8-row",
    GRUN,
    ["test.jsonl", "2"],
    {**G, "data/test.jsonl": jsonl(GLM_ROWS[:1]).encode() + b'{"x": "\xff"}\n'},
)
add(
    "glm-label-out-of-range",
    GRUN,
    ["test.jsonl", "row 2", "target", "7"],
    {**G, "data/test.jsonl": jsonl([GLM_ROWS[0], {**GLM_ROWS[1], "label": 7}])},
)
add(
    "glm-null-choice",
    GRUN,
    ["test.jsonl", "row 2", "choices"],
    {**G, "data/test.jsonl": jsonl([GLM_ROWS[0], {**GLM_ROWS[1], "choices_pretokenized": ["red", None]}])},
)
add(
    "glm-missing-inputs",
    GRUN,
    ["test.jsonl", "row 2", "inputs"],
    {**G, "data/test.jsonl": jsonl([GLM_ROWS[0], {"label": 0, "choices_pretokenized": ["a", "b"]}])},
)
add(
    "glm-nan-label",
    GRUN,
    ["test.jsonl", "row 2", "target", "nan"],
    {
        **G,
        "data/test.jsonl": jsonl(GLM_ROWS[:1])
        + '{"inputs_pretokenized": "x", "choices_pretokenized": ["a", "b"], "label": NaN}\n',
    },
)
add("glm-unknown-metric", GRUN, ["glm.yaml", "Acuracy"], {**G, "glm.yaml": GLM + 'metrics: ["Acuracy"]\n'})
add("glm-module-missing", GRUN, ["glm.yaml", "module"], {**G, "glm.yaml": GLM + 'module: "nope.Task"\n'})
add(
    "glm-module-syntax-error",
    GRUN + ["--trust-task-code"],
    ["mod.py"],
    {**G, "glm.yaml": GLM + 'module: "mod.Task"\n', "mod.py": "class Task(:\n"},
)
add("glm-empty-data-file", GRUN, ["test.jsonl", "empty"], {**G, "data/test.jsonl": ""})
add(
    "glm-bad-batch-size",
    GRUN,
    ["glm.yaml", "micro-batch-size"],
    {**G, "glm.yaml": GLM.replace("micro-batch-size: 2", "micro-batch-size: many")},
)

# --- use cases (.py) ----------------------------------------------------------------------------------
URUN = ["run", "uc.py", "-o", "out"]
add("usecase-syntax-error", URUN, ["uc.py:3"], {"uc.py": "import os\n\ndef broken(:\n"})
add("usecase-failing-import", URUN, ["uc.py", "no_such_module_xyz"], {"uc.py": "import no_such_module_xyz\n"})
add("usecase-raises-at-import", URUN, ["uc.py", "boom"], {"uc.py": "raise ValueError('boom')\n"})
add(
    "usecase-init-raises",
    URUN,
    ["uc.py", "__init__"],
    {
        "uc.py": USECASE.replace(
            "    def validate_evaluation_data",
            "    def __init__(self, *a, **k):\n        raise RuntimeError('init boom')\n\n"
            "    def validate_evaluation_data",
        )
    },
)
add(
    "usecase-validate-raises",
    URUN,
    ["uc.py", "missing question"],
    {
        "uc.py": USECASE.replace(
            "    def validate_evaluation_data(self, data):\n        pass",
            "    def validate_evaluation_data(self, data):\n        raise ValueError('missing question')",
        )
    },
)
add("usecase-no-class", URUN, ["uc.py", "UseCase"], {"uc.py": "x = 1\n"})
add(
    "usecase-no-data",
    URUN,
    ["uc.py", "evaluation_data"],
    {"uc.py": USECASE.replace('evaluation_data = [{"id": "1", "question": "hi"}]\n', "")},
)
add(
    "usecase-data-file-missing",
    URUN,
    ["uc.py", "nowhere.jsonl"],
    {"uc.py": USECASE.replace('[{"id": "1", "question": "hi"}]', '"nowhere.jsonl"')},
)
add(
    "usecase-data-invalid-json",
    URUN,
    ["rows.jsonl", "2"],
    {"uc.py": USECASE.replace('[{"id": "1", "question": "hi"}]', '"rows.jsonl"'), "rows.jsonl": '{"id": "1"}\n{bad\n'},
)
add(
    "usecase-data-non-utf8",
    URUN,
    ["rows.jsonl", "2"],
    {
        "uc.py": USECASE.replace('[{"id": "1", "question": "hi"}]', '"rows.jsonl"'),
        "rows.jsonl": b'{"id": "1"}\n{"id": "\xff"}\n',
    },
)
add(
    "usecase-data-json-invalid",
    URUN,
    ["rows.json"],
    {"uc.py": USECASE.replace('[{"id": "1", "question": "hi"}]', '"rows.json"'), "rows.json": '[{"id": 1},'},
)
add(
    "usecase-data-empty",
    URUN,
    ["rows.jsonl", "empty"],
    {"uc.py": USECASE.replace('[{"id": "1", "question": "hi"}]', '"rows.jsonl"'), "rows.jsonl": ""},
)
add("usecase-use-case-wrong-type", URUN, ["uc.py", "use_case"], {"uc.py": "use_case = 3\n"})
add("usecase-file-missing", ["run", "nope.py", "-o", "out"], ["nope.py"])
add("usecase-non-utf8-source", URUN, ["uc.py"], {"uc.py": b"x = '\xff'\n"})
