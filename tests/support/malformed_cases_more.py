"""More malformed inputs for tests/cross_cutting/test_malformed_inputs.py, by category: truncated, binary and
empty files, encodings and byte-order marks, unicode, duplicate keys, wrong types, huge or impossible values,
every dialect (native, probsem, GLM-130B, SEA-HELM, lm-eval, use cases), images, run folders, command-line
values, and problems that only show while a task runs (``{model}``: a small local model)."""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import shutil
import sqlite3
from pathlib import Path

from tests.conftest import SHARED
from tests.support.malformed_cases import (
    GEN,
    GLM,
    GLM_ROWS,
    NATIVE,
    PROBSEM_PROMPT,
    PROBSEM_SUITE,
    ROWS,
    USECASE,
    Case,
    jsonl,
    native,
)

MORE: list[Case] = []
RUN = ["run", "task.yaml", "-o", "out"]


def add(id, args, expect, files=None, before_model=True, setup=None, code=None):
    MORE.append(Case(id, list(args), list(expect), dict(files or {}), before_model, setup, code))


def png(size=(4, 4), colour=(200, 30, 30)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def with_field(**fields) -> str:
    """The native task with extra fields after ``metrics``."""
    extra = "".join(f"\n    {k}: {v}" for k, v in fields.items())
    return native(**{"metrics: [acc]": "metrics: [acc]" + extra})


# --- files: truncated, binary, empty ----------------------------------------------------------------
add("file-yaml-binary", RUN, ["task.yaml"], {"task.yaml": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00"})
add("file-yaml-truncated-mid-key", RUN, ["task.yaml"], {"task.yaml": NATIVE[: NATIVE.index("choices") + 4]})
add(
    "file-yaml-truncated-in-quote",
    RUN,
    ["task.yaml:5", "quoted scalar"],
    {"task.yaml": NATIVE[: NATIVE.index("Q: ") + 5]},
)
add("file-yaml-only-comment", RUN, ["task.yaml"], {"task.yaml": "# nothing here\n"})
add("file-yaml-nul-byte", RUN, ["task.yaml"], {"task.yaml": NATIVE.replace("arith", "ar\x00ith").encode()})
add("file-yaml-scalar-document", RUN, ["task.yaml"], {"task.yaml": "just a sentence\n"})
add("file-yaml-list-document", RUN, ["task.yaml"], {"task.yaml": "- a\n- b\n"})
add("file-yaml-two-documents", RUN, ["task.yaml"], {"task.yaml": NATIVE + "---\n" + NATIVE})
add("file-data-binary-jsonl", RUN, ["data.jsonl", "line 1"], {"data.jsonl": b"\x00\x01\x02\x03binary\n"})
add("file-data-gzip-named-jsonl", RUN, ["data.jsonl"], {"data.jsonl": b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"})
add(
    "file-data-truncated-last-line",
    RUN,
    ["data.jsonl", "line 3"],
    {"data.jsonl": jsonl(ROWS[:2]) + '{"id": "c", "quest'},
)
add("file-data-whitespace-only", RUN, ["data.jsonl", "empty"], {"data.jsonl": "   \n\t\n"})
add(
    "file-data-json-truncated",
    RUN,
    ["data.json:1", "json"],
    {"task.yaml": native(**{"data.jsonl": "data.json"}), "data.json": json.dumps(ROWS)[:40]},
)
add(
    "file-data-csv-nul",
    RUN,
    ["data.csv:2", "nul"],
    {
        "task.yaml": native(**{"data.jsonl": "data.csv", '"{{ choices }}"': '"{{ [a, b] }}"'}),
        "data.csv": "question,a,b,label\nq,x\x00,y,0\n",
    },
)
add(
    "file-data-parquet-empty-file",
    RUN,
    ["data.parquet"],
    {"task.yaml": native(**{"data.jsonl": "data.parquet"}), "data.parquet": b""},
)
add(
    "file-data-arrow-garbage",
    RUN,
    ["data.arrow"],
    {"task.yaml": native(**{"data.jsonl": "data.arrow"}), "data.arrow": b"ARROW1\x00\x00garbage"},
)
add("file-data-folder-empty", RUN, ["datadir"], {"task.yaml": native(**{"data.jsonl": "datadir"}), "datadir/.keep": ""})
add(
    "file-probsem-suite-binary",
    ["run", "p.txt", "-o", "out"],
    ["p_A.json"],
    {"p.txt": PROBSEM_PROMPT, "p_A.json": b"\x89PNG\r\n\x1a\n"},
)
add(
    "file-glm-data-binary",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["test.jsonl"],
    {"glm.yaml": GLM, "data/test.jsonl": b"\xff\xfe\x00\x01"},
)
add("file-usecase-empty", ["run", "uc.py", "-o", "out"], ["uc.py", "UseCase"], {"uc.py": ""})
add("file-usecase-binary", ["run", "uc.py", "-o", "out"], ["uc.py"], {"uc.py": b"\x7fELF\x02\x01\x01\x00\x00"})

# --- encodings and byte-order marks -------------------------------------------------------------------
add("enc-yaml-utf16", RUN, ["task.yaml", "utf-8"], {"task.yaml": NATIVE.encode("utf-16")})
add("enc-yaml-latin1", RUN, ["task.yaml:5", "utf-8"], {"task.yaml": native(**{"Q: ": "Frage (é): "}).encode("latin-1")})
add("enc-data-utf16-jsonl", RUN, ["data.jsonl", "utf-8"], {"data.jsonl": jsonl(ROWS).encode("utf-16")})
add(
    "enc-data-latin1-row-3",
    RUN,
    ["data.jsonl", "line 3", "utf-8"],
    {
        "data.jsonl": jsonl(ROWS[:2]).encode()
        + '{"id": "c", "question": "caf\u00e9?", "choices": ["6", "9"], "label": 0}\n'.encode("latin-1")
    },
)
add(
    "enc-data-csv-cp1252",
    RUN,
    ["data.csv", "utf-8"],
    {
        "task.yaml": native(
            **{"data.jsonl": "data.csv", '"{{ choices }}"': '"{{ [a, b] }}"', "{{ label }}": "{{ label | int }}"}
        ),
        "data.csv": "question,a,b,label\n\u201cquoted\u201d,x,y,0\n".encode("cp1252"),
    },
)
add(
    "enc-probsem-suite-utf16",
    ["run", "p.txt", "-o", "out"],
    ["p_A.json"],
    {"p.txt": PROBSEM_PROMPT, "p_A.json": json.dumps(PROBSEM_SUITE).encode("utf-16")},
)
add(
    "enc-glm-yaml-latin1",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["glm.yaml", "utf-8"],
    {"glm.yaml": (GLM + "# r\u00e9sum\u00e9\n").encode("latin-1"), "data/test.jsonl": jsonl(GLM_ROWS)},
)
add(
    "enc-usecase-config-latin1",
    ["run", "uc.py", "-o", "out", "--use-case-config", "cfg.yaml"],
    ["cfg.yaml", "utf-8"],
    {"uc.py": USECASE, "cfg.yaml": "gen_kwargs: {max_new_tokens: 4}  # d\u00e9j\u00e0\n".encode("latin-1")},
)
add(
    "enc-bom-yaml-still-checked",
    RUN,
    ["task.yaml", "promtp"],
    {"task.yaml": b"\xef\xbb\xbf" + native(**{"metrics: [acc]": "metrics: [acc]\n    promtp: x"}).encode()},
)
add(
    "enc-bom-jsonl-bad-row",
    RUN,
    ["data.jsonl", "row 2", "target"],
    {"data.jsonl": b"\xef\xbb\xbf" + jsonl([ROWS[0], {**ROWS[1], "label": 7}]).encode()},
)
add(
    "enc-bom-csv-missing-column",
    RUN,
    ["data.csv", "row 2", "questoin"],
    {
        "task.yaml": native(
            **{
                "data.jsonl": "data.csv",
                "{{ question }}": "{{ questoin }}",
                '"{{ choices }}"': '"{{ [a, b] }}"',
                "{{ label }}": "{{ label | int }}",
            }
        ),
        "data.csv": b"\xef\xbb\xbfquestion,a,b,label\nq,x,y,0\n",
    },
)

# --- unicode in names and fields ---------------------------------------------------------------------
add(
    "uni-undefined-variable",
    RUN,
    ["data.jsonl", "row 1", "fr\u00e4ge"],
    {"task.yaml": native(**{"{{ question }}": "{{ fr\u00e4ge }}"})},
)
add(
    "uni-target-not-a-choice",
    RUN,
    ["data.jsonl", "row 1", "target", "\u56db"],
    {
        "task.yaml": native(**{"{{ label }}": "{{ answer }}"}),
        "data.jsonl": jsonl([{**r, "answer": "\u56db"} for r in ROWS]),
    },
)
add("uni-task-name-newline", RUN, ["task.yaml", "name"], {"task.yaml": native(**{"name: arith": 'name: "ari\\nth"'})})
add("uni-task-name-empty", RUN, ["task.yaml", "name"], {"task.yaml": native(**{"name: arith": 'name: ""'})})
add("uni-tasks-glob-unicode", RUN + ["--tasks", "\u00e4rith*"], ["\u00e4rith*", "arith"])
add(
    "uni-data-path-unicode-missing",
    RUN,
    ["d\u00e4ta.jsonl"],
    {"task.yaml": native(**{"data.jsonl": "d\u00e4ta.jsonl"})},
)
add(
    "uni-emoji-choice-empty-after-strip",
    RUN,
    ["data.jsonl", "row 2", "choices"],
    {"data.jsonl": jsonl([ROWS[0], {**ROWS[1], "choices": ["\U0001f600", "\u3000"]}])},
)
add(
    "uni-lone-surrogate-json",
    RUN,
    ["data.jsonl", "line 2"],
    {"data.jsonl": jsonl(ROWS[:1]) + '{"id": "b", "question": "\\ud800", "choices": ["a", "b"], "label": 0}\n'},
    before_model=True,
)
add(
    "uni-probsem-query-empty",
    ["run", "p.txt", "-o", "out"],
    ["p_A.json", "queries"],
    {"p.txt": PROBSEM_PROMPT, "p_A.json": json.dumps({**PROBSEM_SUITE, "queries": ["\u771f", ""]})},
)
add(
    "uni-glm-choice-blank",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["test.jsonl", "row 2", "choices"],
    {
        "glm.yaml": GLM,
        "data/test.jsonl": jsonl([GLM_ROWS[0], {**GLM_ROWS[1], "choices_pretokenized": ["\u7eff", " "]}]),
    },
)

# --- duplicate keys ----------------------------------------------------------------------------------
add(
    "dup-yaml-task-key",
    RUN,
    ["task.yaml", "duplicate", "prompt"],
    {"task.yaml": native(**{"    metrics: [acc]": "    metrics: [acc]\n    prompt: again"})},
)
add("dup-yaml-top-key", RUN, ["task.yaml", "duplicate", "tasks"], {"task.yaml": NATIVE + "tasks: []\n"})
add(
    "dup-json-key-in-row",
    RUN,
    ["data.jsonl", "line 2", "label"],
    {"data.jsonl": jsonl(ROWS[:1]) + '{"id": "b", "question": "q", "choices": ["a", "b"], "label": 0, "label": 1}\n'},
)
add(
    "dup-json-key-in-json-file",
    RUN,
    ["data.json", "label"],
    {
        "task.yaml": native(**{"data.jsonl": "data.json"}),
        "data.json": '[{"question": "q", "choices": ["a", "b"], "label": 0, "label": 1}]',
    },
)
add(
    "dup-csv-column",
    RUN,
    ["data.csv", "label"],
    {
        "task.yaml": native(
            **{"data.jsonl": "data.csv", '"{{ choices }}"': '"{{ [a, b] }}"', "{{ label }}": "{{ label | int }}"}
        ),
        "data.csv": "question,a,b,label,label\nq,x,y,0,1\n",
    },
)
add(
    "dup-probsem-suite-key",
    ["run", "p.txt", "-o", "out"],
    ["p_A.json", "queries"],
    {
        "p.txt": PROBSEM_PROMPT,
        "p_A.json": '{"pretext": "", "posttext": "", "queries": ["a", "b"], "queries": ["c"], '
        '"context": [{"text": "x", "expected": 0}]}',
    },
)
add(
    "dup-glm-key-both-spellings",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["glm.yaml", "micro_batch_size"],
    {"glm.yaml": GLM + "micro_batch_size: 4\n", "data/test.jsonl": jsonl(GLM_ROWS)},
)
add(
    "dup-glm-json-key",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["test.jsonl", "label"],
    {
        "glm.yaml": GLM,
        "data/test.jsonl": jsonl(GLM_ROWS[:1])
        + '{"inputs_pretokenized": "x", "choices_pretokenized": ["a", "b"], "label": 0, "label": 1}\n',
    },
)
add(
    "dup-task-names-two-files",
    ["run", "task.yaml", "other.yaml", "-o", "out"],
    ["other.yaml", "arith", "task.yaml"],
    {"other.yaml": NATIVE},
)
add(
    "dup-task-names-validate",
    ["validate", "task.yaml", "other.yaml"],
    ["other.yaml", "arith", "task.yaml"],
    {"other.yaml": NATIVE},
)
add(
    "dup-task-names-in-folder",
    ["run", "tasks", "-o", "out"],
    ["arith", "a.yaml", "b.yaml"],
    {
        "tasks/a.yaml": NATIVE.replace("data.jsonl", "../data.jsonl"),
        "tasks/b.yaml": NATIVE.replace("data.jsonl", "../data.jsonl"),
    },
)

# --- wrong types -------------------------------------------------------------------------------------
add("type-kind-number", RUN, ["task.yaml", "kind"], {"task.yaml": native(**{"kind: multiple_choice": "kind: 3"})})
add(
    "type-prompt-list",
    RUN,
    ["task.yaml", "prompt"],
    {"task.yaml": native(**{'prompt: "Q: {{ question }}\\nA:"': "prompt: [a, b]"})},
)
add("type-data-number", RUN, ["task.yaml", "data"], {"task.yaml": native(**{"data: data.jsonl": "data: 5"})})
add(
    "type-metrics-mapping",
    RUN,
    ["task.yaml", "metrics"],
    {"task.yaml": native(**{"metrics: [acc]": "metrics: {acc: 1}"})},
)
add("type-fewshot-number", RUN, ["task.yaml", "fewshot"], {"task.yaml": with_field(fewshot=3)})
add(
    "type-generation-max-tokens-text",
    RUN,
    ["task.yaml", "max_tokens"],
    {"task.yaml": GEN.replace("max_tokens: 4", "max_tokens: many")},
)
add(
    "type-generation-stop-number",
    RUN,
    ["task.yaml", "stop"],
    {"task.yaml": GEN.replace("max_tokens: 4", "max_tokens: 4, stop: 5")},
)
add("type-tasks-mapping", RUN, ["task.yaml", "tasks"], {"task.yaml": "tasks:\n  arith: {kind: generate}\n"})
add("type-name-list", RUN, ["task.yaml", "name"], {"task.yaml": native(**{"name: arith": "name: [a, b]"})})
add(
    "type-choices-number-literal",
    RUN,
    ["task.yaml", "choices"],
    {"task.yaml": native(**{'choices: "{{ choices }}"': "choices: 5"})},
)
add(
    "type-glm-metrics-number",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["glm.yaml", "metrics"],
    {"glm.yaml": GLM + "metrics: 5\n", "data/test.jsonl": jsonl(GLM_ROWS)},
)
add(
    "type-glm-file-pattern-list",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["glm.yaml", "file-pattern"],
    {
        "glm.yaml": GLM.replace('file-pattern:\n  test: "**/test.jsonl"', "file-pattern: [a, b]"),
        "data/test.jsonl": jsonl(GLM_ROWS),
    },
)
add(
    "type-glm-bool-batch",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["glm.yaml", "micro-batch-size"],
    {"glm.yaml": GLM.replace("micro-batch-size: 2", "micro-batch-size: true"), "data/test.jsonl": jsonl(GLM_ROWS)},
)
add(
    "type-glm-inputs-number",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["test.jsonl", "row 2"],
    {"glm.yaml": GLM, "data/test.jsonl": jsonl([GLM_ROWS[0], {**GLM_ROWS[1], "choices_pretokenized": "red"}])},
)
add(
    "type-probsem-queries-text",
    ["run", "p.txt", "-o", "out"],
    ["p_A.json", "queries"],
    {"p.txt": PROBSEM_PROMPT, "p_A.json": json.dumps({**PROBSEM_SUITE, "queries": "True"})},
)
add(
    "type-probsem-context-text-number",
    ["run", "p.txt", "-o", "out"],
    ["p_A.json", "text"],
    {"p.txt": PROBSEM_PROMPT, "p_A.json": json.dumps({**PROBSEM_SUITE, "context": [{"text": 5, "expected": 0}]})},
)
add(
    "type-probsem-pretext-list",
    ["run", "p.txt", "-o", "out"],
    ["p_A.json", "pretext"],
    {"p.txt": PROBSEM_PROMPT, "p_A.json": json.dumps({**PROBSEM_SUITE, "pretext": ["a"]})},
)
add(
    "type-probsem-expected-text",
    ["run", "p.txt", "-o", "out"],
    ["p_A.json", "expected"],
    {
        "p.txt": PROBSEM_PROMPT,
        "p_A.json": json.dumps({**PROBSEM_SUITE, "context": [{"text": "x", "expected": "zero"}]}),
    },
)
add(
    "type-usecase-config-batch-text",
    ["run", "uc.py", "-o", "out", "--use-case-config", "cfg.yaml"],
    ["cfg.yaml", "batch_size"],
    {"uc.py": USECASE, "cfg.yaml": "batch_size: many\n"},
)
add(
    "type-usecase-config-list",
    ["run", "uc.py", "-o", "out", "--use-case-config", "cfg.yaml"],
    ["cfg.yaml", "mapping"],
    {"uc.py": USECASE, "cfg.yaml": "- a\n"},
)
add(
    "type-usecase-config-unknown-key",
    ["run", "uc.py", "-o", "out", "--use-case-config", "cfg.yaml"],
    ["cfg.yaml", "gen_kwarg"],
    {"uc.py": USECASE, "cfg.yaml": "gen_kwarg: {}\n"},
)
add(
    "type-usecase-data-not-list",
    ["run", "uc.py", "-o", "out"],
    ["uc.py", "evaluation_data"],
    {"uc.py": USECASE.replace('[{"id": "1", "question": "hi"}]', "5")},
)
add(
    "type-usecase-row-not-object",
    ["run", "uc.py", "-o", "out"],
    ["row 1", "object"],
    {"uc.py": USECASE.replace('[{"id": "1", "question": "hi"}]', '["hi"]')},
)

# --- huge and impossible values ------------------------------------------------------------------------
add("huge-limit-inf", RUN + ["--limit", "1e400"], ["--limit"])
add("huge-limit-nan", RUN + ["--limit", "nan"], ["--limit"])
add("huge-limit-one-point-five", RUN + ["--limit", "1.5"], ["--limit"])
add(
    "huge-temperature-negative",
    ["run", "gen.yaml", "-o", "out", "--temperature", "-1"],
    ["--temperature"],
    {"gen.yaml": GEN},
)
add(
    "huge-temperature-nan",
    ["run", "gen.yaml", "-o", "out", "--temperature", "nan"],
    ["--temperature"],
    {"gen.yaml": GEN},
)
add("huge-top-p-above-one", ["run", "gen.yaml", "-o", "out", "--top-p", "1.5"], ["--top-p"], {"gen.yaml": GEN})
add("huge-max-tokens-zero", ["run", "gen.yaml", "-o", "out", "--max-tokens", "0"], ["--max-tokens"], {"gen.yaml": GEN})
add(
    "huge-max-tokens-negative",
    ["run", "gen.yaml", "-o", "out", "--max-tokens", "-3"],
    ["--max-tokens"],
    {"gen.yaml": GEN},
)
add("huge-epochs-zero", ["run", "gen.yaml", "-o", "out", "--epochs", "0"], ["--epochs"], {"gen.yaml": GEN})
add("huge-num-fewshot-negative", RUN + ["--num-fewshot", "-1"], ["--num-fewshot"])
add("huge-num-fewshot-too-many", RUN + ["--num-fewshot", "1000000000"], ["fewshot", "count"])
add(
    "huge-fewshot-count-in-yaml",
    RUN,
    ["fewshot", "count"],
    {"task.yaml": with_field(fewshot="{count: 99999999999999999999}")},
)
add(
    "huge-generation-max-tokens-zero",
    RUN,
    ["task.yaml", "max_tokens"],
    {"task.yaml": GEN.replace("max_tokens: 4", "max_tokens: 0")},
)
add("huge-limit-in-yaml-negative", RUN, ["task.yaml", "limit"], {"task.yaml": with_field(limit=-5)})
add(
    "huge-glm-max-seq-length-zero",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["glm.yaml", "max_seq_length"],
    {"glm.yaml": GLM + "max_seq_length: 0\n", "data/test.jsonl": jsonl(GLM_ROWS)},
)
add(
    "huge-glm-micro-batch-zero",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["glm.yaml:6", "micro-batch-size"],
    {"glm.yaml": GLM.replace("micro-batch-size: 2", "micro-batch-size: 0"), "data/test.jsonl": jsonl(GLM_ROWS)},
)
add(
    "huge-glm-num-beams-zero",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["glm.yaml", "num_beams"],
    {"glm.yaml": GLM.replace('"mul"', '"gen"') + "num_beams: 0\n", "data/test.jsonl": jsonl(GLM_ROWS)},
)
add(
    "huge-glm-max-gen-length-negative",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["glm.yaml", "max_gen_length"],
    {"glm.yaml": GLM.replace('"mul"', '"gen"') + "max_gen_length: -8\n", "data/test.jsonl": jsonl(GLM_ROWS)},
)
add(
    "huge-label-beyond-int64",
    RUN,
    ["data.jsonl", "row 2", "target"],
    {
        "data.jsonl": jsonl(ROWS[:1])
        + '{"id": "b", "question": "q", "choices": ["a", "b"], "label": 123456789012345678901234567890}\n'
    },
)
add(
    "huge-label-infinity",
    RUN,
    ["data.jsonl", "row 2", "target"],
    {"data.jsonl": jsonl(ROWS[:1]) + '{"id": "b", "question": "q", "choices": ["a", "b"], "label": Infinity}\n'},
)
add("huge-seahelm-runs-negative", RUN + ["--seahelm-runs", "-2"], ["--seahelm-runs"])
add("huge-chunk-size-negative", RUN + ["--chunk-size", "-1"], ["--chunk-size"])
add("huge-workers-negative", RUN + ["--workers", "-3"], ["--workers"])
add("huge-gpus-per-worker-negative", RUN + ["--gpus-per-worker", "-1"], ["--gpus-per-worker"])

# --- command-line values ------------------------------------------------------------------------------
add(
    "cli-gen-kwargs-no-equals",
    ["run", "gen.yaml", "-o", "out", "--gen-kwargs", "temperature"],
    ["--gen-kwargs", "temperature"],
    {"gen.yaml": GEN},
)
add(
    "cli-gen-kwargs-unknown-key",
    ["run", "gen.yaml", "-o", "out", "--gen-kwargs", "temprature=0.5"],
    ["--gen-kwargs", "temprature"],
    {"gen.yaml": GEN},
)
add(
    "cli-gen-kwargs-bad-value",
    ["run", "gen.yaml", "-o", "out", "--gen-kwargs", "max_gen_toks=lots"],
    ["max_gen_toks"],
    {"gen.yaml": GEN},
)
add(
    "cli-epoch-reducer-unknown",
    ["run", "gen.yaml", "-o", "out", "--epochs", "2", "--epoch-reducer", "best"],
    ["--epoch-reducer", "best"],
    {"gen.yaml": GEN},
)
add(
    "cli-epoch-reducer-pass-too-many",
    ["run", "gen.yaml", "-o", "out", "--epochs", "2", "--epoch-reducer", "pass@5"],
    ["pass@5"],
    {"gen.yaml": GEN},
)
add(
    "cli-epoch-reducer-pass-zero",
    ["run", "gen.yaml", "-o", "out", "--epochs", "2", "--epoch-reducer", "pass@0"],
    ["pass@0"],
    {"gen.yaml": GEN},
)
add("cli-output-empty-string", ["run", "task.yaml", "-o", ""], ["--output"])
add(
    "cli-output-not-a-run-folder",
    RUN,
    ["--output", "out", "not a proctor run folder", "results.json"],
    {"out/results.json": '{"mine": true}', "out/samples.jsonl": "keep\n"},
    code=2,
)
add(
    "cli-output-not-a-run-folder-restart",
    RUN + ["--restart"],
    ["--output", "out", "not a proctor run folder"],
    {"out/notes.txt": "mine"},
)
add("cli-data-dir-is-file", RUN + ["--data-dir", "data.jsonl"], ["--data-dir", "data.jsonl"])
add(
    "cli-data-path-is-file",
    ["run", "glm.yaml", "-o", "out", "--data-path", "glm.yaml"],
    ["--data-path", "glm.yaml"],
    {"glm.yaml": GLM},
)
add(
    "cli-validate-data-path-missing",
    ["validate", "glm.yaml", "--data-path", "nowhere"],
    ["--data-path", "nowhere"],
    {"glm.yaml": GLM, "data/test.jsonl": jsonl(GLM_ROWS)},
)
add("cli-lmeval-data-no-equals", RUN + ["--lmeval-data", "example/quiz"], ["--lmeval-data"])
add("cli-lmeval-data-file-missing", RUN + ["--lmeval-data-file", "nomap.yaml"], ["nomap.yaml"])
add(
    "cli-lmeval-include-missing",
    ["run", "lm_eval:quiz", "-o", "out", "--lmeval-include", "nowhere"],
    ["--lmeval-include", "nowhere"],
)
add(
    "cli-use-case-data-missing",
    ["run", "uc.py", "-o", "out", "--use-case-data", "nowhere.jsonl"],
    ["nowhere.jsonl"],
    {"uc.py": USECASE},
)
add(
    "cli-use-case-metric-unknown",
    ["run", "uc.py", "-o", "out", "--use-case-metric", "Acuracy"],
    ["Acuracy", "metric"],
    {"uc.py": USECASE},
)
add(
    "cli-use-case-metric-file-missing",
    ["run", "uc.py", "-o", "out", "--use-case-metric", "m.py:M"],
    ["m.py"],
    {"uc.py": USECASE},
)
add(
    "cli-use-case-arg-no-equals",
    ["run", "uc.py", "-o", "out", "--use-case-arg", "seed"],
    ["--use-case-arg", "seed"],
    {"uc.py": USECASE},
)
add(
    "cli-use-case-arg-typo",
    ["run", "uc.py", "-o", "out", "--use-case-arg", "num_sample=2"],
    ["uc.py", "num_sample", "num_samples"],
    {"uc.py": USECASE},
)
add(
    "cli-use-case-config-missing",
    ["run", "uc.py", "-o", "out", "--use-case-config", "nope.yaml"],
    ["nope.yaml"],
    {"uc.py": USECASE},
)
add(
    "cli-use-case-config-bad-yaml",
    ["run", "uc.py", "-o", "out", "--use-case-config", "cfg.yaml"],
    ["cfg.yaml:2", "invalid yaml"],
    {"uc.py": USECASE, "cfg.yaml": "gen_kwargs: {a: [\n"},
)
add("cli-seahelm-tasks-on-native", RUN + ["--seahelm-tasks", "seahelm"], ["--seahelm-tasks", "seahelm"])
add("cli-model-arg-batch-invariant-text", RUN + ["--model-arg", "batch_invariant=maybe"], ["batch_invariant"])
add(
    "cli-dtype-on-openai-typo",
    RUN + ["-m", "openai:x", "--base-url", "http://127.0.0.1:9/v1", "--model-arg", "endpont=chat"],
    ["endpont"],
)
add("cli-base-url-not-a-url", RUN + ["-m", "openai:x", "--base-url", "localhost"], ["--base-url", "localhost"])
add(
    "cli-base-url-credentials-masked",
    RUN + ["-m", "openai:x", "--base-url", "http://user:SECRETKEY@127.0.0.1:9"],
    ["user:***@127.0.0.1"],
    before_model=False,
)
add("cli-plugin-is-folder", RUN + ["--plugin", "plugdir"], ["plugdir"], {"plugdir/x.py": ""})
add(
    "cli-plugin-registers-bad-metric",
    RUN,
    ["task.yaml", "acc_plugged"],
    {"task.yaml": native(**{"[acc]": "[acc_plugged]"})},
)
add("cli-report-on-file", ["report", "task.yaml"], ["task.yaml"])
add("cli-compare-same-missing", ["compare", "run", "run"], ["run"])
add("cli-export-missing-run", ["export", "norun"], ["norun"])
add("cli-ls-binary-yaml", ["ls", "task.yaml"], ["task.yaml"], {"task.yaml": b"\xff\xfe\x00garbage"})
add(
    "cli-validate-not-utf8",
    ["validate", "task.yaml"],
    ["task.yaml", "utf-8"],
    {"task.yaml": b"tasks:\n  - name: \xe9\n"},
)
add("cli-unknown-command", ["runn", "task.yaml"], ["runn"])


# --- run folders ---------------------------------------------------------------------------------------
def _run_folder(folder: Path, name: str = "run") -> Path:
    """A small run folder as proctor writes it (results.json, samples.jsonl, run.json, store.sqlite)."""
    run = folder / name
    run.mkdir(parents=True, exist_ok=True)
    results = {
        "proctor_version": "0",
        "created": "2025-01-01T00:00:00+00:00",
        "command": ["proctor", "run"],
        "model": {"model": "m"},
        "status": "complete",
        "limit": None,
        "overrides": {},
        "tasks": {
            "arith": {
                "kind": "multiple_choice",
                "dialect": "native",
                "source": "task.yaml",
                "version": "0",
                "hash": "h",
                "n_samples": 1,
                "metrics": {"acc": {"value": 1.0, "stderr": None}},
                "requests": {"unique": 2},
                "timing": {"total_seconds": 0.1},
            }
        },
        "groups": {},
        "samples_bytes": 0,
    }
    record = {
        "task": "arith",
        "id": "0",
        "metrics": {"acc": 1.0},
        "choices": ["3", "4"],
        "target": 1,
        "prediction": 1,
        "correct": True,
    }
    line = json.dumps(record) + "\n"
    results["samples_bytes"] = len(line.encode())
    (run / "results.json").write_text(json.dumps(results))
    (run / "samples.jsonl").write_text(line)
    (run / "run.json").write_text(
        json.dumps(
            {"created": results["created"], "command": [], "model": {}, "model_hash": "x", "tasks": {}, "options": {}}
        )
    )
    return run


def _edit_results(change):
    def setup(folder: Path) -> None:
        run = _run_folder(folder)
        results = json.loads((run / "results.json").read_text())
        change(results)
        (run / "results.json").write_text(json.dumps(results))

    return setup


def _write_in_run(name: str, content: bytes):
    def setup(folder: Path) -> None:
        run = _run_folder(folder)
        target = run / name
        if target.is_dir():
            shutil.rmtree(target)
        target.write_bytes(content)

    return setup


def _two_runs(change):
    def setup(folder: Path) -> None:
        _run_folder(folder, "a")
        run = _run_folder(folder, "b")
        results = json.loads((run / "results.json").read_text())
        change(results)
        (run / "results.json").write_text(json.dumps(results))

    return setup


def _lock_is_folder(folder: Path) -> None:
    run = _run_folder(folder, "out")
    (run / ".lock").mkdir()


def _set(path, value):
    def change(results):
        node = results
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


def _drop(path):
    def change(results):
        node = results
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return change


add(
    "runfolder-results-truncated",
    ["report", "run"],
    ["results.json", "json"],
    setup=_write_in_run("results.json", b'{"proctor_version": "0", "tas'),
)
add(
    "runfolder-results-binary",
    ["report", "run"],
    ["results.json"],
    setup=_write_in_run("results.json", b"\x00\xff\xfe\x01"),
)
add("runfolder-results-empty", ["report", "run"], ["results.json"], setup=_write_in_run("results.json", b""))
add("runfolder-results-list", ["report", "run"], ["results.json", "object"], setup=_write_in_run("results.json", b"[]"))
add(
    "runfolder-results-value-text",
    ["report", "run"],
    ["results.json", "tasks.arith.metrics.acc.value"],
    setup=_edit_results(_set(["tasks", "arith", "metrics", "acc", "value"], "high")),
)
add(
    "runfolder-results-no-metrics",
    ["report", "run"],
    ["results.json", "tasks.arith.metrics"],
    setup=_edit_results(_drop(["tasks", "arith", "metrics"])),
)
add(
    "runfolder-results-tasks-list",
    ["report", "run"],
    ["results.json", "tasks"],
    setup=_edit_results(_set(["tasks"], [])),
)
add(
    "runfolder-results-status-odd",
    ["report", "run"],
    ["results.json", "status"],
    setup=_edit_results(_set(["status"], "done!")),
)
add(
    "runfolder-results-samples-bytes-text",
    ["report", "run"],
    ["results.json", "samples_bytes"],
    setup=_edit_results(_set(["samples_bytes"], "many")),
)
add(
    "runfolder-results-is-folder",
    ["report", "run"],
    ["results.json"],
    setup=lambda f: (_run_folder(f), (f / "run" / "results.json").unlink(), (f / "run" / "results.json").mkdir()),
)
add(
    "runfolder-samples-corrupt",
    ["report", "run"],
    ["samples.jsonl", "1"],
    setup=_write_in_run("samples.jsonl", b"{nope\n"),
)
add(
    "runfolder-samples-not-utf8",
    ["report", "run"],
    ["samples.jsonl"],
    setup=_write_in_run("samples.jsonl", b'{"task": "\xff"}\n'),
)
add(
    "runfolder-samples-not-object",
    ["report", "run"],
    ["samples.jsonl", "1"],
    setup=_write_in_run("samples.jsonl", b"[1, 2]\n"),
)
add(
    "runfolder-compare-edited-value",
    ["compare", "a", "b"],
    ["b/results.json", "value"],
    setup=_two_runs(_set(["tasks", "arith", "metrics", "acc", "value"], "high")),
)
add(
    "runfolder-compare-edited-no-metrics",
    ["compare", "a", "b"],
    ["b/results.json", "metrics"],
    setup=_two_runs(_drop(["tasks", "arith", "metrics"])),
)
add(
    "runfolder-compare-edited-n-samples",
    ["compare", "a", "b"],
    ["b/results.json", "n_samples"],
    setup=_two_runs(_set(["tasks", "arith", "n_samples"], "one")),
)
add("runfolder-compare-one-missing", ["compare", "a", "nob"], ["nob"], setup=lambda f: _run_folder(f, "a"))
add("runfolder-export-edited", ["export", "run"], ["results.json", "tasks"], setup=_edit_results(_set(["tasks"], 5)))
add(
    "runfolder-export-corrupt-samples",
    ["export", "run"],
    ["samples.jsonl"],
    setup=_write_in_run("samples.jsonl", b"{nope\n"),
)
add(
    "runfolder-resume-corrupt-manifest",
    RUN,
    ["run.json", "--restart"],
    setup=lambda f: (_run_folder(f, "out"), (f / "out" / "run.json").write_text("{broken")),
)
add(
    "runfolder-resume-manifest-list",
    RUN,
    ["run.json"],
    setup=lambda f: (_run_folder(f, "out"), (f / "out" / "run.json").write_text("[]")),
)
add(
    "runfolder-resume-store-garbage",
    RUN,
    ["response store", "run.json", "--restart"],
    setup=lambda f: (
        _run_folder(f, "out"),
        (f / "out" / "run.json").unlink(),
        (f / "out" / "store.sqlite").write_bytes(b"not a database at all" * 10),
    ),
)
add(
    "runfolder-store-without-manifest",
    RUN,
    ["store", "run.json", "--restart"],
    setup=lambda f: (f.joinpath("out").mkdir(), _sqlite(f / "out" / "store.sqlite")),
)
add("runfolder-lock-is-folder", RUN, [".lock"], setup=_lock_is_folder)
add(
    "runfolder-cache-garbage", RUN + ["--cache", "cache"], ["cache"], {"cache/cache.sqlite": b"garbage garbage garbage"}
)


def _sqlite(path: Path) -> None:
    with sqlite3.connect(str(path)) as db:
        db.execute("CREATE TABLE t (x)")


# --- images --------------------------------------------------------------------------------------------
IMAGE_TASK = native(**{"metrics: [acc]": 'metrics: [acc]\n    images: "{{ image }}"'})


def image_rows(second) -> str:
    return jsonl([{**ROWS[0], "image": "red.png"}, {**ROWS[1], "image": second}])


add(
    "image-missing-file",
    RUN,
    ["data.jsonl", "row 2", "image", "nowhere.png"],
    {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows("nowhere.png"), "red.png": png()},
)
add(
    "image-text-file-named-png",
    RUN,
    ["data.jsonl", "row 2", "image"],
    {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows("fake.png"), "red.png": png(), "fake.png": "hello"},
)
add(
    "image-truncated-png",
    RUN,
    ["data.jsonl", "row 2", "image"],
    {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows("cut.png"), "red.png": png(), "cut.png": png((64, 64))[:60]},
)
add(
    "image-empty-file",
    RUN,
    ["data.jsonl", "row 2", "image"],
    {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows("empty.png"), "red.png": png(), "empty.png": b""},
)
add(
    "image-bad-base64",
    RUN,
    ["data.jsonl", "row 2", "image"],
    {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows("data:image/png;base64,@@@@"), "red.png": png()},
)
add(
    "image-base64-not-image",
    RUN,
    ["data.jsonl", "row 2", "image"],
    {
        "task.yaml": IMAGE_TASK,
        "data.jsonl": image_rows("data:image/png;base64," + base64.b64encode(b"plain text").decode()),
        "red.png": png(),
    },
)
add(
    "image-number",
    RUN,
    ["data.jsonl", "row 2", "image"],
    {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows(5), "red.png": png()},
)
add(
    "image-is-folder",
    RUN,
    ["data.jsonl", "row 2", "image"],
    {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows("pics"), "red.png": png(), "pics/a.txt": ""},
)
add(
    "image-empty-string",
    RUN,
    ["data.jsonl", "row 2", "image"],
    {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows(""), "red.png": png()},
)
add(
    "image-mapping-without-bytes",
    RUN,
    ["data.jsonl", "row 2", "image"],
    {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows({"size": 3}), "red.png": png()},
)
add(
    "image-decompression-bomb",
    RUN,
    ["data.jsonl", "row 2", "image"],
    {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows("big.png"), "red.png": png()},
    setup=lambda f: _bomb(f / "big.png"),
)
add(
    "image-on-text-model",
    RUN + ["-m", "{model}"],
    ["image", "vision"],
    {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows("red.png"), "red.png": png()},
    before_model=False,
)


def _bomb(path: Path) -> None:
    """A PNG far past Pillow's pixel limit (a decompression bomb), a few kilobytes on disk."""
    from PIL import Image

    Image.new("1", (20000, 20000)).save(path, format="PNG")


# --- SEA-HELM (the shared sentiment_analysis config, its hub dataset mapped to a local copy) -------------
SEAHELM_ROWS = [
    {"id": i, "label": label, "prompts": [{"text": text}], "metadata": {"language": "id"}}
    for i, (label, text) in enumerate([("Positif", "Bagus"), ("Negatif", "Buruk"), ("Netral", "Biasa")])
]
SEAHELM_RUN = [
    "run",
    "sa",
    "-o",
    "out",
    "--tasks",
    "sentiment/id",
    "--seahelm-data",
    "aisingapore/NLU-Sentiment-Analysis=copy",
]


def _lines(rows) -> str:
    return "\n".join(json.dumps(r) for r in rows)


def seahelm(eval_data=None, config_edit=None):
    def setup(folder: Path) -> None:
        source = SHARED / "examples" / "seahelm" / "seahelm_tasks" / "nlu" / "sentiment_analysis"
        shutil.copytree(source, folder / "sa", dirs_exist_ok=True)
        if config_edit is not None:
            config = folder / "sa" / "config.yaml"
            config.write_text(config_edit(config.read_text(encoding="utf-8")), encoding="utf-8")
        copy = folder / "copy" / "id"
        copy.mkdir(parents=True)
        content = _lines(SEAHELM_ROWS) if eval_data is None else eval_data
        (copy / "eval.jsonl").write_bytes(content if isinstance(content, bytes) else content.encode())
        (copy / "examples.jsonl").write_text(_lines(SEAHELM_ROWS))

    return setup


def _first(old: str, new: str):
    return lambda text: text.replace(old, new, 1)


def _without_id_template(text: str) -> str:
    start = text.index("      prompt_template:")
    return text[:start] + text[text.index("    vi:") :]


for name, content, expect in [
    ("invalid-json", _lines(SEAHELM_ROWS[:1]) + "\n{bad\n", ["eval.jsonl:2", "line 2 is not valid json"]),
    ("non-utf8", (_lines(SEAHELM_ROWS[:1]) + "\n").encode() + b'{"id": "\xff"}\n', ["eval.jsonl:2", "utf-8"]),
    (
        "missing-label",
        _lines([SEAHELM_ROWS[0], {k: v for k, v in SEAHELM_ROWS[1].items() if k != "label"}]),
        ["copy", "row 2", "label"],
    ),
    ("null-label", _lines([SEAHELM_ROWS[0], {**SEAHELM_ROWS[1], "label": None}]), ["copy", "row 2", "label"]),
    ("empty", "", ["config.yaml", "copy", "no rows"]),
    (
        "missing-prompts",
        _lines([SEAHELM_ROWS[0], {k: v for k, v in SEAHELM_ROWS[1].items() if k != "prompts"}]),
        ["config.yaml", "row 2", "prompt_template"],
    ),
]:
    add(f"seahelm-data-{name}", SEAHELM_RUN, expect, setup=seahelm(content))
add(
    "seahelm-max-tokens-negative",
    SEAHELM_RUN,
    ["config.yaml", "sentiment.languages.id.max_tokens", "-8"],
    setup=seahelm(config_edit=_first("max_tokens: 32", "max_tokens: -8")),
)
add(
    "seahelm-max-tokens-text",
    SEAHELM_RUN,
    ["config.yaml", "sentiment.languages.id.max_tokens"],
    setup=seahelm(config_edit=_first("max_tokens: 32", "max_tokens: lots")),
)
add(
    "seahelm-fewshot-text",
    SEAHELM_RUN,
    ["config.yaml", "sentiment.fewshot_num_examples.instruct", "two"],
    setup=seahelm(config_edit=_first("    instruct: 0", "    instruct: two")),
)
add(
    "seahelm-fewshot-negative",
    SEAHELM_RUN,
    ["config.yaml", "fewshot_num_examples.base"],
    setup=seahelm(config_edit=_first("    base: 5", "    base: -5")),
)
add(
    "seahelm-no-prompt-template",
    SEAHELM_RUN,
    ["config.yaml", "sentiment.languages.id.prompt_template", "language 'id'"],
    setup=seahelm(config_edit=_without_id_template),
)
add(
    "seahelm-template-not-mapping",
    SEAHELM_RUN,
    ["config.yaml", "sentiment.languages.id.prompt_template"],
    setup=seahelm(
        config_edit=lambda t: _without_id_template(t).replace(
            "      max_tokens: 32\n    vi:", "      max_tokens: 32\n      prompt_template: just text\n    vi:", 1
        )
    ),
)
# str.format's mini-language in an upstream-style template: refused when the config is read, naming the template
for name, template, expect in [
    ("width", "{text:>2000000000}", ["width of 2,000,000,000"]),
    ("nested-spec", "{text:.{label}}", ["takes its format from another field"]),
    ("private-attribute", "{text.__class__}", ["private attribute"]),
    ("unbalanced", "{text", ["not a valid format template"]),
]:
    add(
        f"seahelm-task-template-{name}",
        SEAHELM_RUN,
        ["config.yaml", "sentiment.languages.id.prompt_template.task_template", *expect],
        setup=seahelm(config_edit=_first("          {text}\n", f"          {template}\n")),
    )
add(
    "seahelm-language-not-mapping",
    SEAHELM_RUN,
    ["config.yaml", "sentiment.languages"],
    setup=seahelm(config_edit=_first("  languages:\n    id:\n", "  languages:\n    xx: 5\n    id:\n")),
)
add(
    "seahelm-config-yaml-error",
    SEAHELM_RUN,
    ["config.yaml", "invalid yaml"],
    setup=seahelm(config_edit=lambda t: t + "\n  bad: [unclosed\n"),
)
add(
    "seahelm-config-not-utf8",
    SEAHELM_RUN,
    ["config.yaml", "utf-8"],
    setup=lambda f: (seahelm()(f), (f / "sa" / "config.yaml").write_bytes(b"sentiment:\n  name: caf\xe9\n")),
)
add(
    "seahelm-interpolation-to-nothing",
    SEAHELM_RUN,
    ["config.yaml", "nothing"],
    setup=seahelm(config_edit=_first("name: sentiment_analysis", "name: ${sentiment.nope}")),
)
add("seahelm-task-set-unknown", SEAHELM_RUN + ["--seahelm-tasks", "nosuchset"], ["nosuchset"], setup=seahelm())
add(
    "seahelm-data-map-missing-folder",
    [
        "run",
        "sa",
        "-o",
        "out",
        "--tasks",
        "sentiment/id",
        "--seahelm-data",
        "aisingapore/NLU-Sentiment-Analysis=nowhere",
    ],
    ["nowhere"],
    setup=seahelm(),
)
add(
    "seahelm-metric-file-without-consent",
    SEAHELM_RUN,
    ["metric_file", "--trust-task-code"],
    setup=seahelm(config_edit=_first("metric_file: src/metrics/f1_acc_metric.py", "metric_file: mine.py")),
    files={"sa/mine.py": "x = 1\n"},
)

# --- lm-eval task files ------------------------------------------------------------------------------
LM_TEMPLATE = """task: quiz
dataset_path: example/quiz
dataset_name: small
output_type: multiple_choice
test_split: test
doc_to_text: "Q: {{question}}\\nA:"
doc_to_choice: options
doc_to_target: label
"""
LM_ROWS = [
    {"question": "two plus two", "options": ["three", "four"], "label": 1},
    {"question": "sky colour", "options": ["blue", "green"], "label": 0},
]
LM_UTILS = """def shout(dataset):
    return dataset.map(lambda doc: {"question": doc["questoin"].upper()})


def text(doc):
    return doc["nope"]


def results(doc, replies):
    return {"acc": 1 / 0}


class Custom:
    pass
"""
LM_RUN = ["run", "quiz/quiz.yaml", "-o", "out", "--lmeval-data", "example/quiz:small=data"]


def lm(yaml_text: str, rows=None, **extra) -> dict:
    files = {"quiz/quiz.yaml": yaml_text, "quiz/utils.py": LM_UTILS, "data/test.jsonl": jsonl(rows or LM_ROWS)}
    files.update(extra)
    return files


add(
    "lmeval-unknown-metric",
    LM_RUN,
    ["quiz.yaml", "metric_list[0].metric", "acuracy", "acc"],
    lm(LM_TEMPLATE + "metric_list:\n  - metric: acuracy\n"),
)
add(
    "lmeval-unknown-metric-with-aggregation",
    LM_RUN,
    ["quiz.yaml", "acuracy"],
    lm(LM_TEMPLATE + "metric_list:\n  - metric: acuracy\n    aggregation: mean\n    higher_is_better: true\n"),
)
add(
    "lmeval-validate-unknown-metric",
    ["validate", "quiz/quiz.yaml", "--lmeval-data", "example/quiz:small=data"],
    ["quiz.yaml", "acuracy"],
    lm(LM_TEMPLATE + "metric_list:\n  - metric: acuracy\n"),
)
add(
    "lmeval-class-function",
    LM_RUN + ["--trust-task-code"],
    ["quiz.yaml", "class", "python task class"],
    lm(LM_TEMPLATE + "class: !function utils.Custom\n"),
)
add(
    "lmeval-hook-without-consent",
    LM_RUN,
    ["utils.shout", "--trust-task-code"],
    lm(LM_TEMPLATE + "process_docs: !function utils.shout\n"),
)
add(
    "lmeval-hook-process-docs-raises",
    LM_RUN + ["--trust-task-code"],
    ["utils.py:2", "process_docs", "questoin", "quiz.yaml"],
    lm(LM_TEMPLATE + "process_docs: !function utils.shout\n"),
)
add(
    "lmeval-hook-doc-to-text-raises",
    LM_RUN + ["--trust-task-code"],
    ["utils.py:6", "doc_to_text", "nope"],
    lm(LM_TEMPLATE.replace('doc_to_text: "Q: {{question}}\\nA:"', "doc_to_text: !function utils.text")),
)
add(
    "lmeval-hook-missing-function",
    LM_RUN + ["--trust-task-code"],
    ["quiz.yaml", "nosuch"],
    lm(LM_TEMPLATE + "process_docs: !function utils.nosuch\n"),
)
add(
    "lmeval-hook-missing-module",
    LM_RUN + ["--trust-task-code"],
    ["quiz.yaml", "nomodule"],
    lm(LM_TEMPLATE + "process_docs: !function nomodule.fn\n"),
)
add(
    "lmeval-target-out-of-range-first-doc",
    LM_RUN,
    ["quiz.yaml", "doc_to_target", "5"],
    lm(LM_TEMPLATE.replace("doc_to_target: label", "doc_to_target: 5")),
)
add(
    "lmeval-target-out-of-range-later-doc",
    LM_RUN,
    ["quiz.yaml", "row 2", "doc_to_target", "7"],
    lm(LM_TEMPLATE, rows=[LM_ROWS[0], {**LM_ROWS[1], "label": 7}]),
)
add(
    "lmeval-empty-choice-first-doc",
    LM_RUN,
    ["quiz.yaml", "doc_to_choice", "empty"],
    lm(LM_TEMPLATE, rows=[{**LM_ROWS[0], "options": ["", "four"]}, LM_ROWS[1]]),
)
add(
    "lmeval-empty-choice-later-doc",
    LM_RUN,
    ["quiz.yaml", "row 2", "doc_to_choice", "empty"],
    lm(LM_TEMPLATE, rows=[LM_ROWS[0], {**LM_ROWS[1], "options": ["blue", ""]}]),
)
add(
    "lmeval-unknown-output-type",
    LM_RUN,
    ["quiz.yaml", "output_type"],
    lm(LM_TEMPLATE.replace("output_type: multiple_choice", "output_type: multiple_choise")),
)
add(
    "lmeval-no-data-mapping", ["run", "quiz/quiz.yaml", "-o", "out"], ["example/quiz", "--lmeval-data"], lm(LM_TEMPLATE)
)
add(
    "lmeval-mapping-lacks-split",
    LM_RUN,
    ["quiz.yaml", "validation", "dataset_path"],
    lm(LM_TEMPLATE.replace("test_split: test", "test_split: validation")),
)
add("lmeval-include-missing", LM_RUN, ["quiz.yaml", "nowhere.yaml"], lm("include: nowhere.yaml\ntask: quiz\n"))
add(
    "lmeval-group-unknown-member",
    ["run", "quiz/group.yaml", "-o", "out", "--lmeval-data", "example/quiz:small=data"],
    ["group.yaml", "no_such_task"],
    lm(LM_TEMPLATE, **{"quiz/group.yaml": "group: g\ntask:\n  - quiz\n  - no_such_task\n"}),
)
add("lmeval-yaml-syntax", LM_RUN, ["quiz.yaml:3", "line 2"], lm("task: quiz\ndataset_path: [unclosed\n"))
add(
    "lmeval-template-syntax",
    LM_RUN,
    ["quiz.yaml"],
    lm(LM_TEMPLATE.replace('"Q: {{question}}\\nA:"', '"Q: {{question}\\nA:"')),
)
add(
    "lmeval-template-undefined",
    LM_RUN,
    ["quiz.yaml", "questoin"],
    lm(LM_TEMPLATE.replace("{{question}}", "{{questoin.upper()}}")),
)
add("lmeval-num-fewshot-text", LM_RUN, ["quiz.yaml", "num_fewshot"], lm(LM_TEMPLATE + "num_fewshot: two\n"))
add(
    "lmeval-doc-to-choice-number",
    LM_RUN,
    ["quiz.yaml", "doc_to_choice"],
    lm(LM_TEMPLATE.replace("doc_to_choice: options", "doc_to_choice: 5")),
)
add(
    "lmeval-data-file-bad-yaml",
    LM_RUN + ["--lmeval-data-file", "map.yaml"],
    ["map.yaml:2", "invalid yaml"],
    lm(LM_TEMPLATE, **{"map.yaml": "a: [b\n"}),
)
add(
    "lmeval-data-file-not-mapping",
    LM_RUN + ["--lmeval-data-file", "map.yaml"],
    ["map.yaml"],
    lm(LM_TEMPLATE, **{"map.yaml": "- a\n"}),
)
add("lmeval-data-not-jsonl", LM_RUN, ["data"], lm(LM_TEMPLATE, **{"data/test.jsonl": "{not json\n"}))
add(
    "lmeval-process-results-raises",
    LM_RUN + ["--trust-task-code", "-m", "{model}"],
    ["utils.py:10", "process_results", "ZeroDivisionError"],
    lm(
        LM_TEMPLATE + "process_results: !function utils.results\nmetric_list:\n  - metric: acc\n"
        "    aggregation: mean\n    higher_is_better: true\n"
    ),
    before_model=False,
)

# --- use cases --------------------------------------------------------------------------------------------
URUN = ["run", "uc.py", "-o", "out", "-m", "{model}"]
UC_ROWS = '[{"id": "1", "question": "hi"}, {"id": "2", "question": "yo"}]'


def usecase(
    generate="return [{'id': r['id'], 'response': 'x'} for r in self.evaluation_data]",
    evaluate="return {'n': {'count': len(generations)}}",
    metric=None,
) -> str:
    text = USECASE.replace("        return []\n", f"        {generate}\n", 1).replace(
        "        return {}\n", f"        {evaluate}\n", 1
    )
    text = text.replace('[{"id": "1", "question": "hi"}]', UC_ROWS)
    if metric is not None:
        text = text.replace(
            "from proctor.dialects.aisteer.base import UseCase\n",
            "from proctor.dialects.aisteer.base import UseCase\n"
            "from proctor.dialects.aisteer.metrics import Metric\n\n\n"
            f"class Broken(Metric):\n    def compute(self, responses, **kwargs):\n        {metric}\n",
        )
        text = text.replace("evaluation_metrics = []", "evaluation_metrics = [Broken()]")
    return text


add(
    "usecase-generate-raises",
    URUN,
    ["uc.py:9", "generate", "KeyError", "questoin"],
    {"uc.py": usecase(generate="return [r['questoin'] for r in self.evaluation_data]")},
    before_model=False,
)
add(
    "usecase-generate-returns-none",
    URUN,
    ["uc.py:8", "generate", "returned", "None"],
    {"uc.py": usecase(generate="return None")},
    before_model=False,
)
add(
    "usecase-generate-returns-text",
    URUN,
    ["uc.py:8", "generate", "str"],
    {"uc.py": usecase(generate="return 'hello'")},
    before_model=False,
)
add(
    "usecase-evaluate-raises",
    URUN,
    ["uc.py:12", "evaluate", "ZeroDivisionError"],
    {"uc.py": usecase(evaluate="return {'n': 1 / 0}")},
    before_model=False,
)
add(
    "usecase-evaluate-returns-none",
    URUN,
    ["uc.py:11", "evaluate", "None"],
    {"uc.py": usecase(evaluate="return None")},
    before_model=False,
)
add(
    "usecase-evaluate-returns-list",
    URUN,
    ["uc.py:11", "evaluate", "list"],
    {"uc.py": usecase(evaluate="return [1, 2]")},
    before_model=False,
)
add(
    "usecase-metric-raises",
    URUN,
    ["uc.py", "Broken.compute", "ValueError", "bad metric"],
    {
        "uc.py": usecase(
            evaluate="return {m.name: m(responses=generations) for m in self.evaluation_metrics}",
            metric="raise ValueError('bad metric')",
        )
    },
    before_model=False,
)
add(
    "usecase-generate-wrong-model-call",
    URUN,
    ["uc.py", "generate", "TypeError"],
    {"uc.py": usecase(generate="return model_or_pipeline(1, 2, 3)")},
    before_model=False,
)

# --- problems only a running task shows -----------------------------------------------------------------
GLM_FOLDER = {
    "tasks/a_good.yaml": 'name: good\ntype: mul\npath: evens\nfile-pattern: {test: "**/test.jsonl"}\n',
    "tasks/b_bad.yaml": "name: bad\ntype: mul\npath: evens\nmodule: tasks.badtask.Broken\n"
    'file-pattern: {test: "**/test.jsonl"}\n',
    "tasks/badtask.py": "from evaluation import MultiChoiceTask\n\n\nclass Broken(MultiChoiceTask):\n"
    "    def predict_single_batch(self, batch):\n        return batch['text']\n",
    "data/evens/test.jsonl": jsonl(GLM_ROWS),
}
add(
    "running-glm-folder-task-fails",
    ["run", "tasks", "-o", "out", "--data-path", "data", "-m", "{model}", "--trust-task-code"],
    ["badtask.py:6", "bad", "failed while running", "--skip-broken"],
    GLM_FOLDER,
    before_model=False,
    code=1,
)
add(
    "running-glm-file-task-fails",
    ["run", "tasks/b_bad.yaml", "-o", "out", "--data-path", "data", "-m", "{model}", "--trust-task-code"],
    ["badtask.py:6", "KeyError", "text"],
    GLM_FOLDER,
    before_model=False,
)
add(
    "running-folder-task-cannot-load",
    ["run", "tasks", "-o", "out", "-m", "{model}"],
    ["b.yaml", "could not load", "--skip-broken"],
    {"tasks/a.yaml": NATIVE, "tasks/data.jsonl": jsonl(ROWS), "tasks/b.yaml": "tasks:\n  - name: b\n    kind: [oops\n"},
    before_model=False,
    code=1,
)
add(
    "running-task-class-raises",
    RUN + ["-m", "{model}", "--trust-task-code"],
    ["mine.py:6", "predict_single_batch", "RuntimeError", "class boom"],
    {
        "task.yaml": native(**{"metrics: [acc]": "metrics: [acc]\n    task_class: mine.py:Mine"}),
        "mine.py": "from proctor.tasks.custom import MultipleChoiceTask\n\n\nclass Mine(MultipleChoiceTask):\n"
        "    def predict_single_batch(self, batch):\n        raise RuntimeError('class boom')\n",
    },
    before_model=False,
)
add(
    "running-task-class-returns-none",
    RUN + ["-m", "{model}", "--trust-task-code"],
    ["mine.py:5", "predict_single_batch", "None"],
    {
        "task.yaml": native(**{"metrics: [acc]": "metrics: [acc]\n    task_class: mine.py:Mine"}),
        "mine.py": "from proctor.tasks.custom import MultipleChoiceTask\n\n\nclass Mine(MultipleChoiceTask):\n"
        "    def predict_single_batch(self, batch):\n        return None\n",
    },
    before_model=False,
)
add(
    "running-plugin-metric-raises",
    RUN + ["-m", "{model}", "--plugin", "plug.py"],
    ["plug.py:6", "metric 'boom'", "ZeroDivisionError"],
    {
        "task.yaml": native(**{"[acc]": "[boom]"}),
        "plug.py": "from proctor.scoring.metrics import register_metric\n\n\n"
        "@register_metric('boom', ['multiple_choice'])\n"
        "def boom(outcome, **kwargs):\n    return 1 / 0\n",
    },
    before_model=False,
)
add(
    "running-model-folder-damaged",
    RUN + ["-m", "damaged"],
    ["damaged", "cannot load model"],
    {"damaged/config.json": "{not json", "damaged/model.safetensors": "x"},
    before_model=False,
)
add(
    "running-model-folder-foreign-config",
    RUN + ["-m", "damaged"],
    ["damaged", "cannot load model"],
    {"damaged/config.json": '{"model_type": "no_such_architecture"}'},
    before_model=False,
)


# --- run folders: the response store (store.sqlite) damaged or from elsewhere ------------------------------
def _with_store(damage):
    """A run folder ``out`` whose store.sqlite holds one answer as proctor stores it, then ``damage(path)``."""

    def setup(folder: Path) -> None:
        from proctor.core.model_requests import LoglikelihoodRequest, LoglikelihoodResult
        from proctor.runs.store import ResponseStore, request_hash

        run = _run_folder(folder, "out")
        request = LoglikelihoodRequest("Q: 2+2?\nA:", " 4")
        with ResponseStore(run / "store.sqlite") as store:
            model = store.register_model({"model": "m"})
            store.put_many(model, [(request_hash(request), request, LoglikelihoodResult(-1.5, (-1.5,), True))])
        damage(run / "store.sqlite")

    return setup


def _sql(statement: str):
    def damage(path: Path) -> None:
        with sqlite3.connect(str(path)) as db:
            db.execute(statement)

    return damage


def _smash_page(number: int):
    """Overwrite page ``number`` (1-based, 4 KB pages) with garbage: the header reads, a table does not."""

    def damage(path: Path) -> None:
        with path.open("r+b") as handle:
            handle.seek(4096 * (number - 1))
            handle.write(b"\xde\xad" * 2048)

    return damage


add(
    "runfolder-store-schema-not-a-number",
    RUN,
    ["store.sqlite", "schema", "--restart"],
    setup=_with_store(_sql("UPDATE meta SET value='one' WHERE key='schema'")),
)
add(
    "runfolder-store-damaged-page",
    RUN,
    ["store.sqlite", "damaged", "--restart"],
    setup=_with_store(_smash_page(4)),
)
add(
    "runfolder-store-answer-not-json",
    RUN,
    ["store.sqlite", "request", "does not read", "--restart"],
    setup=_with_store(_sql("UPDATE responses SET result_json='{half'")),
)
add(
    "runfolder-store-answer-text-logprob",
    RUN,
    ["store.sqlite", "request", "logprob", "--restart"],
    setup=_with_store(_sql("UPDATE responses SET result_json=replace(result_json, '-1.5,', '\"high\",')")),
)
add(
    "runfolder-store-answer-missing-fields",
    RUN,
    ["store.sqlite", "request", "logprob", "--restart"],
    setup=_with_store(_sql("""UPDATE responses SET result_json='{"type":"LoglikelihoodResult","fields":{}}'""")),
)
add(
    "runfolder-store-foreign-table",
    RUN,
    ["store.sqlite", "responses", "columns", "--restart"],
    setup=_with_store(
        lambda p: (p.unlink(), _sqlite_tables(p, "meta(key TEXT PRIMARY KEY, value TEXT)", "responses(a, b)"))
    ),
)


def _sqlite_tables(path: Path, *tables: str) -> None:
    with sqlite3.connect(str(path)) as db:
        for table in tables:
            db.execute(f"CREATE TABLE {table}")


# --- run folders: run.json is JSON, its fields of the wrong type ---------------------------------------------
def _edit_manifest(**fields):
    def setup(folder: Path) -> None:
        run = _run_folder(folder, "out")
        manifest = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**manifest, **fields}))

    return setup


for _field, _value in [("model", "tiny"), ("tasks", ["arith"]), ("options", None), ("attempts", 3), ("created", 5)]:
    add(
        f"runfolder-manifest-{_field}-{type(_value).__name__}",
        RUN,
        ["run.json", _field, "--restart"],
        setup=_edit_manifest(**{_field: _value}),
    )


# --- run folders: samples.jsonl shorter than results.json's samples_bytes says ---------------------------------
add(
    "runfolder-results-samples-bytes-negative",
    ["report", "run"],
    ["results.json", "samples_bytes"],
    setup=_edit_results(_set(["samples_bytes"], -5)),
)
add(
    "runfolder-samples-emptied",
    ["report", "run"],
    ["samples.jsonl", "samples_bytes"],
    setup=_write_in_run("samples.jsonl", b""),
)
add(
    "runfolder-samples-deleted",
    ["report", "run"],
    ["samples.jsonl", "samples_bytes"],
    setup=lambda f: (_run_folder(f), (f / "run" / "samples.jsonl").unlink()),
)
add(
    "runfolder-compare-samples-emptied",
    ["compare", "a", "b"],
    ["b/samples.jsonl", "samples_bytes"],
    setup=lambda f: (_run_folder(f, "a"), _run_folder(f, "b"), (f / "b" / "samples.jsonl").write_bytes(b"")),
)
add("runfolder-export-samples-emptied", ["export", "run"], ["samples.jsonl"], setup=_write_in_run("samples.jsonl", b""))


# --- images: animated, over Pillow's pixel limit (where it only warns), a URL --------------------------------
def _animated(fmt: str) -> bytes:
    from PIL import Image

    frames = [Image.new("RGB", (8, 8), (40 * k, 0, 0)) for k in range(3)]
    buffer = io.BytesIO()
    frames[0].save(buffer, format=fmt, save_all=True, append_images=frames[1:])
    return buffer.getvalue()


def _over_pixel_limit(path: Path) -> None:
    """A PNG of 144 million pixels: over Pillow's limit, under twice it (Pillow warns, but reads it whole)."""
    from PIL import Image

    Image.new("1", (12000, 12000)).save(path, format="PNG")


for _fmt in ("GIF", "PNG", "WEBP"):
    _name = f"anim.{_fmt.lower()}"
    add(
        f"image-animated-{_fmt.lower()}",
        RUN,
        ["data.jsonl", "row 2", "image", "animated"],
        {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows(_name), "red.png": png(), _name: _animated(_fmt)},
    )
add(
    "image-over-pixel-limit",
    RUN,
    ["data.jsonl", "row 2", "image", "pixels"],
    {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows("big.png"), "red.png": png()},
    setup=lambda f: _over_pixel_limit(f / "big.png"),
)
add(
    "image-url",
    RUN,
    ["data.jsonl", "row 2", "image", "URL"],
    {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows("https://example.com/red.png"), "red.png": png()},
)


# --- run folders: a name the run writes is of the wrong kind; the store deleted beside results ---------------
def _replace_in_out(name: str, kind: str):
    """The run folder ``out`` (with its store) where ``name`` is replaced by a folder or a file."""

    def setup(folder: Path) -> None:
        _with_store(lambda path: None)(folder)
        target = folder / "out" / name
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
        target.mkdir() if kind == "folder" else target.write_text("not a folder")

    return setup


for _name, _kind in [("samples.jsonl", "folder"), ("results.json", "folder"), ("tasks", "file"), ("lm_eval", "file")]:
    for _extra in ([], ["--restart"]):
        add(
            f"runfolder-{_name.replace('.', '-')}-is-a-{_kind}{''.join(_extra).replace('--', '-')}",
            RUN + _extra,
            [f"out/{_name}", _kind],
            setup=_replace_in_out(_name, _kind),
        )
add(
    "runfolder-store-deleted-beside-results",
    RUN + ["--update"],  # the tasks changed too (run.json lists none): accepted, the missing store is not
    ["store.sqlite", "results.json", "--restart"],
    setup=_with_store(lambda path: path.unlink()),
)
add(
    "runfolder-store-emptied-beside-results",
    RUN + ["--update"],
    ["store.sqlite", "results.json", "empty", "--restart"],
    setup=_with_store(lambda path: path.write_bytes(b"")),
)


# --- run folders: where report, view, compare and export write is a folder, or a file where a folder goes -----
def _run_with(name: str, kind: str):
    """The run folder ``run`` (and ``other``, for compare) with ``name`` made a folder or a file."""

    def setup(folder: Path) -> None:
        _run_folder(folder, "other")
        target = _run_folder(folder) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.mkdir() if kind == "folder" else target.write_text("not a folder")

    return setup


add(
    "runfolder-report-html-is-a-folder",
    ["report", "run"],
    ["run/report.html", "directory", "-o"],
    setup=_run_with("report.html", "folder"),
)
add(
    "runfolder-view-export-is-a-folder",
    ["view", "run", "-o", "run/page.html"],
    ["run/page.html", "directory", "-o"],
    setup=_run_with("page.html", "folder"),
)
add(
    "runfolder-compare-default-file-is-a-folder",
    ["compare", "run", "other"],
    ["run/comparison_vs_other.json", "directory", "-o"],
    setup=_run_with("comparison_vs_other.json", "folder"),
)
add(
    "runfolder-export-lm-eval-is-a-file",
    ["export", "run", "--format", "lm-eval"],
    ["run/lm_eval", "lm-eval", "directory"],
    setup=_run_with("lm_eval", "file"),
)
add(
    "runfolder-export-parquet-is-a-folder",
    ["export", "run", "--format", "parquet"],
    ["run/samples.parquet", "parquet", "directory"],
    setup=_run_with("samples.parquet", "folder"),
)


# --- run folders: resuming a folder started with other tasks is refused before the model loads ------------------
def _started_with(tasks: dict):
    def setup(folder: Path) -> None:
        _with_store(lambda path: None)(folder)
        manifest = folder / "out" / "run.json"
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "tasks": tasks}))

    return setup


