"""Rows that are one item counted twice or answered two ways, and rules that held for one dialect only, through
``proctor validate``'s entry point: a multiple-choice row copied within its file with its choices in another order
or in another case (``samples.duplicate``, ``samples.conflict``: the row scan's ``reorders``). Each finding is named
by rule, file, row and field; each broken input has a right twin that stays silent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.audit_inputs import ARC_QUESTIONS
from tests.support.audit_inputs import QUIZ_USE_CASE as USE_CASE
from tests.support.seahelm_fixtures import sentiment_args, sentiment_files, sentiment_rows
from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast

NATIVE = "kind: multiple_choice\ndata: data.jsonl\nprompt: '{{ query }}\n\n  Answer:'\nchoices: '{{ choices }}'\n"
NATIVE += "target: '{{ gold }}'\nname: t\n"


def _rows(extra: list[tuple[str, list[str], int]]) -> list[dict[str, Any]]:
    return [{"query": q, "choices": c, "gold": g} for q, c, g in [*ARC_QUESTIONS, *extra]]


def _reversed(at: int, gold_copied: bool) -> tuple[str, list[str], int]:
    query, choices, gold = ARC_QUESTIONS[at]
    return query, choices[::-1], gold if gold_copied else len(choices) - 1 - gold


def _lowered(at: int, gold: int) -> tuple[str, list[str], int]:
    query, choices, _ = ARC_QUESTIONS[at]
    return query.lower(), choices, gold


# case -> (the rows, the rule, the row named (counted from 1), the field), or (rows, None, ...) for a right twin
NATIVE_CASES: dict[str, tuple[list[dict[str, Any]], str | None, int, str]] = {
    "permuted copy, gold remapped": (_rows([_reversed(1, gold_copied=False)]), "samples.duplicate", 7, "data"),
    "permuted copy, gold index copied": (_rows([_reversed(3, gold_copied=True)]), "samples.conflict", 7, "target"),
    "lower-cased copy, another gold": (_rows([_lowered(2, gold=1)]), "samples.conflict", 7, "target"),
    "lower-cased copy, same gold": (_rows([_lowered(2, gold=0)]), "samples.duplicate", 7, "data"),
    # right twins: the same question with other choices, the same choices with another question
    "other choices": (_rows([(ARC_QUESTIONS[1][0], ["steam", "ice", "fog", "glass"], 1)]), None, 0, ""),
    "other question": (_rows([("What is ice made of?", ARC_QUESTIONS[1][1][::-1], 1)]), None, 0, ""),
}


@pytest.mark.parametrize("case", NATIVE_CASES)
def test_a_copy_in_another_order_or_case(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows, rule, row, field = NATIVE_CASES[case]
    lines = audit_lines(tmp_path, {"t.yaml": NATIVE, "data.jsonl": jsonl_text(rows)}, capsys)
    if rule is None:
        assert not [line for line in lines if "samples." in line], lines
        return
    named = [line for line in lines if f"[{rule}]" in line]
    assert len(named) == 1 and f"data.jsonl, row {row}, field '{field}'" in named[0], lines
    other = "samples.conflict" if rule == "samples.duplicate" else "samples.duplicate"
    assert not any(f"[{other}]" in line for line in lines), lines


# -- a Python use case's rows (AISteer360): its samples carry no prompt, the rows' question is read ----------------

UC_ROWS = [{"id": f"q{i}", "question": q, "answer": c[g], "choices": c} for i, (q, c, g) in enumerate(ARC_QUESTIONS)]


def _uc(changes: dict[int, dict[str, Any]], extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    return [{**r, **changes.get(i, {})} for i, r in enumerate(UC_ROWS)] + (extra or [])


def _hinted() -> list[dict[str, Any]]:
    return [{**r, "question": f"{r['question']} (hint: {r['answer']})"} for r in UC_ROWS]


# case -> (the rows, the rule, the row named (counted from 1), the field), or (rows, None, ...) for a right twin
UC_CASES: dict[str, tuple[list[dict[str, Any]], str | None, int, str]] = {
    "row repeated under a new id": (
        _uc({}, [{**UC_ROWS[2], "id": "copy", "choices": UC_ROWS[2]["choices"][::-1]}]),
        "samples.duplicate",
        7,
        "data",
    ),
    "question asked again with another answer": (
        _uc({}, [{**UC_ROWS[4], "id": "copy", "question": UC_ROWS[4]["question"].upper(), "answer": "silk"}]),
        "samples.conflict",
        7,
        "answer",
    ),
    "a choice reads None": (
        _uc({3: {"choices": ["lung", "liver", "None", "heart"]}}),
        "choices.placeholder",
        4,
        "choices",
    ),
    "a blank question": (_uc({1: {"question": "  "}}), "prompt.empty", 2, "question"),
    "the answer written into the question": (_hinted(), "prompt.contains-gold", 1, "question"),
    # right twins: another question with the same choices; a question naming a distractor; one hinted row
    "same choices, another question": (
        _uc({}, [{**UC_ROWS[2], "id": "x", "question": "Which planet has rings?", "answer": "Mars"}]),
        None,
        0,
        "",
    ),
    "one hinted row": (_uc({0: _hinted()[0]}), None, 0, ""),
}


@pytest.mark.parametrize("case", UC_CASES)
def test_a_use_case_row_counted_twice_or_asking_nothing(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows, rule, row, field = UC_CASES[case]
    files = {"quiz.py": USE_CASE, "rows.jsonl": jsonl_text(rows)}
    lines = audit_lines(tmp_path, files, capsys, [str(tmp_path / "quiz.py")])
    if rule is None:
        assert not lines, lines
        return
    named = [line for line in lines if f"[{rule}]" in line]
    assert len(named) == 1 and f"rows.jsonl, row {row}, field '{field}'" in named[0], lines


# -- SEA-HELM: rows in another language than the task's, ids repeated (dialects/seahelm/row_rules.py) -------------

# case -> (files, the rule, what the finding names), or (files, None, "") for a right twin
SEA_CASES: dict[str, tuple[dict[str, str], str | None, str]] = {
    "English rows under /id": (
        sentiment_files(sentiment_rows(0, "en"), sentiment_rows(100)),
        "seahelm.other-language",
        "copy, row 1, field 'metadata.language'",
    ),
    "English examples for /id": (
        sentiment_files(sentiment_rows(0), sentiment_rows(100, "en")),
        "seahelm.other-language",
        "config.yaml, field 'example_filepath'",
    ),
    "ids repeated in pairs": (
        sentiment_files(sentiment_rows(0, repeat_ids=True), sentiment_rows(100)),
        "seahelm.ids-repeated",
        "copy, row 2, field 'id'",
    ),
    # right twins: the language's own rows and examples, a region subtag, a translation pair naming the language
    "Indonesian rows": (sentiment_files(sentiment_rows(0), sentiment_rows(100)), None, ""),
    "region and pair codes": (sentiment_files(sentiment_rows(0, "id-ID"), sentiment_rows(100, "en-id")), None, ""),
}


@pytest.mark.parametrize("case", SEA_CASES)
def test_seahelm_rows_of_another_language_or_one_id(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files, rule, where = SEA_CASES[case]
    args = [str(tmp_path / "sa"), "--seahelm-data", f"aisingapore/NLU-Sentiment-Analysis={tmp_path / 'copy'}"]
    lines = audit_lines(tmp_path, files, capsys, args)
    if rule is None:
        assert not lines, lines
        return
    named = [line for line in lines if f"[{rule}]" in line]
    assert len(named) == 1 and where in named[0], lines


# -- fewshot.constant-label where the examples are not a native multiple-choice pool ---------------------------------

GENERATE = """\
kind: generate
data: data.jsonl
prompt: '{{ question }}\n\n  Answer:'
target: '{{ answer }}'
generation:
  stop: ['\n\n']
  max_tokens: 4
