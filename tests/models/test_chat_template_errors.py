"""A model folder whose chat template does not compile is an error naming the template's file and line,
not an internal error from Jinja; through the CLI's entry point in this process."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.support.cli_runs import QUESTIONS, jsonl, run_in_process, write

GENERATE = """\
name: gen
kind: generate
data: {path: data.jsonl, id: id}
prompt: "Q: {{ question }}\\nA:"
target: "{{ label }}"
metrics: [exact_match]
"""


@pytest.fixture
def broken_chat(tiny_model_dir, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    write(tmp_path / "gen.yaml", GENERATE)
    jsonl(tmp_path / "data.jsonl", QUESTIONS)
    return folder


def _run(tmp_path, monkeypatch) -> str:
    monkeypatch.chdir(tmp_path)
    code, output = run_in_process(["run", "gen.yaml", "--model", "model", "--limit", "2", "--chat-template", "on"])
    assert code == 2, output
    assert "Traceback" not in output and "internal error" not in output, output
    assert "--chat-template off" in output
    return output


def test_a_chat_template_file_that_does_not_compile(broken_chat, tmp_path, monkeypatch):
    template = broken_chat / "chat_template.jinja"
    template.write_text("{% for m in messages %}\n{{ m.content }{% endfor %}", encoding="utf-8")
    output = _run(tmp_path, monkeypatch)
    assert "the chat template of model 'model' does not compile: model/chat_template.jinja, template line 2" in output


def test_a_chat_template_in_tokenizer_config_that_does_not_compile(broken_chat, tmp_path, monkeypatch):
    (broken_chat / "chat_template.jinja").unlink(missing_ok=True)
    config = broken_chat / "tokenizer_config.json"
    settings = json.loads(config.read_text(encoding="utf-8"))
    config.write_text(json.dumps({**settings, "chat_template": "{% if %}"}), encoding="utf-8")
    output = _run(tmp_path, monkeypatch)
    assert "model/tokenizer_config.json (its 'chat_template'), template line 1" in output
