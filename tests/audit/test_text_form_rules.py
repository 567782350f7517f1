"""Text forms the metric or the reader cannot see through, through ``proctor validate``'s entry point: references in
a Unicode form no model writes (``references.unwritable``), rows repeated in decomposed accents
(``samples.duplicate``), a label lookup with a silent default against the row's own label list
(``labels.own-list``), a truth-value answer mapped to the opposite choice (``target.contradicts-answer``), a JSON
records key naming the training split (``data.split``) and a data column named as a reader's own field (an error).
Each broken input names its file, row or line and field; each right twin is silent."""

from __future__ import annotations

import json
import unicodedata

import pytest

from proctor.cli import main
from tests.support.audit_inputs import BOOLQ_ROWS, VIETNAMESE, answers_files
from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast
OWN_LIST = "labels.own-list"
CONTRADICTS = "target.contradicts-answer"
SPLIT = "data.split"
DUPLICATE = "samples.duplicate"


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def _gen_findings(folder, answers: list, capsys, rule: str = "references.unwritable") -> list[str]:
    lines = audit_lines(folder, answers_files(answers), capsys)
    return [line for line in lines if f"[{rule}]" in line]


@pytest.mark.parametrize(
    ("answers", "shown"),
    [
        ([_nfd(a) for a in VIETNAMESE], "decomposed accents"),  # typed on macOS, or a normaliser's NFD
        (["Self-raising ﬂour", "ﬁsh", "Lima", "Rome"], "'ﬂ' (latin small ligature fl"),  # a PDF's text
        (["１８", "４２", "７", "１００"], "'１' (fullwidth digit one"),  # a Japanese pipeline's digits
        (["ain’t", "mini–game", "Lima", "Rome"], "the typographic '’'"),  # a word processor's punctuation
    ],
)
def test_a_reference_in_a_form_no_model_writes_is_named(answers, shown, tmp_path, capsys):
    (line,) = _gen_findings(tmp_path / "broken", answers, capsys)
    assert shown in line, line
    assert "data.jsonl, row 1" in line and "field 'target'" in line, line


@pytest.mark.parametrize(
    "answers",
    [
        VIETNAMESE,  # composed (NFC), as a model writes it
        [["O’Connor", "O'Connor"], ["Lima"], ["Rome"], ["Oslo"]],  # the ASCII form is an alias of the row
        ["O’Connor"] + [f"Answer {i}" for i in range(19)],  # one row of twenty: the data's own spelling
    ],
)
def test_a_reference_in_the_written_form_is_silent(answers, tmp_path, capsys):
    assert _gen_findings(tmp_path / "right", answers, capsys) == []


MC_TASK = """\
name: quiz
kind: multiple_choice
data: {path: data.jsonl, id: id}
prompt: "Q: {{ question }}\\nA:"
choices: "{{ choices }}"
target: "{{ label }}"
"""
MC_ROWS = [
    {"id": "q1", "question": "Thủ đô của Việt Nam là gì?", "choices": ["Hà Nội", "Huế", "Đà Nẵng"], "label": 0},
    {"id": "q2", "question": "Sông dài nhất Việt Nam?", "choices": ["Sông Hồng", "Mê Kông", "Sông Đà"], "label": 1},
    {"id": "q3", "question": "Món ăn nổi tiếng?", "choices": ["Phở", "Sushi", "Pizza"], "label": 0},
    {"id": "q4", "question": "Màu của lá cây?", "choices": ["Đỏ", "Xanh", "Tím"], "label": 1},
]


def test_a_row_repeated_in_decomposed_accents_is_a_duplicate(tmp_path, capsys):
    copy = {**MC_ROWS[0], "id": "q5", "question": _nfd(MC_ROWS[0]["question"])}
    copy["choices"] = [_nfd(c) for c in MC_ROWS[0]["choices"]]
    lines = audit_lines(tmp_path / "broken", {"t.yaml": MC_TASK, "data.jsonl": jsonl_text(MC_ROWS + [copy])}, capsys)
    (line,) = [line for line in lines if f"[{DUPLICATE}]" in line]
    assert "data.jsonl, row 5" in line and "field 'data'" in line and "'q1'" in line, line
    right = audit_lines(tmp_path / "right", {"t.yaml": MC_TASK, "data.jsonl": jsonl_text(MC_ROWS)}, capsys)
    assert not [line for line in right if f"[{DUPLICATE}]" in line], right


ARC_ROWS = [
    {"id": "a1", "question": "Which is a planet?", "choices": {"text": ["Mars", "Moon", "Sun"], "label": list("ABC")}},
    {"id": "a2", "question": "Which is a gas?", "choices": {"text": ["Rock", "Steam", "Ice"], "label": list("ABC")}},
    {"id": "a3", "question": "Which melts?", "choices": {"text": ["Wood", "Glass", "Ice"], "label": ["1", "2", "3"]}},
    {"id": "a4", "question": "Which swims?", "choices": {"text": ["Fish", "Cat", "Dog"], "label": ["1", "2", "3"]}},
    {"id": "a5", "question": "Which flies?", "choices": {"text": ["Cow", "Bird", "Pig"], "label": list("ABC")}},
]
ARC_KEYS = ["A", "B", "3", "1", "B"]


def _arc(target: str) -> dict[str, str]:
    task = f"""\
name: arc
kind: multiple_choice
data: {{path: data.jsonl, id: id}}
prompt: "Question: {{{{ question }}}}\\nAnswer:"
choices: "{{{{ choices.text }}}}"
target: "{target}"
"""
    rows = [{**r, "answerKey": k} for r, k in zip(ARC_ROWS, ARC_KEYS)]
    return {"t.yaml": task, "data.jsonl": jsonl_text(rows)}