fewshot:
  count: 3
  source:
    path: dev.jsonl
name: t
"""

YES_NO = [f"Is statement {i} true?" for i in range(8)]


def _generate_files(dev_answers: list[str]) -> dict[str, str]:
    evaluated = [{"question": q, "answer": "yes" if i % 2 else "no"} for i, q in enumerate(YES_NO)]
    dev = [{"question": f"Is example {i} true?", "answer": a} for i, a in enumerate(dev_answers)]
    return {"t.yaml": GENERATE, "data.jsonl": jsonl_text(evaluated), "dev.jsonl": jsonl_text(dev)}


LMEVAL = """\
task: quiz
dataset_path: json
dataset_kwargs:
  data_files:
    train: train.jsonl
    test: test.jsonl
output_type: multiple_choice
test_split: test
fewshot_split: train
doc_to_text: "{{query}}\\nAnswer:"
doc_to_choice: choices
doc_to_target: gold
num_fewshot: 3
fewshot_config:
  sampler: first_n
"""


def _lmeval_files(train_golds: list[int]) -> dict[str, str]:
    def rows(golds: list[int], tag: str) -> list[dict[str, Any]]:
        return [
            {"query": f"{tag} question {i}?", "choices": [f"{tag} {i}{k}" for k in "abcd"], "gold": g}
            for i, g in enumerate(golds)
        ]

    return {
        "quiz.yaml": LMEVAL,
        "train.jsonl": jsonl_text(rows(train_golds, "train")),
        "test.jsonl": jsonl_text(rows([0, 1, 2, 3, 1, 2], "test")),
    }


def _sea_examples(labels: list[str]) -> list[dict[str, Any]]:
    return [{**row, "label": label} for row, label in zip(sentiment_rows(100), labels)]


# case -> (files, the command's arguments past 'validate' (None: t.yaml), the finding's place), or place None: silent
CONSTANT_CASES: dict[str, tuple[dict[str, str], list[str] | None, str | None]] = {
    "native generate, every example 'yes'": (_generate_files(["yes", "Yes", "yes ", "yes"]), None, "t.yaml:"),
    "native generate, mixed examples": (_generate_files(["yes", "no", "yes", "no"]), None, None),
    "lm-eval first_n over a sorted train file": (_lmeval_files([0, 0, 0, 0, 1, 2, 3]), ["quiz.yaml"], "quiz.yaml"),
    "lm-eval first_n over a mixed train file": (_lmeval_files([0, 2, 1, 0, 1, 2, 3]), ["quiz.yaml"], None),
    "SEA-HELM examples all Positif": (
        sentiment_files(sentiment_rows(0), _sea_examples(["Positif"] * 3)),
        ["sa", "--seahelm-data", "aisingapore/NLU-Sentiment-Analysis=copy"],
        "config.yaml, field 'example_filepath'",
    ),
    "SEA-HELM examples of every label": (
        sentiment_files(sentiment_rows(0), _sea_examples(["Positif", "Netral", "Negatif"])),
        ["sa", "--seahelm-data", "aisingapore/NLU-Sentiment-Analysis=copy"],
        None,
    ),
}


@pytest.mark.parametrize("case", CONSTANT_CASES)
def test_examples_of_one_answer_where_a_dialect_picks_them(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    files, args, where = CONSTANT_CASES[case]
    monkeypatch.chdir(tmp_path)
    lines = audit_lines(tmp_path, files, capsys, args)
    named = [line for line in lines if "[fewshot.constant-label]" in line]
    if where is None:
        assert not named, lines
        return
    assert len(named) == 1 and where in named[0], lines


# -- groups: one file's rows as two members of a suite, group names that differ in case ---------------------------

GROUPED = """\
defaults:
  kind: multiple_choice
  data: data.jsonl
  prompt: '{{ query }}\n\n  Answer:'
  choices: '{{ choices }}'
  target: '{{ gold }}'
