"""Malformed native YAML tasks (ids ``native3-``) for tests/cross_cutting/test_malformed_inputs.py, beyond
malformed_cases.py, malformed_cases_more.py and malformed_cases_images.py: each was seen to run on nonsense (exit 0,
a silently wrong number), to generate past the model's window, or to refuse valid YAML, before its fix."""

from __future__ import annotations

from tests.support.malformed_cases import GEN, ROWS, Case, jsonl, native

NATIVE3: list[Case] = []
RUN = ["run", "task.yaml", "-o", "out"]
MRUN = RUN + ["-m", "{model}", "--limit", "1"]  # problems that show only once the model's window is known


def add(id, args, expect, files=None, before_model=True, setup=None, code=None):
    assert id.startswith("native3-"), id
    NATIVE3.append(Case(id, list(args), list(expect), dict(files or {}), before_model, setup, code))


def more(text: str) -> str:
    """The corpus's native task with ``text`` (fields of the task, four spaces in) after its metrics (line 9 on)."""
    return native(**{"metrics: [acc]\n": "metrics: [acc]\n" + text})


def gen(old: str, new: str) -> str:
    assert old in GEN, old
    return GEN.replace(old, new)


def rows(*changes: dict) -> str:
    """The corpus's rows, the i-th updated with changes[i]."""
    return jsonl([{**row, **change} for row, change in zip(ROWS, changes + ({},) * 3)])


# --- the task file: metrics, groups, fields a kind does not use ----------------------------------------------
add(
    "native3-metrics-twice",
    RUN,
    ["task.yaml:8", "'metrics'", "acc", "twice"],
    {"task.yaml": native(**{"[acc]": "[acc, acc_norm, acc]"})},
)
add("native3-metrics-empty-list", RUN, ["task.yaml:8", "'metrics'", "empty"], {"task.yaml": native(**{"[acc]": "[]"})})
add("native3-group-empty", RUN, ["task.yaml:9", "'group'", "empty"], {"task.yaml": more("    group: ''\n")})
add(
    "native3-group-twice",
    RUN,
    ["task.yaml:9", "'group'", "science", "twice"],
    {"task.yaml": more("    group: [science, science]\n")},
)
add(
    "native3-generation-on-multiple-choice",
    RUN,
    ["task.yaml:9", "'generation'", "multiple_choice"],
    {"task.yaml": more("    generation: {max_tokens: 5}\n")},
)
add(
    "native3-choices-on-generate",
    RUN,
    ["task.yaml:8", "'choices'", "generate"],
    {"task.yaml": gen("    metrics:", '    choices: "{{ choices }}"\n    metrics:')},
)
add(
    "native3-text-on-multiple-choice",
    RUN,
    ["task.yaml:9", "'text'", "perplexity"],
    {"task.yaml": more('    text: "{{ question }}"\n')},
)

add(
    "native3-breakdown-twice",
    RUN,
    ["task.yaml:9", "'breakdown'", "_file", "twice"],
    {"task.yaml": more("    breakdown: [_file, _file]\n")},
)
add(
    "native3-answer-tag-empty",
    RUN,
    ["task.yaml:8", "answer_tag", "empty"],
    {"task.yaml": gen("    metrics:", "    extraction: {answer_tag: ''}\n    metrics:")},
)

add(
    "native3-data-empty-list",
    RUN,
    ["task.yaml:4", "'data'", "no source"],
    {"task.yaml": native(**{"data: data.jsonl": "data: []"})},
)
add(
    "native3-choices-one-template",
    RUN,
    ["task.yaml:6", "'choices'", "one template"],
    {"task.yaml": native(**{'"{{ choices }}"': "['{{ choices[0] }}']", "{{ label }}": "0"})},
)

