"""The system message a chat template writes when the messages hold none: found by rendering (models/info.py),
and recorded as the task's system prompt, since it reached the model (red team 12, 105)."""

from __future__ import annotations

import json

from jinja2 import Environment

from proctor import evaluate
from proctor.models.info import template_default_system
from tests.support.cli_runs import jsonl, write

# three families of template, written as their tokenizers' templates are
CHATML_WITH_DEFAULT = (  # SmolLM2, Qwen2: a system turn of their own where none is given
    "{% if messages[0]['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "<|im_start|>assistant\n"
)
HEADER_ALWAYS = (  # Llama 3.1: the system header always, with its own lines, and an empty message
    "<|start_header_id|>system<|end_header_id|>\n\nToday Date: 26 Jul 2024\n\n"
    "{% if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}{% set rest = messages[1:] %}"
    "{% else %}{% set rest = messages %}{% endif %}<|eot_id|>"
    "{% for m in rest %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n{{ m['content'] }}<|eot_id|>{% endfor %}"
)
FOLDED = (  # Mistral: a system message folded into the first user turn, none of its own
    "<s>{% for m in messages %}{% if m['role'] == 'system' %}{% set sys = m['content'] + '\n\n' %}"
    "{% else %}[INST] {{ m['content'] }} [/INST]{% endif %}{% endfor %}"
)
NO_SYSTEM_ROLE = "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system role') }}"
NO_SYSTEM_ROLE += "{% endif %}{{ m['content'] }}{% endfor %}"


def _render(template: str):
    def raise_exception(message: str) -> None:
        raise ValueError(message)

    compiled = Environment().from_string(template)
    return lambda messages: compiled.render(messages=messages, raise_exception=raise_exception)


def test_a_templates_own_system_message_is_found():
    assert template_default_system(_render(CHATML_WITH_DEFAULT)) == "You are a helpful assistant."


def test_templates_that_add_none_give_none():
    assert template_default_system(_render(HEADER_ALWAYS)) is None  # its header's own lines are not a message
    assert template_default_system(_render(FOLDED)) is None
    assert template_default_system(_render(NO_SYSTEM_ROLE)) is None  # refuses a system role: adds none either
    assert template_default_system(None) is None


QUIZ = """\
name: quiz
kind: multiple_choice
data: {path: data.jsonl}
prompt: "{{ question }}"
choices: "{{ options }}"
target: "{{ answer }}"
"""
ROWS = [{"question": f"Which is {w}?", "options": [w, "other"], "answer": 0} for w in ("red", "blue", "green")]


def test_smollm2s_default_system_message_is_the_chat_runs_system_prompt(tmp_path, tiny_model_dir):
    """SmolLM2's template (the tiny model has its tokenizer) writes 'You are a helpful AI assistant named SmolLM,
    trained by Hugging Face' before a prompt without a system message: that run's system_prompt says so; a run
    without the template has none."""
    write(tmp_path / "quiz" / "task.yaml", QUIZ)
    jsonl(tmp_path / "quiz" / "data.jsonl", ROWS)
    own = evaluate([tmp_path / "quiz"], str(tiny_model_dir), output_dir=tmp_path / "own", chat=True)
    settings = json.loads((own.run_dir / "results.json").read_text())["tasks"]["quiz"]["settings"]
    assert settings["chat"] is True
    assert settings["system_prompt"] == "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    plain = evaluate([tmp_path / "quiz"], str(tiny_model_dir), output_dir=tmp_path / "plain")
    settings = json.loads((plain.run_dir / "results.json").read_text())["tasks"]["quiz"]["settings"]
    assert (settings["chat"], settings["system_prompt"]) == (False, None)  # no template: no system message