tasks:
"""


def _grouped(members: str) -> dict[str, str]:
    other = [{"query": f"Other question {i}?", "choices": [f"x{i}", f"y{i}"], "gold": i % 2} for i in range(6)]
    dev = [{"query": f"Dev question {i}?", "choices": [f"d{i}", f"e{i}"], "gold": i % 2} for i in range(3)]
    return {
        "t.yaml": GROUPED + members,
        "data.jsonl": jsonl_text(_rows([])),
        "other.jsonl": jsonl_text(other),
        "dev.jsonl": jsonl_text(dev),
    }


FIVE_SHOT = "  fewshot: {count: 2, source: {path: dev.jsonl}}\n"
GROUP_CASES: dict[str, tuple[dict[str, str], str | None, str]] = {
    "0-shot and 2-shot members of a suite": (
        _grouped(
            "- {name: arc_0, group: suite}\n- name: arc_2\n  group: suite\n"
            + FIVE_SHOT
            + "- {name: other, group: suite, data: other.jsonl}\n"
        ),
        "group.overlap",
        "t.yaml:11, field 'name'",
    ),
    "groups 'science' and 'Science'": (
        _grouped(
            "- {name: arc, group: science}\n- {name: other, group: Science, data: other.jsonl}\n"
            "- {name: more, group: science, data: dev.jsonl}\n"
        ),
        "group.look-alike",
        "t.yaml:11, field 'group'",
    ),
    # right twins: a group of one file's prompt variants (its purpose), one spelling of each group
    "prompt variants of one file": (
        _grouped("- {name: arc_0, group: arc}\n- name: arc_2\n  group: arc\n" + FIVE_SHOT),
        None,
        "",
    ),
    "two groups spelled apart": (
        _grouped("- {name: arc, group: science}\n- {name: other, group: maths, data: other.jsonl}\n"),
        None,
        "",
    ),
}


@pytest.mark.parametrize("case", GROUP_CASES)
def test_group_members_of_one_file_and_look_alike_groups(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files, rule, where = GROUP_CASES[case]
    lines = [line for line in audit_lines(tmp_path, files, capsys) if "group." in line]
    if rule is None:
        assert not lines, lines
        return
    named = [line for line in lines if f"[{rule}]" in line]
    assert len(named) == 1 and where in named[0], lines


def test_seahelm_examples_outnumbering_the_rows_evaluated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The eval and examples files swapped: 3 rows evaluated, 6 shown as examples (the right twin: 6 and 3)."""
    swapped, right = tmp_path / "swapped", tmp_path / "right"
    files = sentiment_files(sentiment_rows(0)[:3], sentiment_rows(100))
    lines = audit_lines(swapped, files, capsys, sentiment_args(swapped))
    named = [line for line in lines if "[seahelm.examples-outnumber-rows]" in line]
    assert len(named) == 1 and "config.yaml, field 'example_filepath'" in named[0], lines
    files = sentiment_files(sentiment_rows(0), sentiment_rows(100)[:3])
    lines = audit_lines(right, files, capsys, sentiment_args(right))
    assert not lines, lines
