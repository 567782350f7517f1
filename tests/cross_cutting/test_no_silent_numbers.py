"""No silent numbers, no lost work, no secrets on disk: each checked through the ``proctor`` command (in a fresh
interpreter but where said below), with the expected numbers computed here.

- a folder run where one file cannot load and one task fails while running (a GLM-130B class reading a key its
  data lacks): the others run, both are listed (table, results.json, report), exit 1; --skip-broken: exit 0;
- prompts longer than the window: counted per task and warned about, on the first run and on resume;
- a use case whose generate() skips rows, and a NaN metric: warnings in the console, results.json and report;
- ``-o`` on a folder of the user's own: refused, nothing written;
- a key inside --base-url: used, but masked in run.json, results.json, .lock, report and console;
- files with a byte-order mark read as without one (same numbers).

The ``-o`` refusal and the byte-order marks are about files, not the process: they run through the CLI's entry
point in this process (``in_process``), with the same checks on the exit code and output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.malformed_cases import NATIVE


def proctor(args: list[str], cwd: Path, **env: str) -> tuple[int, str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("PROCTOR_TRACEBACK", "PROCTOR_CACHE")}
    environment.update(PYTHONPATH=str(REPO / "src"), COLUMNS="400", **env)
    done = subprocess.run(
        [sys.executable, "-m", "proctor.cli", *map(str, args)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = done.stdout + done.stderr
    assert "Traceback" not in output and "internal error" not in output, output
    return done.returncode, output


def in_process(args: list, cwd: Path) -> tuple[int, str]:
    """``proctor ARGS`` through the CLI's entry point in this process, in ``cwd``: what ``proctor`` gives."""
    from tests.support.audit_runner import run_cli

    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("PROCTOR_CACHE", raising=False)
        code, output = run_cli([str(a) for a in args], cwd, limit_s=900)
    assert code is not None, f"proctor did not finish in 900 s:\n{output}"
    assert "Traceback" not in output and "internal error" not in output, output
    return code, output


def write(folder: Path, files: dict) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text, encoding="utf-8")


def jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def samples(run: Path) -> list[dict]:
    return [
        json.loads(line) for line in (run / "samples.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def flat(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------ a folder with a broken file and a failing task
GLM_ROWS = [
    {"inputs_pretokenized": f"Is {i} even?", "choices_pretokenized": ["no", "yes"], "label": int(i % 2 == 0)}
    for i in range(4)
]
GLM_FOLDER = {
    "tasks/a_good.yaml": 'name: good\ntype: mul\npath: evens\nfile-pattern: {test: "**/test.jsonl"}\n',
    "tasks/b_bad.yaml": "name: bad\ntype: mul\npath: evens\nmodule: tasks.pile.Pile\n"
    'file-pattern: {test: "**/test.jsonl"}\n',
    "tasks/pile.py": (
        "from evaluation import MultiChoiceTask\n\n\nclass Pile(MultiChoiceTask):\n"
        "    def predict_single_batch(self, batch):\n        return batch['text']\n"
    ),
    "tasks/c_broken.yaml": "name: broken\ntype: mul\npath: evens\nfile-pattern: [oops\n",
    "data/evens/test.jsonl": jsonl(GLM_ROWS),
}


def test_a_folder_run_lists_what_did_not_run_and_exits_1(tiny_model_dir, tmp_path):
    write(tmp_path, GLM_FOLDER)
    args = ["run", "tasks", "--data-path", "data", "-m", tiny_model_dir, "-o", "run", "--trust-task-code", "-q"]
    code, output = proctor(args, tmp_path)
    assert code == 1, output
    text = flat(output)
    assert "failed while running" in text and "could not load" in text and "--skip-broken" in text
    assert "pile.py:6" in text and "KeyError" in text and "c_broken.yaml" in text
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["status"] == "partial" and list(results["tasks"]) == ["good/test"]
    stages = {Path(s["file"]).name: (s["stage"], s.get("task")) for s in results["skipped"]}
    assert stages == {"c_broken.yaml": ("load", None), "b_bad.yaml": ("run", "bad")}
    failed = next(s for s in results["skipped"] if s["stage"] == "run")
    assert (
        "pile.py:6" in failed["error"]
        and "'text'" in failed["error"]
        and "Pile.predict_single_batch" in failed["error"]
    )
    # the good task's accuracy: the argmax of its choices' log-probs against the data file's labels (GLM: in percent)
    records = samples(tmp_path / "run")
    assert len(records) == len(GLM_ROWS)
    correct = [max(range(2), key=lambda k: r["logprobs"][k]) == row["label"] for r, row in zip(records, GLM_ROWS)]
    assert results["tasks"]["good/test"]["metrics"]["Accuracy"]["value"] == pytest.approx(
        100.0 * sum(correct) / len(correct)
    )
    # the report lists both in its summary
    code, output = proctor(["report", "run"], tmp_path)
    assert code == 0, output
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "not run" in page and "c_broken.yaml" in page and "pile.py:6" in page
    # accepted: the same numbers (answered by the store), exit 0
    code, output = proctor(args + ["--skip-broken"], tmp_path)
    assert code == 0, output
    again = json.loads((tmp_path / "run" / "results.json").read_text())
    assert again["tasks"]["good/test"]["metrics"] == results["tasks"]["good/test"]["metrics"]
    assert len(again["skipped"]) == 2 and again["status"] == "partial"


def test_a_task_named_directly_still_stops_the_run(tiny_model_dir, tmp_path):
    write(tmp_path, GLM_FOLDER)
    code, output = proctor(
        ["run", "tasks/b_bad.yaml", "--data-path", "data", "-m", tiny_model_dir, "-o", "run", "--trust-task-code"],
        tmp_path,
    )
    assert code == 2 and "pile.py:6" in output and "KeyError" in output, output


# ------------------------------------------------------------------ prompts cut to fit the window
LONG = " ".join(f"word{i}" for i in range(200))
TRUNC_ROWS = [
    {"question": LONG, "choices": ["yes", "no"], "label": 0},
    {"question": LONG + " again", "choices": ["yes", "no"], "label": 1},
    {"question": "1+1?", "choices": ["2", "3"], "label": 0},
]
NATIVE_MC = NATIVE  # one multiple-choice task, 'arith', over data.jsonl (question, choices, label)


def test_truncated_prompts_are_counted_and_warned_about(tiny_model_dir, tmp_path):
    write(tmp_path, {"task.yaml": NATIVE_MC, "data.jsonl": jsonl(TRUNC_ROWS)})
    # the two long questions hold over 200 words: far past 32 tokens whatever the tokenizer; the short one fits
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    lengths = [len(tokenizer(f"Q: {r['question']}\nA: {c}").input_ids) + 1 for r in TRUNC_ROWS for c in r["choices"]]
    expected = sum(n > 33 for n in lengths)
    assert expected == 4
    args = ["run", "task.yaml", "-m", tiny_model_dir, "--max-length", "32", "-o", "run", "-q"]
    for _attempt in range(2):  # the second run answers from the store: the count stays
        code, output = proctor(args, tmp_path)
        assert code == 0, output
        results = json.loads((tmp_path / "run" / "results.json").read_text())
        assert results["tasks"]["arith"]["truncated"] == {"count": expected, "n": 6}
        assert any("4 of 6 requests were longer than the context window (32 tokens" in w for w in results["warnings"])
        assert "4 of 6 requests were longer than the context window" in flat(output)
    code, output = proctor(["report", "run"], tmp_path)
    assert "4 of 6 requests were longer than the context window" in (tmp_path / "run" / "report.html").read_text(
        encoding="utf-8"
    )


# ------------------------------------------------------------------ use cases: rows without a generation, NaN metrics
USE_CASE = """from proctor.dialects.aisteer.base import UseCase
from proctor.dialects.aisteer.metrics import Metric


class Share(Metric):
    def compute(self, responses, **kwargs):
        return {"yes": sum(r["response"] == "yes" for r in responses) / len(responses), "undefined": float("nan")}


class Skips(UseCase):
    def generate(self, model_or_pipeline, tokenizer, gen_kwargs=None, runtime_overrides=None, **kwargs):
        return [{"id": row["id"], "response": row["answer"]} for row in self.evaluation_data if row["id"] != "3"]

    def evaluate(self, generations):
        return {metric.name: metric(responses=generations) for metric in self.evaluation_metrics}


evaluation_data = [{"id": str(i), "answer": answer} for i, answer in enumerate(["yes", "no", "yes", "yes", "no"], 1)]
evaluation_metrics = [Share()]
"""


def test_use_case_rows_without_generation_and_nan_metrics_are_warnings(tiny_model_dir, tmp_path):
    write(tmp_path, {"uc.py": USE_CASE})
    code, output = proctor(["run", "uc.py", "-m", tiny_model_dir, "-o", "run", "-q"], tmp_path)
    assert code == 0, output
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    task = results["tasks"]["uc:Skips"]
    rows = ["yes", "no", "yes", "yes", "no"]
    kept = [a for i, a in enumerate(rows, 1) if i != 3]
    assert task["metrics"]["Share.yes"]["value"] == pytest.approx(sum(a == "yes" for a in kept) / len(kept))
    assert task["metrics"]["Share.undefined"]["value"] is None  # NaN is written as null ...
    warnings = " | ".join(results["warnings"])
    assert "4 generation(s) for 5 rows: 1 row(s) got none (ids 3)" in warnings  # ... and said
    assert "metric 'Share.undefined' is nan" in warnings
    text = flat(output)
    assert "1 row(s) got none (ids 3)" in text and "'Share.undefined' is nan" in text
    proctor(["report", "run"], tmp_path)
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "1 row(s) got none (ids 3)" in page and "Share.undefined" in page


# ------------------------------------------------------------------ -o on the user's own folder
def test_output_on_a_folder_that_is_not_a_run_folder_is_refused(tmp_path):
    write(
        tmp_path,
        {
            "task.yaml": NATIVE_MC,
            "data.jsonl": jsonl(TRUNC_ROWS[2:]),
            "mine/results.json": '{"my": "numbers"}',
            "mine/samples.jsonl": "my samples\n",
        },
    )
    before = {p.name: p.read_bytes() for p in (tmp_path / "mine").iterdir()}
    for extra in ([], ["--restart"]):
        code, output = in_process(["run", "task.yaml", "-o", "mine", *extra], tmp_path)
        assert code == 2 and "not a proctor run folder" in flat(output), output
        assert {p.name: p.read_bytes() for p in (tmp_path / "mine").iterdir()} == before


# ------------------------------------------------------------------ a key inside --base-url
GEN_TASK = """tasks:
  - name: echo
    kind: generate
    data: data.jsonl
    prompt: "{{ question }}"
    target: "{{ answer }}"
    generation: {max_tokens: 16}
    metrics: [exact_match]
"""


def test_credentials_in_the_base_url_are_masked_everywhere(tmp_path):
    pytest.importorskip("httpx")
    from tests.support.openai_fakes import ScriptedJudgeServer

    with ScriptedJudgeServer(answer="fixed reply") as server:
        url = server.url.replace("http://", "http://alice:SECRETKEY123@")
        rows = [
            {"question": "say it", "answer": "fixed reply"},
            {"question": "say it again", "answer": "something else"},
        ]
        write(tmp_path, {"task.yaml": GEN_TASK, "data.jsonl": jsonl(rows)})
        code, output = proctor(
            ["run", "task.yaml", "-m", "openai:stub", "--base-url", url, "--model-arg", "endpoint=chat", "-o", "run"],
            tmp_path,
        )
        assert code == 0, output
        assert len(server.received) == 2
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["tasks"]["echo"]["metrics"]["exact_match"]["value"] == pytest.approx(
        0.5
    )  # one reply equals its target
    proctor(["report", "run"], tmp_path)
    recorded = {
        name: (tmp_path / "run" / name).read_text(encoding="utf-8")
        for name in ("run.json", "results.json", ".lock", "report.html")
    }
    for name, text in {**recorded, "console": output}.items():
        assert "SECRETKEY123" not in text, name
    assert "alice:***@127.0.0.1" in recorded["run.json"] and "alice:***@127.0.0.1" in recorded["results.json"]
    assert "alice:***@127.0.0.1" in recorded[".lock"]


# ------------------------------------------------------------------ byte-order marks
def test_byte_order_marks_are_not_data(tiny_model_dir, tmp_path):
    rows = TRUNC_ROWS[2:] + [{"question": "2+2?", "choices": ["4", "5"], "label": 0}]
    csv_task = (
        NATIVE_MC.replace("data.jsonl", "data.csv")
        .replace('"{{ choices }}"', '"{{ [a, b] }}"')
        .replace("{{ label }}", "{{ label | int }}")
    )
    csv_text = "question,a,b,label\n" + "".join(
        f"{r['question']},{r['choices'][0]},{r['choices'][1]},{r['label']}\n" for r in rows
    )
    plain = {"task.yaml": NATIVE_MC, "data.jsonl": jsonl(rows), "csv/task.yaml": csv_task, "csv/data.csv": csv_text}
    bom = {name: b"\xef\xbb\xbf" + text.encode() for name, text in plain.items()}
    values = []
    for name, files in (("plain", plain), ("bom", bom)):
        write(tmp_path / name, files)
        for task in ("task.yaml", "csv/task.yaml"):
            code, output = in_process(
                ["run", task, "-m", tiny_model_dir, "-o", f"run-{task[0]}", "-q"], tmp_path / name
            )
            assert code == 0, output
            run = tmp_path / name / f"run-{task[0]}"
            records = samples(run)
            expected = sum(
                max(range(2), key=lambda k: r["logprobs"][k]) == row["label"] for r, row in zip(records, rows)
            ) / len(rows)
            value = json.loads((run / "results.json").read_text())["tasks"]["arith"]["metrics"]["acc"]["value"]
            assert value == pytest.approx(expected)
            values.append([r["logprobs"] for r in records])
    assert values[0] == values[2] and values[1] == values[3]  # with and without the mark: the same scores


@pytest.mark.parametrize(
    "given,shown",
    [
        ("https://user:KEY@host/v1", "https://user:***@host/v1"),
        ("--base-url=http://token@127.0.0.1:8000/v1", "--base-url=http://***@127.0.0.1:8000/v1"),
        ("http://user:p@ss@host/v1", "http://user:***@host/v1"),  # an unescaped '@' in the password
        ("see https://a:b@c and ftp://x:y@z/", "see https://a:***@c and ftp://x:***@z/"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("mail me at a@b.c", "mail me at a@b.c"),
    ],
)
def test_url_credentials_are_masked(given, shown):
    from proctor.core.redact import mask_url_credentials

    assert mask_url_credentials(given) == shown


def test_a_group_missing_a_member_that_could_not_be_prepared_says_so(tiny_model_dir, tmp_path):
    """--skip-broken with a group member whose data is missing: the group's number is its other member's, and the
    run says so (red team 13, 509: only the skip was told, the group was printed as if whole)."""
    rows = [{"id": i, "q": f"Is {i} even?", "choices": ["no", "yes"], "label": int(i % 2 == 0)} for i in range(4)]
    member = "  - name: {n}\n    kind: multiple_choice\n    group: [g]\n    data: {{path: {f}, id: id}}\n"
    member += "    prompt: 'Q: {{{{ q }}}}\\nA:'\n    choices: '{{{{ choices }}}}'\n    target: '{{{{ label }}}}'\n"
    task = "tasks:\n" + member.format(n="a", f="d.jsonl") + member.format(n="b", f="missing.jsonl")
    write(tmp_path, {"tasks/t.yaml": task, "tasks/d.jsonl": jsonl(rows)})
    code, output = proctor(["run", "tasks", "-m", tiny_model_dir, "-o", "run", "--skip-broken", "-q"], tmp_path)
    assert code == 0, output
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert list(results["groups"]) == ["g"] and results["groups"]["g"]["tasks"] == ["a"]
    told = "b: could not be prepared, so group(s) g average the other tasks only"
    assert told in results["warnings"] and told in flat(output)