# --- generation settings ---------------------------------------------------------------------------------------
add(
    "native3-max-tokens-absurd",
    RUN,
    ["task.yaml:7", "generation.max_tokens", "1000000000000"],
    {"task.yaml": gen("max_tokens: 4", "max_tokens: 1000000000000")},
)
add(
    "native3-max-tokens-beyond-window",
    MRUN,
    ["task.yaml:7", "generation.max_tokens", "600", "512"],
    {"task.yaml": gen("max_tokens: 4", "max_tokens: 600")},
    before_model=False,
)
add(
    "native3-max-tokens-beyond-task-max-length",
    RUN,
    ["task.yaml:7", "generation.max_tokens", "max_length", "100"],
    {"task.yaml": gen("max_tokens: 4}", "max_tokens: 100}\n    max_length: 100")},
)
add(
    "native3-min-tokens-above-max-tokens",
    RUN,
    ["task.yaml:7", "generation.min_tokens", "max_tokens"],
    {"task.yaml": gen("max_tokens: 4", "max_tokens: 4, min_tokens: 10")},
)

# --- targets and choices -----------------------------------------------------------------------------------------
add(
    "native3-target-list-twice",
    RUN,
    ["data.jsonl", "row 1", "'target'", "twice"],
    {"task.yaml": native(**{"{{ label }}": "{{ [label, label] }}"})},
)
add(
    "native3-target-index-and-text-twice",
    RUN,
    ["data.jsonl", "row 1", "'target'", "twice"],
    {"task.yaml": native(**{"{{ label }}": "{{ [label, choices[label]] }}"})},
)
add(
    "native3-target-digit-text-is-another-choice",
    RUN,
    ["data.jsonl", "row 2", "'target'", "'0'"],
    {"data.jsonl": rows({}, {"choices": ["1", "0"], "label": "0"})},
)
add(
    "native3-row-with-one-choice",
    RUN,
    ["data.jsonl", "row 2", "'choices'", "one choice"],
    {"data.jsonl": rows({}, {"choices": ["2"], "label": 0})},
)
add(
    "native3-reference-mapping",
    RUN,
    ["data.jsonl", "row 1", "'target'", "dict"],
    {"task.yaml": gen("{{ choices[label] }}", "{{ {'answer': choices[label]} }}")},
)
add(
    "native3-reference-empty-list",
    RUN,
    ["data.jsonl", "row 1", "'target'", "no reference"],
    {"task.yaml": gen("{{ choices[label] }}", "{{ [] }}")},
)
add(
    "native3-reference-nested-list",
    RUN,
    ["data.jsonl", "row 1", "'target'", "list"],
    {"task.yaml": gen("{{ choices[label] }}", "{{ [choices] }}")},
)

# --- empty prompts and texts ---------------------------------------------------------------------------------------
add(
    "native3-prompt-empty-on-one-row",
    RUN,
    ["data.jsonl", "row 2", "'prompt'", "empty"],
    {"task.yaml": native(**{'"Q: {{ question }}\\nA:"': '"{{ question }}"'}), "data.jsonl": rows({}, {"question": ""})},
)
add(
    "native3-generate-prompt-empty",
    RUN,
    ["data.jsonl", "row 3", "'prompt'", "empty"],
    {"task.yaml": gen('"Q: {{ question }}\\nA:"', '"{{ question }}"'), "data.jsonl": rows({}, {}, {"question": " "})},
)
add(
    "native3-perplexity-text-empty",
    RUN,
    ["data.jsonl", "row 2", "'text'", "empty"],
    {
        "task.yaml": 'name: ppl\nkind: perplexity\ndata: data.jsonl\ntext: "{{ question }}"\n',
        "data.jsonl": rows({}, {"question": ""}),
    },
)
add(
    "native3-prompt-prints-null",
    RUN,
    ["data.jsonl", "row 2", "'prompt'", "null"],
    {"data.jsonl": rows({}, {"question": None})},
)

