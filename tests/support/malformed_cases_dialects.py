"""Malformed inputs in the upstream formats of the dialects (lm-evaluation-harness, GLM-130B, SEA-HELM, probsem,
AISteer360) for tests/cross_cutting/test_malformed_inputs.py, beyond the other malformed_cases files: each was
seen to end in a traceback, an internal error, a raw library exception, an error only after the model ran, or a
run that completed on nonsense (a silent number) before its fix."""

from __future__ import annotations

from tests.support.malformed_cases import Case, jsonl
from tests.support.malformed_cases_lmeval import LM_GENERATE, LM_LOCAL, LOCAL_RUN, local
from tests.support.malformed_cases_more import LM_TEMPLATE, SEAHELM_RUN, _first, lm, seahelm

DIALECTS: list[Case] = []


def add(id, args, expect, files=None, before_model=True, setup=None, code=None):
    assert id.startswith("dial3-"), id
    DIALECTS.append(Case(id, list(args), list(expect), dict(files or {}), before_model, setup, code))


LM_RUN = ["run", "quiz/quiz.yaml", "-o", "out", "--lmeval-data", "example/quiz:small=data"]

# --- lm-evaluation-harness --------------------------------------------------------------------------------
add(  # lm-eval passes the entry's other keys to exact_match: a TypeError while scoring, after the model ran
    "dial3-lmeval-metric-argument-misspelt",
    LM_RUN,
    ["quiz.yaml", "metric_list[0].ignroe_case", "ignore_case"],
    lm(LM_GENERATE + "metric_list:\n  - metric: exact_match\n    ignroe_case: true\n"),
)
EXACT_MATCH = "metric_list:\n  - metric: exact_match\n    regexes_to_ignore: "
add(  # re.sub over a number: a TypeError while scoring (lm-eval's fallback call fails too)
    "dial3-lmeval-exact-match-regexes-number",
    LM_RUN,
    ["quiz.yaml", "metric_list[0].regexes_to_ignore", "5"],
    lm(LM_GENERATE + EXACT_MATCH + "5\n"),
)
add(
    "dial3-lmeval-exact-match-regex-does-not-compile",
    LM_RUN,
    ["quiz.yaml", "metric_list[0].regexes_to_ignore", "compile"],
    lm(LM_GENERATE + EXACT_MATCH + "['(']\n"),
)
add(  # lm-eval pops keys from it: "AttributeError: 'int' object has no attribute 'pop'"
    "dial3-lmeval-dataset-kwargs-not-mapping",
    LOCAL_RUN,
    ["quiz.yaml", "dataset_kwargs", "mapping"],
    local(
        LM_LOCAL.replace(
            "dataset_kwargs:\n  data_files:\n    train: quiz/train.jsonl\n    test: quiz/test.jsonl\n",
            "dataset_kwargs: 5\n",
        )
    ),
)
add(  # was "dataset not available offline: 'None' config 'None'"
    "dial3-lmeval-dataset-path-missing",
    LM_RUN,
    ["quiz.yaml", "dataset_path", "missing"],
    lm(LM_TEMPLATE.replace("dataset_path: example/quiz\n", "")),
)
add(  # was "TypeError: Can't compile non template nodes" while building the requests
    "dial3-lmeval-description-number",
    LM_RUN,
    ["quiz.yaml", "description", "text"],
    lm(LM_TEMPLATE + "description: 5\n"),
)
add(  # an index as the continuation: the model's tokeniser fails on it after loading (proctor: "choice 0 is empty")
    "dial3-lmeval-loglikelihood-target-index",
    LM_RUN,
    ["quiz.yaml", "row 1", "doc_to_target", "int", "text"],
    lm(LM_TEMPLATE.replace("multiple_choice", "loglikelihood").replace("doc_to_choice: options\n", "")),
)

add(  # lm-eval passes every key to TaskConfig: "TypeError: TaskConfig.__init__() got an unexpected keyword argument"
    "dial3-lmeval-task-key-misspelt",
    LM_RUN,
    ["quiz.yaml", "doc_to_txt", "doc_to_text"],
    lm(LM_TEMPLATE + "doc_to_txt: hi\n"),
)
FILTER = "filter_list:\n  - name: f\n    filter:\n      - function: "
add(  # lm-eval makes a filter only when it applies it: a TypeError after the model ran
    "dial3-lmeval-filter-setting-misspelt",
    LM_RUN,
    ["quiz.yaml", "filter_list[0].filter[0]", "regex_patern"],
    lm(LM_GENERATE + FILTER + "regex\n        regex_patern: 'a'\n"),
)
add(  # TakeKFilter pops its 'k': a KeyError after the model ran
    "dial3-lmeval-filter-setting-missing",
    LM_RUN,
    ["quiz.yaml", "filter_list[0].filter[0]", "take_first_k", "k"],
    lm(LM_GENERATE + FILTER + "take_first_k\n"),
)

# --- SEA-HELM ---------------------------------------------------------------------------------------------
add(  # SEA-HELM's aggregate_metrics reads results[metric]: a KeyError upstream; proctor showed "—" and exited 0
    "dial3-seahelm-metric-not-reported",
    SEAHELM_RUN + ["-m", "{model}"],
    ["config.yaml", "sentiment.metric", "no_such_metric", "normalized_accuracy"],
    setup=seahelm(config_edit=_first("metric: normalized_accuracy", "metric: no_such_metric")),
    before_model=False,
)

SETTING = "  metric: normalized_accuracy\n"
for name, extra, expect in [
    # an internal error after generation ("ValueError: invalid literal for int()"); SEA-HELM's min() fails on it
    ("max-n-runs-text", "  max_n_runs: two\n", ["sentiment.max_n_runs", "two"]),
    # an internal error after the model loaded ("could not convert string to float")
    ("temperature-text", "  temperature: hot\n", ["sentiment.temperature", "hot"]),
    # SEA-HELM's aggregate_metrics knows macro-average and micro-average only; proctor read "micro" and exited 0
    (
        "aggregation-type-unknown",
        "  aggregation_group: sa\n  aggregation_type: micro\n",
        ["sentiment.aggregation_type", "micro-average"],
    ),
]:
    add(
        f"dial3-seahelm-{name}",
        SEAHELM_RUN,
        ["config.yaml", *expect],
        setup=seahelm(config_edit=_first(SETTING, SETTING + extra)),
    )
add(  # upstream reads results[5]: a KeyError; proctor showed "—" and exited 0
    "dial3-seahelm-metric-number",
    SEAHELM_RUN,
    ["config.yaml", "sentiment.metric", "int"],
    setup=seahelm(config_edit=_first("metric: normalized_accuracy", "metric: 5")),
)

# --- GLM-130B ---------------------------------------------------------------------------------------------
GLM_GEN = 'name: "g"\ntype: "gen"\npath: "data"\nfile-pattern: "**/test.jsonl"\n'
GLM_GEN_RUN = ["run", "glm.yaml", "-o", "out", "--data-path", "."]
add(  # GLM tokenizes the targets (a number fails there); proctor compared answers with "5" and exited 0
    "dial3-glm-gen-targets-number",
    GLM_GEN_RUN,
    ["test.jsonl", "row 2", "targets_pretokenized", "int"],
    {
        "glm.yaml": GLM_GEN,
        "data/test.jsonl": jsonl(
            [
                {"inputs_pretokenized": "Q: 1+1?", "targets_pretokenized": ["2"]},
                {"inputs_pretokenized": "Q: 2+2?", "targets_pretokenized": 4},
            ]
        ),
    },
)
