"""``prompt.unfilled``: a placeholder of another template language left in a Jinja template's own text, through
``proctor validate``'s entry point. Each broken template names its field and the placeholder; the right twin
(Jinja's own braces, or braces that name no field: a JSON example) is silent."""

from __future__ import annotations

import pytest

from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast
RULE = "prompt.unfilled"
TASK = """\
name: capitals
kind: generate
data: {path: data.jsonl, id: id}
prompt: PROMPT
target: TARGET
generation: {max_tokens: 8, stop: ["\\n"]}
"""
ROWS = [
    {"id": "a", "passage": "Peru lies on the Pacific.", "country": "Peru", "answer": "Lima"},
    {"id": "b", "passage": "Chile is long and narrow.", "country": "Chile", "answer": "Santiago"},
    {"id": "c", "passage": "Japan is an island nation.", "country": "Japan", "answer": "Tokyo"},
]


def _findings(folder, prompt: str, target: str, capsys) -> list[str]:
    task = TASK.replace("PROMPT", prompt).replace("TARGET", target)
    return audit_lines(folder, {"t.yaml": task, "data.jsonl": jsonl_text(ROWS)}, capsys)


@pytest.mark.parametrize(
    ("prompt", "target", "shown", "field"),
    [
        ('"{{ passage }}\\nCapital of {country}?"', '"{{ answer }}"', "'{country}'", "prompt"),
        ('"{{ passage }}\\nCapital of ${country}?"', '"{{ answer }}"', "'${country}'", "prompt"),
        ('"{{ passage }} Capital of {{ country }}?"', '"{answer}"', "'{answer}'", "target"),
    ],
)
def test_a_placeholder_of_another_language_is_named(prompt, target, shown, field, tmp_path, capsys):
    lines = [line for line in _findings(tmp_path / "t", prompt, target, capsys) if f"[{RULE}]" in line]
    assert lines and f"holds {shown}" in lines[0] and f"field '{field}'" in lines[0], lines


@pytest.mark.parametrize(
    "prompt",
    ['"{{ passage }}\\nCapital of {{ country }}?"', '"{{ passage }} Reply as JSON: {city}. Capital of {{ country }}?"'],
)
def test_jinja_braces_and_braces_naming_no_field_are_silent(prompt, tmp_path, capsys):
    assert _findings(tmp_path / "t", prompt, '"{{ answer }}"', capsys) == []