add(
    "runfolder-resume-task-edited",
    RUN,
    ["out", "task 'arith' changed", "--update", "--restart"],
    setup=_started_with({"arith": "0123456789abcdef"}),
)
add(
    "runfolder-resume-other-tasks",
    RUN,
    ["out", "'arith' was not in this run", "'spelling' is no longer selected", "--update"],
    setup=_started_with({"spelling": "0123456789abcdef"}),
)


# --- run folders: compare two runs that scored other data under the same sample ids -----------------------------
def _other_data_in_b(folder: Path) -> None:
    _run_folder(folder, "a")
    run = _run_folder(folder, "b")
    line = (run / "samples.jsonl").read_text().replace('["3", "4"]', '["7", "8"]')
    (run / "samples.jsonl").write_text(line)
    results = json.loads((run / "results.json").read_text())
    (run / "results.json").write_text(json.dumps({**results, "samples_bytes": len(line.encode())}))


add(
    "runfolder-compare-other-data-same-ids",
    ["compare", "a", "b"],
    ["b/samples.jsonl", "arith", "id '0'", "choices"],
    setup=_other_data_in_b,
)


# --- run folders: export --to duckdb into a file that is not a DuckDB database -----------------------------------
def _foreign_duckdb(path: Path) -> None:
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE metrics (a INTEGER)")
    con.close()


