"""The audit of an lm-eval task under ``--chat-template on`` (``dialects/lmeval/audit_view.chat_contents``): lm-eval's
requests hold each context as a recorded marker (its chat messages as JSON) until a model renders them, and the
rules read the messages' contents, not JSON's escapes. A right task stays silent; a template that writes a literal
backslash-n (arc_challenge_chat's single-quoted YAML) is still named, chat or not."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("lm_eval")

ROWS = [
    {
        "question": f'Which "dished face" profile fits breed {i}?',
        "choices": ["Arabian", "Shire", "Clydesdale", "Percheron"],
        "label": i % 4,
    }
    for i in range(8)
]
TASK = """task: quiz
dataset_path: json
dataset_kwargs:
  data_files:
    test: test.jsonl
output_type: multiple_choice
test_split: test
doc_to_text: {text}
doc_to_choice: ["A", "B", "C", "D"]
doc_to_target: label
"""
LISTED = '"{{question}}\\nA. {{choices[0]}}\\nB. {{choices[1]}}\\nC. {{choices[2]}}\\nD. {{choices[3]}}\\nAnswer:"'
ESCAPED = "'{{question}}\\nA. {{choices[0]}}\\nB. {{choices[1]}}\\nC. {{choices[2]}}\\nD. {{choices[3]}}\\nAnswer:'"


def _findings(folder, monkeypatch, text: str, chat: bool) -> dict[str, str]:
    from proctor.api import load_tasks
    from proctor.core.run_overrides import RunOverrides
    from proctor.dialects.lmeval.run_options import apply
    from proctor.engine.prepare import prepare_task

    folder.mkdir()
    monkeypatch.chdir(folder)  # lm-eval reads data_files from the working folder
    (folder / "quiz.yaml").write_text(TASK.format(text=text))
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (task,) = load_tasks([folder / "quiz.yaml"])
    task, _ = apply(task, RunOverrides(), chat)
    prepared = prepare_task(task, {}, chat=chat)
    return {f.rule: f.message for f in prepared.findings}


def test_recorded_chat_messages_are_read_as_their_contents(tmp_path, monkeypatch):
    from proctor.dialects.lmeval.chat import MARKER

    for chat in (False, True):
        found = _findings(tmp_path / f"listed-{chat}", monkeypatch, LISTED, chat)
        for rule in ("text.escaped", "choices.not-in-prompt", "prompt.field-missing"):
            assert rule not in found, (chat, found)
    # the view the audit reads: the message's content, with its real line breaks and quotes, never the marker
    from proctor.dialects.lmeval.audit_view import chat_contents
    from proctor.prompts.builder import PreparedSample, Prompt

    content = 'Which "dished face" profile?\nA. Arabian\nAnswer:'
    marker = MARKER + json.dumps({"messages": [{"role": "user", "content": content}], "add_generation_prompt": True})
    for prompt in (Prompt(text=marker), Prompt(messages=(("user", marker),))):
        sample = PreparedSample(sample=None, prompt=prompt)  # type: ignore[arg-type]
        (viewed,) = chat_contents([sample]) or [sample]
        assert viewed.prompt.plain_text == content and viewed.prompt.messages == (("user", content),)
    assert chat_contents([PreparedSample(sample=None, prompt=Prompt(text=content))]) is None  # type: ignore[arg-type]


def test_a_literal_backslash_n_is_named_under_the_chat_template_too(tmp_path, monkeypatch):
    for chat in (False, True):
        found = _findings(tmp_path / f"escaped-{chat}", monkeypatch, ESCAPED, chat)
        assert "8 of 8 prompts hold escapes written out" in found.get("text.escaped", ""), (chat, found)
