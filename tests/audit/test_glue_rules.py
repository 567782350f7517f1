"""``prompt.glued-text``: whitespace control that runs the last option into the template's 'Answer:', through
``proctor validate``'s entry point (the red team's '- 5- 6Answer:'); the same loop with its line breaks kept is
silent, as are options that merely start with a capital ('New York')."""

from __future__ import annotations

import pytest

from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast
RULE = "prompt.glued-text"
TASK = """\
name: sums
kind: multiple_choice
data: {path: data.jsonl, id: id}
prompt: "PROMPT"
choices: "{{ options }}"
target: "{{ label }}"
"""
ROWS = [
    {
        "id": f"r{i}",
        "q": f"What is {i} + 2?",
        "options": [str(i + 1), str(i + 2), str(i + 3), str(i + 4)],
        "label": i % 4,
    }
    for i in range(6)
]


def _findings(folder, prompt: str, capsys, rows=ROWS) -> list[str]:
    return audit_lines(folder, {"t.yaml": TASK.replace("PROMPT", prompt), "data.jsonl": jsonl_text(rows)}, capsys)


def test_whitespace_control_that_glues_the_last_option_to_the_cue_is_named(tmp_path, capsys):
    glued = "{{ q }}\\nOptions:{%- for o in options -%}- {{ o }}{%- endfor -%}\\nAnswer:"
    (line,) = _findings(tmp_path / "glued", glued, capsys)
    assert f"[{RULE}]" in line and "'Answer'" in line and "in 6 of the 6 rows" in line, line
    assert "data.jsonl, row 1" in line and "field 'prompt'" in line


@pytest.mark.parametrize(
    ("prompt", "rows"),
    [
        ("{{ q }}\\nOptions:\\n{% for o in options %}- {{ o }}\\n{% endfor %}Answer:", ROWS),
        ("{{ q }} {{ options | join(', ') }}. Answer:", [{**r, "q": "Which city is in New York State?"} for r in ROWS]),
    ],
)
def test_kept_line_breaks_and_capitalised_options_are_silent(prompt, rows, tmp_path, capsys):
    assert _findings(tmp_path / "right", prompt, capsys, rows) == []
