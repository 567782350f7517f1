"""The choice rules over a Python use case's rows, through ``proctor validate``'s entry point: a use case builds
its prompts in Python, so its samples carry no choices, and the rows' own ``choices`` and ``answer`` are what the
audit reads (``audit/listed_choices.py``, ``dialects/aisteer/audit_rows.py``). Each broken row is named by its
rule, data file, row and field; the right twin is silent. ``validate`` takes the options ``run`` takes to build a
use case, and code a config names still needs --trust-task-code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.cli import main
from tests.support.audit_inputs import QUIZ_USE_CASE as USE_CASE

pytestmark = pytest.mark.fast

ROWS = [
    {"id": "q0", "question": "Where do fish live?", "answer": "water", "choices": ["water", "sky", "desert", "moon"]},
    {"id": "q1", "question": "What do you write with?", "answer": "pen", "choices": ["spoon", "pen", "shoe", "cup"]},
    {"id": "q2", "question": "What is frozen water?", "answer": "ice", "choices": ["steam", "sand", "ice", "glass"]},
    {"id": "q3", "question": "What do cows give?", "answer": "milk", "choices": ["milk", "oil", "wine", "tea"]},
]


def _with(row: int, **changes: object) -> list[dict]:
    return [{**r, **changes} if i == row else r for i, r in enumerate(ROWS)]


# rule -> (the broken rows, the row named (counted from 1), the field named)
CASES = {
    "choices.duplicate": (_with(2, choices=["ice", "sand", "ice", "glass"]), 3, "choices"),
    "choices.duplicate (case)": (_with(1, choices=["spoon", "pen", "Pen ", "cup"]), 2, "choices"),
    "choices.near-duplicate": (_with(0, choices=["water", "sky", "Water.", "moon"]), 1, "choices"),
    "target.ambiguous": (_with(3, choices=["milk", "oil", "milk", "tea"]), 4, "answer"),
    "choices.empty": (_with(3, choices=["milk", " ", "wine", "tea"]), 4, "choices"),
    "target.not-a-choice": (_with(1, answer="pencil"), 2, "answer"),
    "target.not-a-choice (letter)": (_with(2, answer="E"), 3, "answer"),
    "target.not-a-choice (index)": (_with(0, answer=4), 1, "answer"),
    # the use case lists (and may shuffle) the choices under letters of its own
    "choices.letter-prefixed": (
        [
            {**r, "choices": [f"{'ABCD'[k]}) {c}" for k, c in enumerate(r["choices"])], "answer": f"A) {r['answer']}"}
            for r in ROWS
        ],
        1,
        "choices",
    ),
    "choices.letter-prefixed (question)": (
        [
            {**r, "question": r["question"] + " A) " + " B) ".join(r["choices"][:2]) + " C) " + r["choices"][2]}
            for r in ROWS
        ],
        1,
        "question",
    ),
}


def _folder(path: Path, rows: list[dict]) -> Path:
    path.mkdir()
    (path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (path / "quiz.py").write_text(USE_CASE)
    return path / "quiz.py"


def _validate(args: list[str], capsys) -> tuple[int, str]:
    code = 0
    try:
        main(["validate", *args])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_use_case_row_is_named_by_rule_data_file_row_and_field(case, tmp_path, capsys):
    rows, row, field = CASES[case]
    rule = case.split(" ")[0]
    code, text = _validate([str(_folder(tmp_path / "broken", rows))], capsys)
    assert code == 0, text
    found = [line for line in text.splitlines() if f"[{rule}]" in line]
    assert found, text
    assert f"rows.jsonl, row {row}, field '{field}'" in found[0], found[0]


def test_the_right_use_case_is_silent(tmp_path, capsys):
    code, text = _validate([str(_folder(tmp_path / "right", ROWS))], capsys)
    assert code == 0 and "audit [" not in text, text


def test_validate_takes_the_use_case_options_run_takes(tmp_path, capsys):
    task = _folder(tmp_path / "t", _with(2, choices=["ice", "sand", "ice", "glass"]))
    task.write_text(USE_CASE.replace('evaluation_data = "rows.jsonl"\n', ""))
    code, text = _validate([str(task), "--use-case-data", str(tmp_path / "t" / "rows.jsonl")], capsys)
    assert code == 0 and "[choices.duplicate]" in text, text


def test_validate_asks_the_consent_run_asks_for_code_a_config_names(tmp_path, capsys):
    """A use case named on the command line is run's consent to build it; a metric file a config names is not."""
    task = _folder(tmp_path / "t", ROWS)
    task.write_text(USE_CASE.replace('evaluation_data = "rows.jsonl"\n', "").replace("evaluation_metrics = []\n", ""))
    (tmp_path / "t" / "cfg.yaml").write_text("evaluation_data: rows.jsonl\nevaluation_metrics: [mine.py:Mine]\n")
    (tmp_path / "t" / "mine.py").write_text("raise SystemExit('imported')\n")
    config = ["--use-case-config", str(tmp_path / "t" / "cfg.yaml")]
    code, text = _validate([str(task), *config], capsys)
    assert code != 0 and "--trust-task-code" in text and "imported" not in text, text
