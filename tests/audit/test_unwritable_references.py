"""``references.unwritable``: references holding what no model writes, through ``proctor validate``'s entry point.
Each broken task names the row and what the reference holds; each right twin (the same answers clean, or the
characters where they belong to the text) is silent."""

from __future__ import annotations

import json

import pytest

from proctor.cli import main
from proctor.scoring.text import SQUAD
from tests.support.audit_inputs import answers_files
from tests.support.validate_lines import audit_lines

pytestmark = pytest.mark.fast
RULE = "references.unwritable"


def _findings(folder, answers: list[str], capsys) -> list[str]:
    lines = audit_lines(folder, answers_files(answers), capsys)
    return [line for line in lines if f"[{RULE}]" in line]


@pytest.mark.parametrize(
    ("answers", "shown", "row"),
    [
        (["Lima", "<b>Paris</b>", "Rome", "<i>Oslo</i>"], "'<b>'", 2),  # markup kept from a scraped page
        (["Lima", "Rome", "Par\u200bis"], "U+200B (ZERO WIDTH SPACE)", 3),
        (["To\u00adkyo", "Lima", "Rome"], "U+00AD (SOFT HYPHEN)", 1),
        (["北京。", "东京", "巴黎"], "'。'", 1),  # SQuAD's normalisation drops ASCII punctuation only
    ],
)
def test_a_reference_no_model_writes_is_named_with_its_row(answers, shown, row, tmp_path, capsys):
    # what the rule claims: the visible words and the reference differ once both are normalised
    broken = next(a for a in answers if not a.isascii() or "<" in a)
    visible = broken.replace("<b>", "").replace("</b>", "").replace("\u200b", "").replace("\u00ad", "").rstrip("。")
    assert SQUAD(visible) != SQUAD(broken)
    (line,) = _findings(tmp_path / "broken", answers, capsys)
    assert f"holds {shown}" in line, line
    assert f"data.jsonl, row {row}" in line and "field 'target'" in line, line
    assert f"of {len(answers)} rows" in line


@pytest.mark.parametrize(
    "answers",
    [
        ["Lima", "Paris", "Rome"],
        ["北京", "东京", "巴黎"],
        ["می\u200cخواهم", "کتاب\u200cها", "خانه"],  # Persian's zero-width non-joiner is its spelling
        ["我们明天早上八点在火车站见面。", "他说这本书很有意思也很有用。"],  # sentences, not short answers
        ["List<int>", "x < y", "a<b and c>d"],  # code, not markup
        ["Paris!", "Rome.", "Oslo?"],  # ASCII punctuation: normalised away
    ],
)
def test_clean_references_and_characters_that_belong_to_the_text_are_silent(answers, tmp_path, capsys):
    assert _findings(tmp_path / "right", answers, capsys) == []


def test_a_multiple_choice_task_is_not_read(tmp_path, capsys):
    (tmp_path / "t.yaml").write_text(
        'name: mc\nkind: multiple_choice\ndata: {path: data.jsonl, id: id}\nprompt: "{{ q }}"\n'
        'choices: "{{ options }}"\ntarget: "{{ label }}"\n'
    )
    rows = [{"id": f"r{i}", "q": f"Q{i}?", "options": ["<b>yes</b>", "no"], "label": i % 2} for i in range(4)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    try:
        main(["validate", str(tmp_path / "t.yaml")])
    except SystemExit as exc:
        assert not exc.code
    out = capsys.readouterr()
    assert f"[{RULE}]" not in out.out + out.err


@pytest.mark.parametrize(
    ("answers", "what", "row"),
    [
        (["42", "=40+2", "=SUM(1;2;3)"], "a spreadsheet formula, not its value", 2),  # red team 13, 234
        (["17", "1\u00a0234", "2\u202f500"], "a number grouped by no-break spaces", 2),  # red team 13, 242
    ],
)
def test_a_spreadsheets_formula_or_grouped_number_is_named(answers, what, row, tmp_path, capsys):
    (line,) = _findings(tmp_path / "broken", answers, capsys)
    assert what in line and f"data.jsonl, row {row}" in line, line
    assert _findings(tmp_path / "clean", ["42", "6", "1234", "= in code"], capsys) == []  # values as a model writes
