"""A runaway template (endless loops, huge texts, huge powers, endless recursion) stops within bounded time
and size, with an error naming the template's field and task file, not the data row it was rendering.
The malformed cases run through the CLI's entry point in this process."""

from __future__ import annotations

import json

import pytest

from proctor.core import template_bounds
from proctor.core.templates import compile_expression, compile_template
from tests.support.cli_runs import QUESTIONS, jsonl, run_in_process, write

TASK = """\
name: quiz
kind: multiple_choice
data: {{path: data.jsonl, id: id}}
prompt: {prompt}
choices: "{{{{ choices }}}}"
target: "{{{{ label }}}}"
metrics: [acc]
"""

RUNAWAY = {
    "nested loops": ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "loops more"),
    "a huge product": ("{{ question * 100000000 }}", "builds a text or list of"),
    "a huge list": ("{{ (choices * 100000000)|length }}", "builds a text or list of"),
    "a doubling join": (
        "{% set ns = namespace(s=question) %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
        "{{ ns.s }}",
        "builds a text or list of",
    ),
    "a huge output": (
        "{% for i in range(90000) %}{% for j in range(60) %}{{ question }}{% endfor %}{% endfor %}",
        "builds",
    ),
    "a huge power": ("{{ 10 ** 100000000 }}", "power"),
    "a range too big": ("{% for i in range(10**9) %}x{% endfor %}", "range of more than 100,000"),
    "endless recursion": ("{% macro f(x) %}{{ f(x) }}{% endmacro %}{{ f(1) }}", "calls itself too deeply"),
}


def _task(folder, prompt: str):
    write(folder / "quiz.yaml", TASK.format(prompt=json.dumps(prompt)))
    jsonl(folder / "data.jsonl", QUESTIONS)
    return folder / "quiz.yaml"


@pytest.mark.parametrize("case", sorted(RUNAWAY))
def test_a_runaway_template_is_named_as_the_template(case, tmp_path, monkeypatch):
    prompt, words = RUNAWAY[case]
    monkeypatch.chdir(tmp_path)
    _task(tmp_path, prompt)
    code, output = run_in_process(["validate", "quiz.yaml"])
    assert code == 2, output
    assert "Traceback" not in output and "internal error" not in output, output
    # where: the task file's line of the field, not "data.jsonl, row 1"
    assert "error: quiz.yaml:4, field 'prompt': the template 'prompt' stopped: it " in output, output
    assert words in output, output
    assert "first seen on data.jsonl, row 1" in output


@pytest.mark.fast
def test_a_render_past_its_time_stops(tmp_path, monkeypatch):
    monkeypatch.setattr(template_bounds, "MAX_SECONDS", 0.0)  # the second check is past the deadline
    monkeypatch.chdir(tmp_path)
    _task(tmp_path, "{% for c in range(1000) %}{% for d in choices %}{{ d }}{% endfor %}{% endfor %}")
    code, output = run_in_process(["validate", "quiz.yaml"])
    assert code == 2, output
    assert "quiz.yaml:4, field 'prompt': the template 'prompt' stopped: it takes more than 0 seconds" in output


@pytest.mark.fast
def test_an_iterator_is_counted_step_by_step(monkeypatch):
    monkeypatch.setattr(template_bounds, "MAX_STEPS", 5)
    template = compile_template("{% for x in items %}{{ x }}{% endfor %}", origin="t.yaml", field="prompt", line=3)
    assert template.render({"items": iter(range(5))}) == "01234"
    with pytest.raises(Exception, match=r"t.yaml:3, field 'prompt': .*loops more than 5 times"):
        template.render({"items": iter(range(6))})
    with pytest.raises(Exception, match=r"loops more than 5 times"):
        template.render({"items": list(range(6))})  # a sized one: counted at once


@pytest.mark.fast
def test_templates_within_the_bounds_render_as_before():
    loop = compile_template(
        "{% for c in choices %}{{ loop.index }}. {{ c ~ '!' }}\n{% endfor %}{{ 'ab' * 2 }}{{ 2 ** 10 }}",
        origin="t.yaml",
        field="prompt",
    )
    assert loop.render({"choices": ["x", "y"]}) == "1. x!\n2. y!\nabab1024"
    nested = compile_template(
        "{% for i in range(300) %}{% for j in range(300) %}{% endfor %}{% endfor %}done", origin="t", field="p"
    )
    assert nested.render({}) == "done"  # 90,000 steps: well inside the bound
    # an expression keeps its Python value, through a macro too
    macro = compile_expression("{% macro m() %}[1, 2]{% endmacro %}{{ m() }}", origin="t", field="choices")
    assert macro.evaluate({}) == [1, 2]
    assert compile_expression("{{ choices * 2 }}", origin="t", field="c").evaluate({"choices": ["a"]}) == ["a", "a"]


BACKTRACKING = "{{ ('a' * 40 ~ '!') | regex_replace('(a|aa)+$', '') }}"  # exponentially many ways to fail


def test_a_backtracking_regex_in_a_template_stops_at_the_time_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(template_bounds, "MAX_SECONDS", 0.5)
    monkeypatch.chdir(tmp_path)
    _task(tmp_path, BACKTRACKING)
    code, output = run_in_process(["validate", "quiz.yaml"])
    assert code == 2, output
    assert (
        "quiz.yaml:4, field 'prompt': the template 'prompt' stopped: it runs regex_replace with '(a|aa)+$', which"
        in output
    )
    assert "takes more than 0.5 seconds" in output, output


def test_regex_replace_replaces_as_re_sub_does():
    """The bounded filter (the ``regex`` package) gives ``re.sub``'s text, groups and escapes included."""
    import re

    cases = [
        (r"\s+", " ", "a  b\t\nc"),
        (r"(\w+)@(\w+)", r"\2 at \1", "me@host, you@there"),
        (r"^\s*|\s*$", "", "  padded  "),
        (r"(?i)ANSWER:\s*", "", "answer: B"),
        (r"\\n", "\n", r"a\nb"),
        (r"(?P<x>\d)", r"<\g<x>>", "a1b22"),
        (r"", "-", "abc"),
    ]
    for pattern, replacement, text in cases:
        rendered = compile_template("{{ text | regex_replace(pattern, replacement) }}", origin="t", field="p").render(
            {"text": text, "pattern": pattern, "replacement": replacement}
        )
        assert rendered == re.sub(pattern, replacement, text), (pattern, text)
