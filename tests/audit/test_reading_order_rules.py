"""A prompt and choices that read the wrong way round (``prompt.reversed``): Winogrande's partial scoring written
backwards, the sentence's ending as the prompt and each option's sentence start as a choice, through
``proctor validate``'s entry point in the native and lm-eval dialects; the right way round stays silent, and so
does lm-eval's own ``multiple_input`` shape (its contexts are the choices on purpose)."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.support.audit_inputs import lmeval_quiz
from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast
REVERSED = "prompt.reversed"

PAIRS = [
    ("Sarah was a much better surgeon than Maria so", "Sarah", "Maria", "always got the harder cases.", 0),
    ("The trophy doesn't fit into the brown suitcase because the", "trophy", "suitcase", "is too large.", 0),
    ("The trophy doesn't fit into the brown suitcase because the", "trophy", "suitcase", "is too small.", 1),
    (
        "Ian volunteered to eat Dennis's menudo after already having a bowl because",
        "Ian",
        "Dennis",
        "despised eating intestine.",
        1,
    ),
    ("He never comes to my home, but I always go to his house because the", "home", "house", "is smaller.", 0),
    (
        "The city councilmen refused the demonstrators a permit because the",
        "councilmen",
        "demonstrators",
        "feared violence.",
        0,
    ),
]
ROWS = [
    {"start": s, "option1": f"{s} {a}", "option2": f"{s} {b}", "continuation": c, "gold": g}
    for _ in range(2)
    for s, a, b, c, g in PAIRS
]


def _native(prompt: str, choices: list[str]) -> str:
    task = {"name": "wino", "kind": "multiple_choice", "data": "data.jsonl", "prompt": prompt}
    task.update({"choices": choices, "target": "{{ gold }}"})
    return yaml.safe_dump(task, sort_keys=False)


def test_the_ending_as_prompt_and_sentence_starts_as_choices_is_named(tmp_path, capsys):
    files = {
        "t.yaml": _native("{{ continuation }}", ["{{ option1 }}", "{{ option2 }}"]),
        "data.jsonl": jsonl_text(ROWS),
    }
    lines = [line for line in audit_lines(tmp_path, files, capsys) if f"[{REVERSED}]" in line]
    assert len(lines) == 1, lines
    assert re.search(r"data\.jsonl, row 1, field 'prompt'", lines[0]), lines[0]
    assert "12 of the first 12 rows" in lines[0] and "always got the harder cases." in lines[0]


def test_the_right_way_round_is_silent(tmp_path, capsys):
    """The sentence's start as the prompt, the option and the ending as the choices (proctor's Winogrande)."""
    files = {
        "t.yaml": _native(
            "{{ start }}",
            ["{{ option1.split(' ')[-1] }} {{ continuation }}", "{{ option2.split(' ')[-1] }} {{ continuation }}"],
        ),
        "data.jsonl": jsonl_text(ROWS),
    }
    assert not [line for line in audit_lines(tmp_path, files, capsys) if f"[{REVERSED}]" in line]


def test_a_few_rows_of_that_shape_are_chance(tmp_path, capsys):
    """Two rows of twelve read backwards (a lower-case ending prompt): not the template's doing."""
    rows = [
        {
            "prompt": r["continuation"] if i < 2 else f"Finish: {r['start']}",
            "a": r["option1"],
            "b": r["option2"],
            "gold": r["gold"],
        }
        for i, r in enumerate(ROWS)
    ]
    files = {"t.yaml": _native("{{ prompt }}", ["{{ a }}", "{{ b }}"]), "data.jsonl": jsonl_text(rows)}
    assert not [line for line in audit_lines(tmp_path, files, capsys) if f"[{REVERSED}]" in line]


@pytest.mark.parametrize(
    ("text", "target", "named"),
    [
        ("{{continuation}}", "gold", True),  # the ending scored before the options: backwards
        ("{{gold}}", "continuation", False),  # lm-eval's multiple_input: the options are contexts on purpose
    ],
)
def test_lmeval_backwards_partial_scoring_and_its_multiple_input_twin(
    text, target, named, tmp_path, capsys, monkeypatch
):
    pytest.importorskip("lm_eval")
    monkeypatch.chdir(tmp_path)  # lm-eval reads data_files from the working folder
    files = {"quiz.yaml": lmeval_quiz(f'"{text}"', '"{{[option1, option2]}}"', target), "test.jsonl": jsonl_text(ROWS)}
    lines = audit_lines(tmp_path, files, capsys, [str(tmp_path / "quiz.yaml")])
    found = [line for line in lines if f"[{REVERSED}]" in line]
    assert bool(found) is named, lines
    if named:
        assert re.search(r"quiz\.yaml, row 0, field 'prompt'", found[0]), found[0]
