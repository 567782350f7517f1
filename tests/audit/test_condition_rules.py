"""``prompt.drops-condition`` on real XCOPA-it rows, through ``proctor validate``'s entry point: a prompt that asks
"perché" (because) of every row, while about half the rows ask for the effect, names the ``question`` field;
XCOPA's own prompt, which reads it, is silent, as is a task whose data filter keeps the cause rows only."""

from __future__ import annotations

import pytest

from proctor.cli import main
from tests.conftest import shared_path

pytestmark = pytest.mark.fast
RULE = "prompt.drops-condition"
QUESTION_RULE = "prompt.drops-question"
TASK = """\
name: xcopa_it
kind: multiple_choice
data: {{path: {data}, id: idx{filter}}}
prompt: "{prompt}"
choices: ["{{{{ choice1 }}}}", "{{{{ choice2 }}}}"]
target: "{{{{ label }}}}"
limit: 40
"""
BLIND = "{{ premise[:-1] }} perché"
READS = "{{ premise[:-1] }} {{ 'perché' if question == 'cause' else 'quindi' }}"


def _findings(tmp_path, prompt: str, capsys, data_filter: str = "") -> list[str]:
    data = shared_path("data", "xcopa", "test.it.jsonl")
    (tmp_path / "t.yaml").write_text(TASK.format(data=data, prompt=prompt, filter=data_filter))
    try:
        main(["validate", str(tmp_path / "t.yaml"), "--data-dir", str(data.parent)])
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr()
    out = capsys.readouterr()
    return [line for line in (out.out + out.err).splitlines() if "audit [" in line]


def test_a_prompt_that_asks_every_row_for_the_cause_names_the_question_field(tmp_path, capsys):
    (line,) = _findings(tmp_path, BLIND, capsys)
    assert f"[{RULE}]" in line and "field 'question'" in line, line
    assert "'cause' in" in line and "'effect' in" in line and "of the 40 rows read" in line


@pytest.mark.parametrize(("prompt", "data_filter"), [(READS, ""), (BLIND, ", filter: \"{{ question == 'cause' }}\"")])
def test_xcopas_own_prompt_and_a_filter_on_the_condition_are_silent(prompt, data_filter, tmp_path, capsys):
    assert _findings(tmp_path, prompt, capsys, data_filter) == []


def test_a_prompt_that_shows_the_options_without_the_question_names_it(tmp_path, capsys):
    """Real MMLU rows whose prompt lists the options and never reads 'question' (red team 9): the model guesses
    from the options alone. The same prompt with the question is silent."""
    csv = shared_path("data", "mmlu", "anatomy_test.csv")
    task = (
        f"name: anatomy\nkind: multiple_choice\ndata: {{path: {csv}, columns: [question, A, B, C, D, answer]}}\n"
        'prompt: "QUESTIONA. {{ A }}\\nB. {{ B }}\\nC. {{ C }}\\nD. {{ D }}\\nAnswer:"\n'
        "choices: [' A', ' B', ' C', ' D']\ntarget: \"{{ 'ABCD'.index(answer) }}\"\n"
    )
    for name, question, found in (("blind", "", True), ("asked", "{{ question }}\\n", False)):
        (tmp_path / f"{name}.yaml").write_text(task.replace("QUESTION", question))
        try:
            main(["validate", str(tmp_path / f"{name}.yaml"), "--data-dir", str(csv.parent)])
        except SystemExit as exc:
            assert not exc.code, capsys.readouterr()
        out = capsys.readouterr()
        lines = [line for line in (out.out + out.err).splitlines() if f"[{QUESTION_RULE}]" in line]
        assert bool(lines) == found, out
        if found:
            assert "field 'question'" in lines[0] and "anatomy_test.csv, row 1" in lines[0], lines[0]
