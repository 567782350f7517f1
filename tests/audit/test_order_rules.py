"""Choices reordered against the index the row holds (``target.index-after-transform``: sorted, reversed, rotated
by a slice, MMLU's columns typed in another order, a prompt listing the options sorted under letters, lm-eval's
``doc_to_choice``) and a right choice alone in another surface form (``choices.gold-form``: a carriage return, a
full stop, a space, a probsem query), through ``proctor validate``'s entry point. Each finding names its rule, file,
line or row and field; each task's right twin (the same reordering with a target that counts in the new order, or
every choice in one form) is silent."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.audit_corpus import csv_text, jsonl
from tests.support.audit_corpus import task_yaml as task
from tests.support.audit_inputs import LETTERED_PROMPT as MMLU_PROMPT
from tests.support.audit_inputs import lmeval_quiz
from tests.support.audit_runner import write_files
from tests.support.cli_runs import run_in_process

pytestmark = pytest.mark.fast

QUIZ = [
    {"id": "q1", "question": "What is 2 + 2?", "choices": ["3", "4", "5", "6"], "label": 1},
    {"id": "q2", "question": "Capital of France?", "choices": ["Rome", "Madrid", "Paris", "Berlin"], "label": 2},
    {"id": "q3", "question": "Which is a mammal?", "choices": ["Whale", "Shark", "Trout", "Eel"], "label": 0},
    {"id": "q4", "question": "Colour of the sky?", "choices": ["Green", "Red", "Yellow", "Blue"], "label": 3},
    {"id": "q5", "question": "Legs of a spider?", "choices": ["Six", "Eight", "Ten", "Four"], "label": 1},
    {"id": "q6", "question": "What is frozen water?", "choices": ["Steam", "Ice", "Fog", "Dew"], "label": 1},
    {"id": "q7", "question": "Largest planet?", "choices": ["Mars", "Venus", "Jupiter", "Mercury"], "label": 2},
    {"id": "q8", "question": "Opposite of hot?", "choices": ["Warm", "Mild", "Tepid", "Cold"], "label": 3},
]
LETTERS = ["A", "B", "C", "D"]
LISTED = "Q: {{ question }}\n{% for c in choices%s %}{{ 'ABCD'[loop.index0] }}. {{ c }}\n{% endfor %}Answer:"
MMLU_ROWS = [[r["question"], *r["choices"], "ABCD"[r["label"]]] for r in QUIZ]


def _mmlu(choices: list[str]) -> dict[str, str]:
    data = {"path": "data.csv", "columns": ["question", "A", "B", "C", "D", "answer"]}
    spec = task(data=data, prompt=MMLU_PROMPT, choices=choices, target="{{ 'ABCD'.index(answer) }}")
    return {"t.yaml": spec, "data.csv": csv_text(None, MMLU_ROWS)}


def _native(rows: list[dict] | None = None, **fields: object) -> dict[str, str]:
    return {"t.yaml": task(**fields), "data.jsonl": jsonl(QUIZ if rows is None else rows)}


def _gold_marked(mark: object) -> list[dict]:
    """The quiz with the right choice alone in another form (``mark`` makes it from its text)."""
    out = []
    for row in QUIZ:
        choices = list(row["choices"])
        choices[row["label"]] = mark(choices[row["label"]])  # type: ignore[operator]
        out.append({**row, "choices": choices})
    return out


def _every_choice_marked(mark: object) -> list[dict]:
    return [{**r, "choices": [mark(c) for c in r["choices"]]} for r in QUIZ]  # type: ignore[operator]


def _probsem(queries: list[str]) -> dict[str, str]:
    context = [{"text": t, "expected": e} for t, e in [("Sky is blue.", 0), ("Fish fly.", 1), ("Ice is cold.", 0)]]
    suite = {"pretext": "True or false?", "context": context, "posttext": "Answer:", "queries": queries}
    return {"p/test.txt": "Judge the statements.\n", "p/test_A.json": json.dumps(suite)}


# name -> (rule, the broken task's files, its right twin's, the arguments after 'validate', where the finding points)
CASES: dict[str, tuple[str, dict[str, str], dict[str, str], list[str], str]] = {
    "sorted choices": (
        "target.index-after-transform",
        _native(choices="{{ choices | sort }}"),
        _native(choices="{{ choices | sort }}", target="{{ (choices | sort).index(choices[label]) }}"),
        ["t.yaml"],
        r"t\.yaml:\d+, field 'choices'",
    ),
    "reversed choices": (
        "target.index-after-transform",
        _native(choices="{{ choices | reverse | list }}"),
        _native(choices="{{ choices | reverse | list }}", target="{{ 3 - label }}"),
        ["t.yaml"],
        r"t\.yaml:\d+, field 'choices'",
    ),
    "choices rotated by a slice": (
        "target.index-after-transform",
        _native(choices="{{ choices[1:] + choices[:1] }}"),
        _native(choices="{{ choices[1:] + choices[:1] }}", target="{{ (label + 3) % 4 }}"),
        ["t.yaml"],
        r"t\.yaml:\d+, field 'choices'",
    ),
    "MMLU columns typed in another order": (
        "target.index-after-transform",
        _mmlu(["{{ A }}", "{{ B }}", "{{ D }}", "{{ C }}"]),
        _mmlu(["{{ A }}", "{{ B }}", "{{ C }}", "{{ D }}"]),
        ["t.yaml"],
        r"t\.yaml:\d+, field 'choices'",
    ),
    "the prompt lists the options sorted under letters": (
        "target.index-after-transform",
        _native(prompt=LISTED.replace("%s", " | sort"), choices=LETTERS),
        _native(prompt=LISTED.replace("%s", ""), choices=LETTERS),
        ["t.yaml"],
        r"t\.yaml:\d+, field 'prompt'",
    ),
    "a carriage return on the right choice alone": (
        "choices.gold-form",
        _native(_gold_marked(lambda c: c + "\r")),
        _native(_every_choice_marked(lambda c: c + "\r")),
        ["t.yaml"],
        r"data\.jsonl, row 1, field 'choices'",
    ),
    "a full stop on the right choice alone": (
        "choices.gold-form",
        _native(_gold_marked(lambda c: c + ".")),
        _native(_every_choice_marked(lambda c: c + ".")),
        ["t.yaml"],
        r"data\.jsonl, row 1, field 'choices'",
    ),
    "a space before the right choice alone": (
        "choices.gold-form",
        _native(_gold_marked(lambda c: " " + c)),
        _native(_every_choice_marked(lambda c: " " + c)),
        ["t.yaml"],
        r"data\.jsonl, row 1, field 'choices'",
    ),
    "a probsem query alone with a leading space": (
        "choices.gold-form",
        _probsem([" True", "False"]),
        _probsem(["True", "False"]),
        ["p"],
        r"test_A\.json, field 'choices'",
    ),
}


def _validate(folder: Path, args: list[str], monkeypatch) -> str:
    monkeypatch.chdir(folder)
    code, text = run_in_process(["validate", *args])
    assert code == 0, text
    return text


def _findings(text: str, rule: str) -> list[str]:
    return [line for line in text.splitlines() if f"[{rule}]" in line]


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_finding_names_its_rule_file_and_field_and_the_twin_is_silent(case, tmp_path, monkeypatch):
    rule, broken, right, args, where = CASES[case]
    write_files(tmp_path / "broken", broken)
    found = _findings(_validate(tmp_path / "broken", args, monkeypatch), rule)
    assert found and re.search(where, found[0]), found
    write_files(tmp_path / "right", right)
    assert not _findings(_validate(tmp_path / "right", args, monkeypatch), rule)


def test_the_mmlu_typo_names_the_row_and_the_two_options(tmp_path, monkeypatch):
    """Half the rows (answer C or D) score the other option: the finding counts them and shows one."""
    write_files(tmp_path, _mmlu(["{{ A }}", "{{ B }}", "{{ D }}", "{{ C }}"]))
    (line,) = _findings(_validate(tmp_path, ["t.yaml"], monkeypatch), "target.index-after-transform")
    # row 2's answer is C: the gold, choice 2, is the D column's 'Berlin', the row's C column says 'Paris'
    assert "row 2: the gold, choice 2 ('Berlin'), is not the row's own 'A..D' item 2 ('Paris')" in line, line
    assert "'answer' ('C')" in line and "in 4 of 8 probed rows" in line, line


def test_fixed_choices_and_the_unreordered_list_stay_silent(tmp_path, monkeypatch):
    """Choices as the row holds them, a fixed label set, letters over an MMLU listing in the row's order, and a
    row's second list (its key indexes that one) that holds the first one's items in another order."""
    shuffled = [{**r, "shuffled": r["choices"][::-1], "label": 3 - r["label"]} for r in QUIZ]
    for name, files in {
        "second list": _native(shuffled, choices="{{ shuffled }}"),
        "plain": _native(),
        "fixed": _native([{**r, "label": r["label"] % 2} for r in QUIZ], choices=["yes", "no"]),
        "letters": _native(
            prompt="Q: {{ question }}\nA. {{ choices[0] }}\nB. {{ choices[1] }}\nC. {{ choices[2] }}\n"
            "D. {{ choices[3] }}\nAnswer:",
            choices=LETTERS,
        ),
    }.items():
        write_files(tmp_path / name, files)
        text = _validate(tmp_path / name, ["t.yaml"], monkeypatch)
        assert "[target.index-after-transform]" not in text and "[choices.gold-form]" not in text, (name, text)


def test_a_form_that_falls_on_the_gold_by_chance_is_silent(tmp_path, monkeypatch):
    """A full stop on one choice per row, at the gold in one row of four: chance, not an artefact of the answer."""
    rows = []
    for i, row in enumerate(QUIZ):
        choices = list(row["choices"])
        marked = row["label"] if i % 4 == 0 else (row["label"] + 1) % 4
        choices[marked] += "."
        rows.append({**row, "choices": choices})
    write_files(tmp_path, _native(rows))
    assert "[choices.gold-form]" not in _validate(tmp_path, ["t.yaml"], monkeypatch)


LMEVAL = lmeval_quiz('"Q: {{question}}\\nA:"', "%s", "label")


def test_lmeval_sorted_choices_and_a_full_stop_on_the_gold(tmp_path, monkeypatch):
    pytest.importorskip("lm_eval")
    cases = {
        "target.index-after-transform": (
            {"quiz.yaml": LMEVAL % '"{{choices|sort}}"', "test.jsonl": jsonl(QUIZ)},
            {"quiz.yaml": LMEVAL % "choices", "test.jsonl": jsonl(QUIZ)},
            r"quiz\.yaml:\d+, field 'doc_to_choice'",
        ),
        "choices.gold-form": (
            {"quiz.yaml": LMEVAL % "choices", "test.jsonl": jsonl(_gold_marked(lambda c: c + "."))},
            {"quiz.yaml": LMEVAL % "choices", "test.jsonl": jsonl(_every_choice_marked(lambda c: c + "."))},
            r"quiz\.yaml, row 0, field 'choices'",
        ),
    }
    for rule, (broken, right, where) in cases.items():
        write_files(tmp_path / rule / "broken", broken)
        found = _findings(_validate(tmp_path / rule / "broken", ["quiz.yaml"], monkeypatch), rule)
        assert found and re.search(where, found[0]), (rule, found)
        write_files(tmp_path / rule / "right", right)
        assert not _findings(_validate(tmp_path / rule / "right", ["quiz.yaml"], monkeypatch), rule), rule