if importlib.util.find_spec("duckdb") is not None:  # the optional extra: without it, a message says to install it
    _DUCK = ["export", "run", "--to", "duckdb", "--database", "runs.duckdb"]
    add(
        "runfolder-duckdb-not-a-database",
        _DUCK,
        ["--database", "runs.duckdb"],
        {"runs.duckdb": b"garbage" * 100},
        setup=_run_folder,
    )
    add(
        "runfolder-duckdb-is-a-folder",
        _DUCK,
        ["--database", "runs.duckdb"],
        setup=lambda f: (_run_folder(f), (f / "runs.duckdb").mkdir()),
    )
    add(
        "runfolder-duckdb-foreign-tables",
        _DUCK,
        ["--database", "runs.duckdb", "metrics"],
        setup=lambda f: (_run_folder(f), _foreign_duckdb(f / "runs.duckdb")),
    )


# --- task definitions: metric arguments, native expressions, spec values the run would drop ---------------------
add(
    "spec-metric-argument-unknown",
    RUN,
    ["task.yaml:8", "metrics", "'acc'", "nonsense"],
    {"task.yaml": native(**{"metrics: [acc]": "metrics: [{acc: {nonsense: 3}}]"})},
)
# a native expression ("{{ name }}") of a name the row lacks: Jinja hands back its Undefined, which is reported
add(
    "spec-filter-undefined-name",
    RUN,
    ["data.jsonl", "row 1", "data.filter", "nothere"],
    {"task.yaml": native(**{"data: data.jsonl": 'data: {path: data.jsonl, filter: "{{ nothere }}"}'})},
)
add(
    "spec-choices-undefined-name",
    RUN,
    ["data.jsonl", "row 1", "'choices'", "nothere"],
    {"task.yaml": native(**{'choices: "{{ choices }}"': 'choices: "{{ nothere }}"'})},
)
add(
    "spec-target-undefined-name",
    RUN,
    ["data.jsonl", "row 1", "'target'", "nothere"],
    {"task.yaml": native(**{'target: "{{ label }}"': 'target: "{{ nothere }}"'})},
)
add(
    "spec-images-undefined-name",
    RUN,
    ["data.jsonl", "row 1", "'images'", "nothere"],
    {"task.yaml": with_field(images='"{{ nothere }}"')},
)
add(
    "spec-fields-undefined-name",
    RUN,
    ["data.jsonl", "row 1", "data.fields.q2", "nothere"],
    {
        "task.yaml": native(
            **{
                "data: data.jsonl": 'data: {path: data.jsonl, fields: {q2: "{{ nothere }}"}}',
                "{{ question }}": "{{ q2 }}",
            }
        )
    },
)
# values a run would take without a word and then give a wrong number
add(
    "spec-filter-plain-text",
    RUN,
    ["task.yaml:4", "filter", "nothere == 1"],
    {"task.yaml": native(**{"data: data.jsonl": 'data: {path: data.jsonl, filter: "nothere == 1"}'})},
)
add(
    "spec-generation-stop-empty-string",
    RUN,
    ["task.yaml:7", "generation.stop", "empty stop string"],
    {"task.yaml": GEN.replace("{max_tokens: 4}", '{max_tokens: 4, stop: ["\\n", ""]}')},
)
add(
    "spec-extraction-group-negative",
    RUN,
    ["task.yaml:9", "extraction.group"],
    {"task.yaml": GEN + '    extraction: {regex: "(\\\\d+)", group: -1}\n'},
)
add(
    "spec-breakdown-field-no-row-has",
    RUN,
    ["task.yaml:9", "breakdown", "nofield"],
    {"task.yaml": with_field(breakdown="[nofield]")},
)
add(
    "spec-rollup-metric-not-computed",
    RUN,
    ["task.yaml:9", "rollup.metric", "nometric"],
    {"task.yaml": with_field(rollup="{metric: nometric}")},
)
# YAML nested thousands deep: the parser's depth limit, and below it Python's recursion limit
add(
    "spec-yaml-nested-400-deep",
    RUN,
    ["task.yaml", "nested too deeply"],
    {"task.yaml": with_field(task_options="{x: " + "[" * 400 + "]" * 400 + "}")},
)
add(
    "spec-yaml-nested-5000-deep",
    RUN,
    ["task.yaml:9", "nesting depth"],
    {"task.yaml": with_field(task_options="{x: " + "[" * 5000 + "]" * 5000 + "}")},
)
# probsem: the CogSci2023 format's prompt, a folder named like a suite, a suite nested too deeply
COGSCI_SUITE = {
    "premise": ";; a premise",
    "context": [{"text": ";; a context", "expected": 0}],
    "query": ";; a query",
    "programs": ["(a)", "(b)"],
}
add(
    "spec-probsem-cogsci-prompt-latin1",
    ["run", "p.txt", "-o", "out"],
    ["p.txt:1", "utf-8"],
    {"p.txt": "caf\xe9 prompt\n".encode("latin-1"), "p_A.json": json.dumps(COGSCI_SUITE)},
)
add(
    "spec-probsem-suite-folder-beside-suite",
    ["run", "p.txt", "-o", "out"],
    ["p_B.json", "queries"],
    {
        "p.txt": PROBSEM_PROMPT,
        "p_A.json/x.txt": "not a suite",
        "p_B.json": json.dumps({**PROBSEM_SUITE, "queries": []}),
    },
)
add(
    "spec-probsem-suite-nested-too-deeply",
    ["run", "p.txt", "-o", "out"],
    ["p_A.json", "nested too deeply"],
    {"p.txt": PROBSEM_PROMPT, "p_A.json": "[" * 100000 + "]" * 100000},
)
# GLM-130B: settings that reached proctor's spec unchecked (a traceback), and an empty path (the disk globbed)
GLM_GEN_ROWS = [{"inputs_pretokenized": "The sky is", "targets_pretokenized": ["blue"]}]
add(
    "spec-glm-stop-not-strings",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["glm.yaml:7", "stop"],
    {"glm.yaml": GLM.replace('"mul"', '"gen"') + "stop: [1, 2]\n", "data/test.jsonl": jsonl(GLM_GEN_ROWS)},
)
add(
    "spec-glm-lm-max-seq-length-two",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["glm.yaml:7", "max-seq-length", "at least 3"],
    {
        "glm.yaml": GLM.replace('"mul"', '"lm"') + "max-seq-length: 2\n",
        "data/test.jsonl": jsonl([{"text_pretokenized": "hello world"}]),
    },
)
add(
    "spec-glm-path-empty",
    ["run", "glm.yaml", "-o", "out"],
    ["glm.yaml:3", "path", "empty"],
    {"glm.yaml": GLM.replace('path: "data"', 'path: ""'), "data/test.jsonl": jsonl(GLM_ROWS)},
)
# infinite or NaN settings a run would take: a NaN length penalty ranks beams at random, an infinite
# temperature makes every distribution uniform
add(
    "spec-generation-length-penalty-nan",
    RUN,
    ["task.yaml:7", "generation.length_penalty", "finite"],
    {"task.yaml": GEN.replace("{max_tokens: 4}", "{max_tokens: 4, num_beams: 2, length_penalty: .nan}")},
)
add(
    "spec-choice-temperature-infinite",
    RUN,
    ["task.yaml:9", "choice_temperature", "finite"],
    {"task.yaml": with_field(choice_temperature=".inf")},
)
add(
    "spec-glm-length-penalty-nan",
    ["run", "glm.yaml", "-o", "out", "--data-path", "."],
    ["glm.yaml:8", "length-penalty", "finite"],
    {
        "glm.yaml": GLM.replace('"mul"', '"gen"') + "sampling-strategy: BeamSearchStrategy\nlength-penalty: .nan\n",
        "data/test.jsonl": jsonl(GLM_GEN_ROWS),
    },
)
add(
    "spec-cli-gen-kwargs-temperature-infinite",
    RUN + ["--gen-kwargs", "temperature=inf"],
    ["--gen-kwargs", "temperature"],
)
# lm-eval: the config's lists and generation settings proctor reads itself (internal errors, or one after the run)
LM_GENERATE = LM_TEMPLATE.replace("multiple_choice", "generate_until").replace("doc_to_choice: options\n", "")
add(
    "spec-lmeval-metric-list-not-list",
    LM_RUN,
    ["quiz.yaml", "metric_list", "int"],
    lm(LM_TEMPLATE + "metric_list: 5\n"),
)
add(
    "spec-lmeval-filter-list-entry-text",
    LM_RUN,
    ["quiz.yaml", "filter_list[0]"],
    lm(LM_TEMPLATE + "filter_list: [take_first]\n"),
)
add(
    "spec-lmeval-filter-regex-does-not-compile",
    LM_RUN,
    ["quiz.yaml", "filter_list[0].filter[0].regex_pattern", "(unclosed"],
    lm(
        LM_GENERATE
        + 'filter_list:\n  - name: f\n    filter:\n      - function: regex\n        regex_pattern: "(unclosed"\n'
    ),
)
add(
    "spec-lmeval-generation-until-number",
    LM_RUN,
    ["quiz.yaml", "generation_kwargs.until"],
    lm(LM_GENERATE + "generation_kwargs: {until: 5}\n"),
)
add(
    "spec-lmeval-generation-max-gen-toks-text",
    LM_RUN,
    ["quiz.yaml", "generation_kwargs.max_gen_toks", "many"],
    lm(LM_GENERATE + "generation_kwargs: {max_gen_toks: many}\n"),
)
add(
    "spec-lmeval-task-name-list-without-group",
    LM_RUN,
    ["quiz.yaml", "'task'", "group"],
    lm(LM_TEMPLATE.replace("task: quiz", "task: [quiz]")),
)
add(
    "spec-lmeval-group-lists-itself",
    ["run", "quiz/g.yaml", "-o", "out"],
    ["g.yaml", "'task'", "lists itself"],
    lm(LM_TEMPLATE, **{"quiz/g.yaml": "group: g\ntask: [h]\n", "quiz/h.yaml": "group: h\ntask: [g]\n"}),
)
# SEA-HELM: a number among text labels (an internal error after the run), a config metric its class never reports
# (every level of the score hierarchy empty, exit 0)
add(
    "spec-seahelm-label-number-among-text",
    SEAHELM_RUN,
    ["copy", "row 2", "label"],
    setup=seahelm(eval_data=_lines([SEAHELM_ROWS[0], {**SEAHELM_ROWS[1], "label": 3}, SEAHELM_ROWS[2]])),
)
# use cases: module-level settings of the wrong shape (internal errors)
UC_RUN = ["run", "uc.py", "-o", "out"]
add(
    "spec-usecase-metrics-not-list",
    UC_RUN,
    ["uc.py:16", "evaluation_metrics", "int"],
    {"uc.py": USECASE.replace("evaluation_metrics = []", "evaluation_metrics = 5")},
)
add(
    "spec-usecase-kwargs-list",
    UC_RUN,
    ["uc.py:18", "use_case_kwargs", "list"],
    {"uc.py": USECASE + '\nuse_case_kwargs = ["x"]\n'},
)
# Python a task names that calls sys.exit() while it is imported: proctor ended with the script's code and no message
add(
    "spec-usecase-sys-exit-at-import",
    UC_RUN,
    ["uc.py:2", "sys.exit(3)"],
    {"uc.py": "import sys\nsys.exit(3)\n" + USECASE},
)
add(
    "spec-plugin-exit-at-import",
    RUN + ["--plugin", "plug.py"],
    ["plug.py:1", "sys.exit('bye')"],
    {"plug.py": "raise SystemExit('bye')\n"},
)
# a folder to write into where no folder can be made, whatever the permission bits say (root may "write" in /proc)
add("spec-cli-cache-in-proc", RUN + ["--cache", "/proc/proctor-cache"], ["--cache", "/proc", "cannot make a folder"])
add(
    "spec-cli-output-in-proc",
    ["run", "task.yaml", "-o", "/proc/proctor-out"],
    ["--output", "/proc", "cannot make a folder"],
)
# the same model setting twice: one of the values was dropped without a word
add(
    "spec-cli-model-arg-twice",
    RUN + ["--model-arg", "dtype=float16", "--model-arg", "dtype=bfloat16"],
    ["--model-arg", "dtype", "twice"],
)
add(
    "spec-cli-model-arg-and-dtype-flag",
    RUN + ["--dtype", "bfloat16", "--model-arg", "dtype=float16"],
    ["--model-arg", "dtype", "--dtype"],
)
# data paths through symlinks: a loop (an internal error), a folder linked into itself ("**" read each file 40 times)
add(
    "spec-data-symlink-loop",
    RUN,
    ["task.yaml", "data.path", "symlink loop"],
    {"task.yaml": native(**{"data: data.jsonl": "data: loop/*.jsonl"})},
    setup=lambda folder: (folder / "loop").symlink_to("loop"),
)
add(
    "spec-data-glob-through-folder-linked-into-itself",
    RUN,
    ["fewshot.count", "3 rows in all"],  # the three rows, each read once: two others for each sample's shots
    {"task.yaml": with_field(fewshot="{count: 3}").replace("data: data.jsonl", 'data: "**/*.jsonl"')},
    setup=lambda folder: (folder / "sub").mkdir() or (folder / "sub" / "up").symlink_to(".."),
)