@pytest.mark.parametrize(
    "target",
    [
        "{{ {'A': 0, 'B': 1, 'C': 2, 'D': 3}.get(answerKey, 0) }}",  # the digit keys fall to choice 0
        "{{ 'ABCD'.find(answerKey) if answerKey in 'ABCD' else 0 }}",
    ],
)
def test_a_gold_other_than_the_rows_own_label_list_is_named(target, tmp_path, capsys):
    lines = audit_lines(tmp_path / "broken", _arc(target), capsys)
    (line,) = [line for line in lines if f"[{OWN_LIST}]" in line]
    assert "data.jsonl, row 3" in line and "field 'target'" in line, line
    assert "'answerKey' is '3'" in line and "position 2" in line and "choice 0" in line, line


def test_a_gold_read_from_the_rows_own_label_list_is_silent(tmp_path, capsys):
    lines = audit_lines(tmp_path / "right", _arc("{{ choices.label.index(answerKey) }}"), capsys)
    assert not [line for line in lines if f"[{OWN_LIST}]" in line], lines


def _boolq(target: str) -> dict[str, str]:
    task = f"""\
name: boolq
kind: multiple_choice
data: {{path: data.jsonl, id: id}}
prompt: "{{{{ passage }}}}\\nQuestion: {{{{ question }}}}?\\nAnswer:"
choices: ["no", "yes"]
target: "{target}"
"""
    return {"t.yaml": task, "data.jsonl": jsonl_text(BOOLQ_ROWS)}


def test_a_truth_value_answer_mapped_to_the_opposite_choice_is_named(tmp_path, capsys):
    lines = audit_lines(tmp_path / "broken", _boolq("{{ 0 if answer else 1 }}"), capsys)
    (line,) = [line for line in lines if f"[{CONTRADICTS}]" in line]
    assert "data.jsonl, row 1" in line and "field 'target'" in line, line
    assert "'answer' is False, which names 'no'" in line and "'yes'" in line, line
    right = audit_lines(tmp_path / "right", _boolq("{{ 1 if answer else 0 }}"), capsys)
    assert not [line for line in right if f"[{CONTRADICTS}]" in line], right


def _records(key: str) -> dict[str, str]:
    task = f"""\
name: quiz
kind: multiple_choice
data:
  path: data.json
  records_key: {key}
prompt: "Q: {{{{ question }}}}\\nA:"
choices: "{{{{ choices }}}}"
target: "{{{{ label }}}}"
"""
    rows = [{"question": f"Question {i}?", "choices": ["x", "y", "z"], "label": i % 3} for i in range(6)]
    train = [{**r, "question": "Train " + r["question"]} for r in rows]
    return {"t.yaml": task, "data.json": json.dumps({"train": train, "test": rows})}


def test_a_records_key_naming_the_training_split_is_named(tmp_path, capsys):
    lines = audit_lines(tmp_path / "broken", _records("train"), capsys)
    (line,) = [line for line in lines if f"[{SPLIT}]" in line]
    assert "t.yaml:3" in line and "field 'records_key'" in line and "'train'" in line, line
    right = audit_lines(tmp_path / "right", _records("test"), capsys)
    assert not [line for line in right if f"[{SPLIT}]" in line], right


@pytest.mark.parametrize(
    ("name", "text", "column"),
    [
        ("data.jsonl", jsonl_text([{"question": "Q?", "choices": ["a", "b"], "label": 0, "_row": 7}]), "_row"),
        ("data.csv", "question,a,b,label,_file\nQ?,x,y,0,anatomy\n", "_file"),
    ],
)
def test_a_data_column_named_as_a_readers_field_is_refused(name, text, column, tmp_path, capsys):
    task = f"name: quiz\nkind: multiple_choice\ndata: {name}\nprompt: 'Q: {{{{ question }}}}'\n"
    task += "choices: ['x', 'y']\ntarget: '{{ label | int }}'\n"
    (tmp_path / "t.yaml").write_text(task, encoding="utf-8")
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        main(["validate", str(tmp_path / "t.yaml")])
    assert exc.value.code
    out = capsys.readouterr()
    error = next(line for line in (out.out + out.err).splitlines() if f"column '{column}'" in line)
    assert f"{name}:1" in error and f"field '{column}'" in error and "silently replaced" in error, error


@pytest.mark.parametrize(
    ("answers", "shown"),
    [
        (["18.0", "3.0", "70000.0", "540.0"], "'18.0' is a whole number written as a float"),  # a pandas column
        (["\\boxed{18}", "\\boxed{3}", "\\boxed{70000}", "\\boxed{540}"], "holds LaTeX (\\boxed{"),  # MATH's wrapper
    ],
)
def test_a_number_in_a_form_the_metric_mangles_is_named(answers, shown, tmp_path, capsys):
    (line,) = _gen_findings(tmp_path / "broken", answers, capsys)
    assert shown in line, line
    assert "data.jsonl, row 1" in line and "field 'target'" in line, line


@pytest.mark.parametrize(
    "answers",
    [
        ["18", "3", "70000", "540"],
        ["18.0", "2.5", "3.0", "0.25"],  # decimals: '18.0' is the data's own way of writing them
    ],
)
def test_numbers_as_a_model_writes_them_are_silent(answers, tmp_path, capsys):
    assert _gen_findings(tmp_path / "right", answers, capsys) == []