# --- data: computed fields, joins, columns, filters, sources ---------------------------------------------------------
WITH_DATA = "    data: data.jsonl"
add(
    "native3-fields-replace-a-column",
    RUN,
    ["task.yaml", "data.fields.question", "already"],
    {"task.yaml": native(**{WITH_DATA: '    data: {path: data.jsonl, fields: {question: "{{ question | upper }}"}}'})},
)
add(
    "native3-constants-replace-a-column",
    RUN,
    ["task.yaml", "data.constants.question", "already"],
    {"task.yaml": native(**{WITH_DATA: "    data: {path: data.jsonl, constants: {question: x}}"})},
)
add(
    "native3-join-replaces-a-column",
    RUN,
    ["keys.jsonl", "row 1", "label"],
    {
        "task.yaml": native(**{WITH_DATA: "    data: {path: data.jsonl, join: keys.jsonl}"}),
        "keys.jsonl": jsonl([{"label": 0}, {"label": 0}, {"label": 0}]),
    },
)
CSV_TASK = native(
    **{
        WITH_DATA: "    data: {path: data.csv, columns: [question, a, b, label]}",
        '"{{ choices }}"': '"{{ [a, b] }}"',
        "{{ label }}": "{{ label | int(-1) }}",
    }
)
add(
    "native3-csv-columns-and-a-header",
    RUN,
    ["data.csv:1", "columns", "header"],
    {"task.yaml": CSV_TASK, "data.csv": "question,a,b,label\n2+2?,3,4,1\n1+1?,2,5,0\n"},
)
add(  # two MMLU files joined end to end: the second's header line is line 3, refused as it is read
    "native3-csv-header-mid-file",
    RUN,
    ["data.csv:3", "repeats the columns given", "column names"],
    {
        "task.yaml": CSV_TASK.replace("{{ label | int(-1) }}", "{{ 'AB'.index(label) }}"),
        "data.csv": "2+2?,3,4,B\n1+1?,2,5,A\nquestion,a,b,label\n3+3?,6,7,A\n",
    },
)
add(
    "native3-csv-columns-twice",
    RUN,
    ["task.yaml:4", "columns", "label", "twice"],
    {"task.yaml": CSV_TASK.replace("[question, a, b, label]", "[question, a, label, label]"), "data.csv": "q,3,4,1\n"},
)
add(
    "native3-columns-on-jsonl",
    RUN,
    ["task.yaml", "data.columns", "jsonl"],
    {"task.yaml": native(**{WITH_DATA: "    data: {path: data.jsonl, columns: [question, choices, label]}"})},
)
add(
    "native3-records-key-on-jsonl",
    RUN,
    ["task.yaml", "data.records_key", "jsonl"],
    {"task.yaml": native(**{WITH_DATA: "    data: {path: data.jsonl, records_key: rows}"})},
)
add(
    "native3-split-without-hub",
    RUN,
    ["task.yaml:4", "split", "hub"],
    {"task.yaml": native(**{WITH_DATA: "    data: {path: data.jsonl, split: train}"})},
)
add(
    "native3-filter-gives-text-false",
    RUN,
    ["data.jsonl", "row 1", "data.filter", "'False'"],
    {
        "task.yaml": native(**{WITH_DATA: '    data: {path: data.jsonl, filter: "{{ keep }}"}'}),
        "data.jsonl": rows({"keep": "False"}, {"keep": "True"}, {"keep": "True"}),
    },
)
add(
    "native3-fewshot-source-missing",
    RUN,
    ["task.yaml", "fewshot.source", "dev.jsonl"],
    {"task.yaml": more("    fewshot: {count: 1, source: {path: dev.jsonl}}\n")},
)

# --- YAML ------------------------------------------------------------------------------------------------------------
MERGED = """\
tasks:
  - &first
    name: a
    kind: multiple_choice
    data: data.jsonl
    prompt: "Q: {{ question }}"
    choices: "{{ choices }}"
    target: "{{ label }}"
  - <<: *first
    name: b
    prompt: "Question: {{ question }}"
    promtp: x
"""
# YAML's merge key: a task's own keys override the merged ones (proctor called that a duplicate key)
add("native3-yaml-merge-key-overridden", RUN, ["task.yaml:12", "promtp"], {"task.yaml": MERGED})
