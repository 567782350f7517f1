"""References read as the task's own metric compares them (``audit/reference_comparison.py``), through ``proctor
validate``'s entry point on lm-eval generation tasks: a lettered reference 'A' that lm-eval's exact_match keeps
(SQuAD's rule would drop it as an article; ``references.empty``), a stray character in the part the metric's
``regexes_to_ignore`` deletes, and an odd alias beside a clean one (``references.unwritable``). Each beside the
broken twin the rule must still name, with its row."""

from __future__ import annotations

import pytest

from proctor.core.answer_normalisation import SQUAD
from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast
EMPTY, UNWRITABLE = "references.empty", "references.unwritable"

LMEVAL = """task: quiz
dataset_path: json
dataset_kwargs:
  data_files:
    test: test.jsonl
output_type: generate_until
test_split: test
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{target}"
generation_kwargs:
  until: ["\\n"]
metric_list:
  - metric: exact_match
{settings}"""


def _lines(folder, monkeypatch, capsys, rows: list[dict], target: str, settings: str, rule: str) -> list[str]:
    folder.mkdir()
    monkeypatch.chdir(folder)  # lm-eval reads data_files from the working folder
    files = {"quiz.yaml": LMEVAL.format(target=target, settings=settings), "test.jsonl": jsonl_text(rows)}
    found = audit_lines(folder, files, capsys, [str(folder / "quiz.yaml")])
    return [line for line in found if f"[{rule}]" in line]


LETTERED = [{"question": f"Which letter is answer {i}?", "answer": i % 4} for i in range(8)]


def test_a_lettered_reference_lm_evals_exact_match_keeps_is_not_empty(tmp_path, monkeypatch, capsys):
    pytest.importorskip("lm_eval")
    assert SQUAD("A") == "" and SQUAD("(A)") == ""  # what the rule once read: 'A' is an article to SQuAD
    settings = "    ignore_case: true\n    ignore_punctuation: true\n"
    for target in ("{{['A', 'B', 'C', 'D'][answer]}}", "{{['(A)', '(B)', '(C)', '(D)'][answer]}}"):
        folder = tmp_path / str(len(target))
        assert _lines(folder, monkeypatch, capsys, LETTERED, target, settings, EMPTY) == []
    # the broken twin: '---' is empty once ignore_punctuation drops it, so a blank answer matches row 5
    marks = "{{['A', 'B', 'C', 'D', '---'][4 if question.endswith('5?') else answer]}}"
    (line,) = _lines(tmp_path / "marks", monkeypatch, capsys, LETTERED, marks, settings, EMPTY)
    assert "row 5, field 'target'" in line and "reference 0 is empty ('---')" in line, line
    assert "ignore_punctuation; no articles dropped" in line, line
    # an article the metric's own regexes_to_ignore delete is empty too (nq_open's)
    articles = settings + '    regexes_to_ignore: ["\\\\b(?:The |the |An |A |a |an )"]\n'
    spaced = "{{['A ', 'B', 'C', 'D'][answer]}}"
    (line,) = _lines(tmp_path / "articles", monkeypatch, capsys, LETTERED, spaced, articles, EMPTY)
    # rows 0 and 4 ('A ' is 'A' and a space, which the regex deletes)
    assert "row 0, field 'target'" in line and "(2 rows or places in all" in line, line


STEPS = [
    {"question": f"Q{i}?", "answer": f"Take {i} and add {i}.\u200b Then double it.\n#### {4 * i}"} for i in range(1, 7)
]


def test_a_stray_character_the_metric_deletes_is_not_unwritable(tmp_path, monkeypatch, capsys):
    pytest.importorskip("lm_eval")
    settings = '    regexes_to_ignore: ["(?s).*#### "]\n'
    # gsm8k_cot_zeroshot's: the worked solution before '#### ' is deleted from reference and answer alike
    assert _lines(tmp_path / "deleted", monkeypatch, capsys, STEPS, "{{answer}}", settings, UNWRITABLE) == []
    # the broken twin: the zero-width space inside the compared part ('2\u200b4') is named, with its row
    rows = [*STEPS[:2], {**STEPS[2], "answer": "Three.\n#### 1\u200b2"}, *STEPS[3:]]
    (line,) = _lines(tmp_path / "kept", monkeypatch, capsys, rows, "{{answer}}", settings, UNWRITABLE)
    assert "row 2, field 'target'" in line and "U+200B (ZERO WIDTH SPACE)" in line and "(1 of 6 rows)" in line, line


ALIASES = [{"question": f"Which gas is element {i}?", "answers": ["Hydro\u00adgen", "hydrogen"]} for i in range(4)]


def test_an_odd_alias_beside_a_clean_one_answers_its_row(tmp_path, monkeypatch, capsys):
    pytest.importorskip("lm_eval")
    settings = "    ignore_case: true\n    ignore_punctuation: true\n"
    assert _lines(tmp_path / "aliased", monkeypatch, capsys, ALIASES, "{{answers}}", settings, UNWRITABLE) == []
    # the broken twin: row 1 has only the soft-hyphenated spelling, which no answer matches
    rows = [ALIASES[0], {**ALIASES[1], "answers": ["Hydro\u00adgen"]}, *ALIASES[2:]]
    (line,) = _lines(tmp_path / "alone", monkeypatch, capsys, rows, "{{answers}}", settings, UNWRITABLE)
    assert "row 1, field 'target'" in line and "U+00AD (SOFT HYPHEN)" in line and "(1 of 4 rows)" in line, line
