"""The right choice found without the question (``choices.gold-guessable``), through ``proctor validate``'s entry
point: an answer column with an explanation appended (the gold the longest in every row) and distractors cut to a
width, beside a set that only leans that way (as real sets do) and a fixed label set."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast
GUESSABLE = "choices.gold-guessable"

CAPITALS = [
    ("France", "Paris", ["Lyon", "Nice", "Lille"]),
    ("Italy", "Rome", ["Milan", "Turin", "Naples"]),
    ("Spain", "Madrid", ["Seville", "Bilbao", "Malaga"]),
    ("Japan", "Tokyo", ["Osaka", "Kyoto", "Nagoya"]),
    ("Kenya", "Nairobi", ["Mombasa", "Kisumu", "Nakuru"]),
    ("Peru", "Lima", ["Cusco", "Arequipa", "Trujillo"]),
    ("Egypt", "Cairo", ["Giza", "Luxor", "Aswan"]),
    ("Canada", "Ottawa", ["Toronto", "Calgary", "Quebec"]),
    ("Chile", "Santiago", ["Arica", "Temuco", "Iquique"]),
    ("Norway", "Oslo", ["Bergen", "Bodo", "Tromso"]),
    ("Ghana", "Accra", ["Kumasi", "Tamale", "Ho"]),
    ("Turkey", "Ankara", ["Izmir", "Bursa", "Adana"]),
]
ROWS = [
    {"question": f"{kind} of {country}?", "answer": gold, "others": others, "label": i % 4}
    for kind in ("What is the capital", "Which city is the seat of government")
    for i, (country, gold, others) in enumerate(CAPITALS)
]


def _rows(answer) -> list[dict]:
    """Each row's choices with the gold at ``label`` and its text made by ``answer(row)``."""
    out = []
    for row in ROWS:
        choices = list(row["others"])
        choices.insert(row["label"], answer(row))
        out.append({"question": row["question"], "choices": choices, "label": row["label"]})
    return out


def _lines(folder, capsys, rows) -> list[str]:
    task = {"name": "capitals", "kind": "multiple_choice", "data": "data.jsonl"}
    task.update({"prompt": "Q: {{ question }}\nA:", "choices": "{{ choices }}", "target": "{{ label }}"})
    files = {"t.yaml": yaml.safe_dump(task, sort_keys=False), "data.jsonl": jsonl_text(rows)}
    return [line for line in audit_lines(folder, files, capsys) if f"[{GUESSABLE}]" in line]


def test_an_explanation_appended_to_the_answer_column_is_named(tmp_path, capsys):
    lines = _lines(tmp_path, capsys, _rows(lambda r: f"{r['answer']}, its capital city"))
    assert len(lines) == 1, lines
    assert re.search(r"data\.jsonl, row 1, field 'choices'", lines[0]), lines[0]
    assert "the longest of its row in 24 of the 24 probed rows" in lines[0]


def test_distractors_cut_to_a_width_leave_the_answer_the_longest(tmp_path, capsys):
    rows = _rows(lambda r: r["answer"] + " City")
    for row in rows:
        row["choices"] = [c if i == row["label"] else c[:4] for i, c in enumerate(row["choices"])]
    assert len(_lines(tmp_path, capsys, rows)) == 1


def test_a_set_that_only_leans_towards_the_longer_answer_is_silent(tmp_path, capsys):
    """The gold the longest in about half the rows (real sets lean less): no finding."""
    assert not _lines(tmp_path, capsys, _rows(lambda r: r["answer"] + (" City" if r["label"] % 2 else "")))


def test_a_fixed_label_set_is_the_label_prior_not_an_artefact(tmp_path, capsys):
    rows = [{"question": r["question"], "choices": ["yes", "no", "maybe"], "label": 2} for r in ROWS]
    assert not _lines(tmp_path, capsys, rows)
