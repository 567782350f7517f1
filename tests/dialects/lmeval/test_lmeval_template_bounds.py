"""lm-eval's templates render with proctor's bounds too: a runaway ``doc_to_text`` stops with an error naming
the task file and the key, instead of hanging the run; through the CLI's entry point in this process."""

from __future__ import annotations

import pytest

from tests.support.cli_runs import QUESTIONS, jsonl, run_in_process, write

pytest.importorskip("lm_eval")

TASK = """\
task: quiz
dataset_path: json
dataset_kwargs:
  data_files: {{test: data.jsonl}}
test_split: test
output_type: multiple_choice
doc_to_text: "{text}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: label
"""


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "loops more than"),
        ("{{ question * 100000000 }}", "builds a text or list of"),
        (
            "{{ ('a' * 40 ~ '!') | regex_replace('(a|aa)+$', '') }}",
            "runs regex_replace with '(a|aa)+$', which takes more than",
        ),
    ],
    ids=["loops", "size", "regex"],
)
def test_a_runaway_lm_eval_template_is_named(text, words, tmp_path, monkeypatch):
    from proctor.core import template_bounds

    if "regex_replace" in text:  # a regex with exponentially many ways to fail: hours in re.sub; stopped sooner here
        monkeypatch.setattr(template_bounds, "MAX_SECONDS", 0.2)
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "quiz.yaml", TASK.format(text=text))
    jsonl(tmp_path / "data.jsonl", QUESTIONS)
    code, output = run_in_process(["validate", "quiz.yaml"])
    assert code == 2, output
    assert "internal error" not in output and "Traceback" not in output, output
    assert "quiz.yaml, field 'doc_to_text': the template 'doc_to_text' stopped: it " in output, output
    assert words in output, output
