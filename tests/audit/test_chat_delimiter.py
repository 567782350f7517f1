"""``prompt.delimiter`` and chat: under a chat template the reply header stands between the prompt and each
choice, so an empty target_delimiter glues nothing (the model stage's ``chat.delimiter`` speaks of a space there,
in test_audit_run.py); without chat the same task is named. Through ``proctor validate``'s entry point."""

from __future__ import annotations

import pytest

from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast
RULE = "prompt.delimiter"
TASK = """\
name: capitals
kind: multiple_choice
data: {path: data.jsonl, id: id}
prompt: "Capital of {{ country }}?"
choices: "{{ options }}"
target: "{{ label }}"
"""
ROWS = [
    {"id": "a", "country": "Peru", "options": ["Lima", "Quito"], "label": 0},
    {"id": "b", "country": "Chile", "options": ["Lima", "Santiago"], "label": 1},
    {"id": "c", "country": "Kenya", "options": ["Nairobi", "Accra"], "label": 0},
]


def _findings(folder, extra: str, capsys) -> list[str]:
    return audit_lines(folder, {"t.yaml": TASK + extra, "data.jsonl": jsonl_text(ROWS)}, capsys)


def test_an_empty_delimiter_is_glued_without_chat_and_not_under_it(tmp_path, capsys):
    (line,) = _findings(tmp_path / "plain", 'target_delimiter: ""\n', capsys)
    assert f"[{RULE}]" in line and "glued to the prompt" in line, line
    assert _findings(tmp_path / "chat", 'chat: {enabled: true}\ntarget_delimiter: ""\n', capsys) == []
