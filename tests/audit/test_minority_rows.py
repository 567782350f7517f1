"""Rules that spoke of "most rows" now name a minority where the template or the data makes it certain, through
``proctor validate``'s entry point: a hint field that holds the answer in some rows (``prompt.contains-gold``),
options listed only under an ``{% if %}`` (``choices.not-in-prompt``), a token limit below some references' word
counts (``generation.too-short``). Each right twin is silent."""

from __future__ import annotations

import pytest

from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast

QUIZ = [
    ("What is 2 + 2?", ["three", "four", "five", "six"], 1),
    ("Capital of France?", ["Berlin", "Madrid", "Paris", "Rome"], 2),
    ("Which is a mammal?", ["Whale", "Shark", "Trout", "Salmon"], 0),
    ("Colour of the sky?", ["Green", "Orange", "Yellow", "Blue"], 3),
    ("Legs of a spider?", ["Six", "Eight", "Ten", "Four"], 1),
    ("Frozen water?", ["Steam", "Ice cube", "Fog", "Dew"], 1),
    ("Largest planet?", ["Mars", "Venus", "Jupiter", "Mercury"], 2),
    ("Fastest land animal?", ["Cheetah", "Horse", "Tortoise", "Snail"], 0),
]


def _validate(folder, task: str, rows: list[dict], capsys) -> list[str]:
    return audit_lines(folder, {"t.yaml": task, "data.jsonl": jsonl_text(rows)}, capsys)


MC = """\
name: quiz
kind: multiple_choice
data: {path: data.jsonl, id: id}
prompt: "PROMPT"
choices: CHOICES
target: "{{ label }}"
"""


def test_a_hint_that_holds_the_answer_in_two_of_eight_rows_is_named(tmp_path, capsys):
    task = MC.replace("PROMPT", "{{ q }}{% if hint %} (hint: {{ hint }}){% endif %}").replace(
        "CHOICES", '"{{ options }}"'
    )
    rows = [{"id": f"r{i}", "q": q, "options": o, "label": g, "hint": ""} for i, (q, o, g) in enumerate(QUIZ)]
    rows[1]["hint"], rows[5]["hint"] = "think of Paris in spring", "an Ice cube floats"
    (line,) = _validate(tmp_path / "leaks", task, rows, capsys)
    assert "[prompt.contains-gold]" in line and "field 'hint'" in line and "in 2 of the 8 rows" in line, line
    assert "data.jsonl, row 2" in line
    for row in rows:  # hints that do not give the answer away
        row["hint"] = "think it through" if row["id"] in ("r1", "r5") else ""
    assert _validate(tmp_path / "right", task, rows, capsys) == []


def test_options_listed_only_under_an_if_are_named_for_the_rows_without_them(tmp_path, capsys):
    listed = "{% for o in options %}{{ 'ABCD'[loop.index0] }}. {{ o }}\\n{% endfor %}"
    task = MC.replace("PROMPT", "{{ q }}\\n{% if src == 'a' %}" + listed + "{% endif %}Answer:").replace(
        "CHOICES", "[A, B, C, D]"
    )
    rows = [
        {"id": f"r{i}", "q": q, "options": o, "label": g, "src": "b" if i in (1, 4, 6) else "a"}
        for i, (q, o, g) in enumerate(QUIZ)
    ]
    (line,) = _validate(tmp_path / "hidden", task, rows, capsys)
    assert "[choices.not-in-prompt]" in line and "3 of the 8 rows" in line and "row 2" in line, line
    assert _validate(tmp_path / "right", task.replace("{% if src == 'a' %}", "{% if src %}"), rows, capsys) == []


def test_a_token_limit_below_four_of_ten_references_is_named(tmp_path, capsys):
    task = (
        'name: q\nkind: generate\ndata: {path: data.jsonl, id: id}\nprompt: "{{ q }}"\ntarget: "{{ a }}"\n'
        'generation: {max_tokens: 5, stop: ["\\n"]}\nmetrics: [exact_match]\n'
    )
    long = "the treaty signed at the end of the long war in the north"
    rows = [{"id": f"r{i}", "q": f"Question {i}?", "a": long if i < 4 else f"answer {i}"} for i in range(10)]
    (line,) = _validate(tmp_path / "cut", task, rows, capsys)
    assert "[generation.too-short]" in line and "4 of 10 rows" in line, line
    assert _validate(tmp_path / "right", task.replace("max_tokens: 5", "max_tokens: 32"), rows, capsys) == []


def test_a_question_that_names_one_choice_in_every_row_is_not_a_leak(tmp_path, capsys):
    """'Is it true?' with choices true / false: the prompt of every row says 'true', whichever is right, so the
    rows whose answer is true do not leak it (a red-team false positive). A hint that names it in those rows only
    still does."""
    task = MC.replace("PROMPT", "{{ statement }} Is it true?").replace("CHOICES", '["true", "false"]')
    rows = [{"id": f"r{i}", "statement": f"Claim number {i} about the world.", "label": i % 2} for i in range(8)]
    assert _validate(tmp_path / "asked", task, rows, capsys) == []
    both = MC.replace("PROMPT", "{{ statement }} Is this true or false?").replace("CHOICES", '["true", "false"]')
    assert _validate(tmp_path / "both", both, rows, capsys) == []
    leak = MC.replace("PROMPT", "{{ statement }} {{ note }}").replace("CHOICES", '["true", "false"]')
    noted = [{**r, "note": "(this is true)" if r["label"] == 0 else "(check it)"} for r in rows]
    (line,) = _validate(tmp_path / "leak", leak, noted, capsys)
    assert "[prompt.contains-gold]" in line, line
