"""One input with another right answer in another file of a task or another suite, and accuracy resting on one or
two scored rows, through ``proctor validate``'s entry point: GLM-130B prompt folders read as one task, probsem
suites of one prompt (``samples.conflict``, ``audit/conflict_rules.py``), a probsem suite whose contexts are all but
one unscored (``data.few-scored``). Each finding names its rule, file, row and field; the right twin is silent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.validate_lines import validate_output as _validate

pytestmark = pytest.mark.fast

GLM = 'name: "glmtask"\ntype: "mul"\npath: "data"\nfile-pattern:\n  test: "**/test.jsonl"\nmicro-batch-size: 2\n'
STATEMENTS = [("The sky is green.", 1), ("Grass is green.", 0), ("Snow is white.", 0), ("Coal is white.", 1)]


def _glm_rows(choices: list[str], relabel: bool) -> str:
    """Rows asking whether each statement holds; ``relabel``: the labels follow the choices' order (else they are
    the first file's indices, copied)."""
    rows = []
    for text, label in STATEMENTS:
        right = ["yes", "no"][label]
        rows.append(
            {
                "inputs_pretokenized": f"{text} True?",
                "choices_pretokenized": choices,
                "label": choices.index(right) if relabel else label,
            }
        )
    return "".join(json.dumps(r) + "\n" for r in rows)


def _suite(queries: list[str], expected: list[int], texts: list[str] | None = None) -> str:
    texts = texts or [t for t, _ in STATEMENTS]
    context = [{"text": t, "expected": e} for t, e in zip(texts, expected)]
    return json.dumps({"pretext": "Is it true?", "context": context, "posttext": "Answer:", "queries": queries})


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def _glm(folder: Path, relabel: bool) -> list[str]:
    files = {
        "glm.yaml": GLM,
        "data/prompt_1/test.jsonl": _glm_rows(["yes", "no"], relabel=True),
        "data/prompt_2/test.jsonl": _glm_rows(["no", "yes"], relabel=relabel),
    }
    return [str(_write(folder, files) / "glm.yaml"), "--data-path", str(folder)]


def _probsem(folder: Path, second: list[int]) -> list[str]:
    files = {
        "p/test.txt": "Read the statements and judge them.\n",
        "p/test_A.json": _suite(["True", "False"], [1, 0, 0, 1]),
        "p/test_B.json": _suite(["False", "True"], second),
    }
    return [str(_write(folder, files) / "p")]


# case -> (the broken command's arguments, the right twin's, the rule, the file and row named)
CASES = {
    "glm prompt folders": (
        lambda t: _glm(t / "broken", relabel=False),
        lambda t: _glm(t / "right", relabel=True),
        "samples.conflict",
        "prompt_2/test.jsonl, row 1, field 'target'",
    ),
    "probsem suites": (
        lambda t: _probsem(t / "broken", [1, 0, 0, 1]),
        lambda t: _probsem(t / "right", [0, 1, 1, 0]),
        "samples.conflict",
        "test_B.json, row 1, field 'target'",
    ),
    "probsem one scored context": (
        lambda t: [
            str(
                _write(
                    t / "b",
                    {
                        "p/test.txt": "Judge.\n",
                        "p/test_A.json": _suite(["True", "False"], [0] + [-1] * 7, [f"S{i}." for i in range(8)]),
                    },
                )
                / "p"
            )
        ],
        lambda t: [
            str(
                _write(
                    t / "r",
                    {
                        "p/test.txt": "Judge.\n",
                        "p/test_A.json": _suite(["True", "False"], [0, 1] * 4, [f"S{i}." for i in range(8)]),
                    },
                )
                / "p"
            )
        ],
        "data.few-scored",
        "test_A.json, row 1, field 'target'",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_finding_names_its_rule_file_row_and_field_and_the_twin_is_silent(case, tmp_path, capsys):
    broken, right, rule, place = CASES[case]
    text = _validate(broken(tmp_path), capsys)
    found = [line for line in text.splitlines() if f"[{rule}]" in line]
    assert found, text
    assert place in found[0], found[0]
    quiet = _validate(right(tmp_path), capsys)
    assert "audit [" not in quiet, quiet


def test_the_other_file_is_named_too(tmp_path, capsys):
    text = _validate(_glm(tmp_path, relabel=False), capsys)
    found = next(line for line in text.splitlines() if "[samples.conflict]" in line)
    assert "row 1 of prompt_1/test.jsonl" in found and "'yes' here, 'no' there" in found, found


def test_suites_of_other_folders_are_not_compared(tmp_path, capsys):
    """Two prompts' suites that happen to ask one statement with another answer are two experiments."""
    a = _write(tmp_path / "a", {"test.txt": "Judge.\n", "test_A.json": _suite(["True", "False"], [1, 0, 0, 1])})
    b = _write(tmp_path / "b", {"other.txt": "Judge.\n", "other_A.json": _suite(["False", "True"], [1, 0, 0, 1])})
    assert "[samples.conflict]" not in _validate([str(a), str(b)], capsys)