# --- run folders: a sample record whose shared fields have the wrong types (report, compare and export read them) ---
def _record_field(folder: Path, name: str, value, copy: bool = False) -> None:
    run = _run_folder(folder, "out")
    record = json.loads((run / "samples.jsonl").read_text())
    line = json.dumps({**record, name: value}) + "\n"
    (run / "samples.jsonl").write_text(line)
    results = json.loads((run / "results.json").read_text())
    (run / "results.json").write_text(json.dumps({**results, "samples_bytes": len(line.encode())}))
    if copy:  # a second run folder to compare with (a run compared with itself is refused before it is read)
        shutil.copytree(run, folder / "out2")


for _command, _field, _value in (
    (["export", "out"], "metrics", "x"),  # before: an internal AttributeError
    (["compare", "out", "out2"], "metrics", [1]),  # before: an internal AttributeError
    (["compare", "out", "out2"], "id", None),  # before: paired under the id "None"
    (["report", "out"], "choices", "abc"),
    (["export", "out", "--to", "parquet"], "correct", "yes"),
):
    add(
        f"runfolder-sample-{_field}-{type(_value).__name__}-{_command[0]}",
        _command,
        ["out/samples.jsonl:1", f"field '{_field}'"],
        setup=lambda folder, f=_field, v=_value, c=_command[0] == "compare": _record_field(folder, f, v, c),
    )


