"""Rows that share a long passage (reading comprehension: several questions about one text) are no copies of
each other: a few-shot example drawn from the task's own rows shows the passage, not the row (red team 12, 104),
while a row repeated under another id is still named (``fewshot.leak``)."""

from __future__ import annotations

import yaml

from tests.support.validate_lines import audit_lines, jsonl_text

PASSAGE = "The weather in the region was mild that year and many travellers came to see the old harbour town."
ROWS = [
    {"id": f"r{i}", "passage": PASSAGE, "country": c, "choices": [a, b], "answer": k}
    for i, (c, a, b, k) in enumerate(
        [("France", "Paris", "Rome", 0), ("Italy", "Paris", "Rome", 1), ("Peru", "Lima", "Quito", 0)]
        + [("Spain", "Madrid", "Lisbon", 0), ("Chile", "Lima", "Santiago", 1), ("Japan", "Tokyo", "Seoul", 0)]
    )
]
TASK = {
    "name": "mc",
    "kind": "multiple_choice",
    "data": {"path": "mc.jsonl", "id": "id"},
    "prompt": "{{ passage }} Question: what is the capital of {{ country }}? Answer:",
    "choices": "{{ choices }}",
    "target": "{{ answer }}",
    "fewshot": {"count": 2},
}


def _leaks(folder, capsys, rows, task: dict = TASK) -> list[str]:
    files = {"t.yaml": yaml.safe_dump(task, sort_keys=False), "mc.jsonl": jsonl_text(rows)}
    return [line for line in audit_lines(folder, files, capsys) if "[fewshot.leak]" in line]


def test_rows_sharing_a_passage_are_not_shown_themselves(tmp_path, capsys):
    assert not _leaks(tmp_path / "shared", capsys, ROWS)


def test_a_row_repeated_under_another_id_is_shown_itself(tmp_path, capsys):
    twins = ROWS + [{**row, "id": row["id"] + "-twin"} for row in ROWS]
    found = _leaks(tmp_path / "twins", capsys, twins)
    assert found and "shown a copy of themselves" in found[0], found


def test_a_twin_under_an_id_column_of_another_name_is_shown_itself(tmp_path, capsys):
    """The ids in 'qid' (declared as the task's id) or 'idx' (XCOPA's, undeclared) are ids too: a row repeated under
    another of them is the row itself (review of session 12, finding 2: only a column named 'id' was left out)."""
    for column, declared in (("qid", True), ("idx", False), ("question_id", False)):
        rows = [{column if k == "id" else k: v for k, v in row.items()} for row in ROWS]
        twins = rows + [{**row, column: row[column] + "-twin"} for row in rows]
        task = {**TASK, "data": {"path": "mc.jsonl", **({"id": column} if declared else {})}}
        found = _leaks(tmp_path / column, capsys, twins, task)
        assert found and "shown a copy of themselves" in found[0], (column, found)


def test_a_row_asked_twice_is_a_duplicate_whatever_examples_precede_it(tmp_path, capsys):
    """samples.duplicate compared whole prompts, and with few-shot examples each copy of a row is shown other
    examples: the repeat went unsaid (review of session 12, S6). It compares the row's own question now."""
    twins = ROWS + [{**ROWS[2], "id": "r2-again"}]
    files = {"t.yaml": yaml.safe_dump(TASK, sort_keys=False), "mc.jsonl": jsonl_text(twins)}
    found = [line for line in audit_lines(tmp_path / "fewshot", files, capsys) if "[samples.duplicate]" in line]
    assert found and "row 7" in found[0], found
    alone = [line for line in audit_lines(tmp_path / "once", {**files, "mc.jsonl": jsonl_text(ROWS)}, capsys)]
    assert not [line for line in alone if "[samples.duplicate]" in line], alone
