"""``data.filter-biased`` and ``target.contradicts-answer`` (red team 9), through ``proctor validate``'s entry point:
a filter that selects rows by their answer, or whose 'or' has a bare text (always true); a target that maps the
row's own answer text to another choice. Each right twin is silent: a filter that drops unlabelled rows
(label != -1), one that compares both sides, a mapping in the choices' order."""

from __future__ import annotations

import pytest

from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast
FILTER = "data.filter-biased"
CONTRADICTS = "target.contradicts-answer"
TASK = """\
name: quiz
kind: multiple_choice
data: {path: data.jsonl, id: id, FILTER}
prompt: "{{ q }}"
choices: CHOICES
target: "TARGET"
"""
ROWS = [
    {"id": f"r{i}", "q": f"Is claim {i} right?", "answer": ["yes", "no"][i % 2], "subject": ["a", "b", "c"][i % 3]}
    for i in range(12)
]


def _findings(folder, capsys, filter_: str = 'filter: "{{ true }}"', choices='["no", "yes"]', target=None) -> list:
    target = target or "{{ ['no', 'yes'].index(answer) }}"
    text = TASK.replace("FILTER", filter_).replace("CHOICES", choices).replace("TARGET", target)
    return audit_lines(folder, {"t.yaml": text, "data.jsonl": jsonl_text(ROWS)}, capsys)


@pytest.mark.parametrize(
    ("filter_", "said"),
    [
        ("filter: \"{{ answer != 'no' or subject == 'a' }}\"", "reads 'answer'"),
        ("filter: \"{{ subject == 'a' or 'b' }}\"", "bare text 'b'"),
    ],
)
def test_a_filter_on_the_answer_or_with_a_bare_text_is_named(filter_, said, tmp_path, capsys):
    lines = [line for line in _findings(tmp_path / "f", capsys, filter_) if f"[{FILTER}]" in line]
    assert lines and said in lines[0] and "field 'data.filter'" in lines[0], lines


@pytest.mark.parametrize(
    "filter_",
    ["filter: \"{{ answer != '' }}\"", "filter: \"{{ subject == 'a' or subject == 'b' }}\""],
)
def test_a_filter_that_drops_unanswered_rows_or_compares_both_sides_is_silent(filter_, tmp_path, capsys):
    assert _findings(tmp_path / "f", capsys, filter_) == []


def test_a_target_that_inverts_the_rows_answer_is_named_and_the_right_mapping_is_not(tmp_path, capsys):
    inverted = "{{ ['yes', 'no'].index(answer) }}"
    (line,) = _findings(tmp_path / "inverted", capsys, target=inverted)
    assert f"[{CONTRADICTS}]" in line and "in 12 of the 12 rows" in line and "field 'target'" in line, line
    assert _findings(tmp_path / "right", capsys) == []