# --- model options out of range: failed deep in the HTTP client (an internal error) or changed the numbers silently ---
_OPENAI = RUN + ["-m", "openai:x", "--base-url", "http://127.0.0.1:9/v1"]
for _arg, _words in (
    ("timeout=-1", ["timeout=-1", "above 0"]),  # before: an internal ValueError from httpx
    ("timeout=0", ["timeout=0", "above 0"]),
    ("concurrency=0", ["concurrency=0", "at least 1"]),  # before: taken as 1 without a word
    ("max_retries=-2", ["max_retries=-2", "at least 0"]),
    ("deadline=0", ["deadline=0", "above 0"]),  # the overall per-request deadline (models/openai/http.py)
):
    add(f"cli-openai-arg-{_arg.split('=')[0]}-{_arg.split('=')[1][:6]}", _OPENAI + ["--model-arg", _arg], _words)
add(
    "cli-hf-pack-tokens-negative",  # before: ran, every request cut into its own row (other numbers)
    RUN + ["-m", "{model}", "--model-arg", "pack_tokens=-5"],
    ["pack_tokens=-5", "at least 1"],
)


# --- Ray flags: replica shapes in a run without replicas (ignored before), a cluster that does not answer (Ray's
# client retried for minutes before failing) -------------------------------------------------------------------
for _flag in (["--worker-node", "10.0.0.9"], ["--cpus-per-worker", "4"], ["--worker-resources", "tpu=1"]):
    add(f"cli-ray-{_flag[0][2:]}-without-workers", RUN + _flag, [_flag[0], "--workers"])
add(
    "cli-ray-address-not-host-port", RUN + ["--ray-address", "my-cluster"], ["--ray-address", "my-cluster", "HOST:PORT"]
)
add("cli-ray-address-nothing-answers", RUN + ["--ray-address", "127.0.0.1:9"], ["--ray-address", "127.0.0.1:9"])
