"""What the native format's checks still accept: YAML merge keys with overrides, BLiMP-style tasks whose prompts
are all empty, the same reference twice, a joined column that agrees, a defaults block for tasks of several kinds,
constant expressions keeping their Python values (the refusals are cases of tests/support/malformed_cases_native.py)."""

from __future__ import annotations

import json

import pytest

from proctor.api import load_tasks
from proctor.core.errors import TaskDefinitionError
from proctor.core.templates import compile_expression
from proctor.engine.prepare import prepare_task

pytestmark = pytest.mark.fast

ROWS = [
    {"id": "a", "question": "2+2?", "choices": ["3", "4"], "label": 1},
    {"id": "b", "question": "1+1?", "choices": ["2", "5"], "label": 0},
]


def _prepare(tmp_path, yaml_text: str, rows=ROWS):
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "task.yaml").write_text(yaml_text)
    return [prepare_task(task, {}) for task in load_tasks([tmp_path / "task.yaml"])]


def test_a_merge_key_is_overridden_by_the_tasks_own_keys(tmp_path):
    prepared = _prepare(
        tmp_path,
        "tasks:\n  - &first\n    name: a\n    kind: multiple_choice\n    data: data.jsonl\n"
        "    prompt: 'Q: {{ question }}'\n    choices: '{{ choices }}'\n    target: '{{ label }}'\n"
        "  - <<: *first\n    name: b\n    prompt: 'Question: {{ question }}'\n",
    )
    assert [p.task.name for p in prepared] == ["a", "b"]
    assert prepared[1].samples[0].prompt.text == "Question: 2+2?"


def test_a_key_given_twice_beside_a_merge_key_is_still_an_error(tmp_path):
    with pytest.raises(TaskDefinitionError, match="duplicate key 'name'"):
        _prepare(tmp_path, "base: &b {kind: generate}\nname: a\n<<: *b\nname: b\n")


def test_prompts_empty_on_every_row_are_a_blimp_style_task(tmp_path):
    (prepared,) = _prepare(
        tmp_path,
        "name: t\nkind: multiple_choice\ndata: data.jsonl\nprompt: ''\nchoices: '{{ choices }}'\ntarget: '0'\n",
    )
    assert [s.prompt.text for s in prepared.samples] == ["", ""]


def test_the_same_reference_twice_and_an_agreeing_joined_column_are_fine(tmp_path):
    (tmp_path / "keys.jsonl").write_text('{"id": "a", "k": 1}\n{"id": "b", "k": 2}\n')
    (prepared,) = _prepare(
        tmp_path,
        "name: g\nkind: generate\ndata: {path: data.jsonl, join: keys.jsonl}\nprompt: '{{ question }}'\n"
        "target: '{{ [choices[label], choices[label]] }}'\n",
    )
    assert prepared.samples[0].references == ("4", "4")
    assert prepared.samples[0].sample.fields["k"] == 1


def test_defaults_may_set_fields_for_tasks_of_several_kinds(tmp_path):
    prepared = _prepare(
        tmp_path,
        "defaults: {data: data.jsonl, prompt: '{{ question }}', generation: {max_tokens: 3}}\ntasks:\n"
        "  - {name: mc, kind: multiple_choice, choices: '{{ choices }}', target: '{{ label }}'}\n"
        "  - {name: gen, kind: generate, target: '{{ choices[label] }}'}\n",
    )
    assert [p.task.spec.generation.max_tokens for p in prepared] == [3, 3]


@pytest.mark.parametrize(
    "source, value",
    [
        ("{{ [] }}", []),
        ("{{ ['a', 'b'] }}", ["a", "b"]),
        ("{{ false }}", False),
        ("{{ none }}", None),
        ("x{{ 1 }}", "x1"),
    ],
)
def test_a_constant_expression_keeps_its_python_value(source, value):
    assert compile_expression(source, origin=None, field="f").evaluate({}) == value


def test_a_digit_answer_that_is_the_choices_text_is_given_by_its_index(tmp_path):
    """Choices that are digits and an answer that is one of them as text: '1' is choice 1's index and choice 2's
    text, so ``{{ answer }}`` is refused as ambiguous; the way out the error names, the text's index, scores it."""
    rows = [
        {"id": "a", "q": "How many?", "options": ["3", "2", "1", "0"], "answer": "1"},
        {"id": "b", "q": "How many more?", "options": ["3", "2", "1", "0"], "answer": "3"},
    ]
    task = "name: legs\nkind: multiple_choice\ndata: data.jsonl\nprompt: '{{ q }}'\nchoices: '{{ options }}'\n"
    with pytest.raises(TaskDefinitionError, match=r"options\.index\(answer\)"):
        _prepare(tmp_path, task + "target: '{{ answer }}'\n", rows)
    prepared = _prepare(tmp_path, task + "target: '{{ options.index(answer) }}'\n", rows)
    assert [s.gold for s in prepared[0].samples] == [(2,), (0,)]
