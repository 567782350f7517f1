"""Each audit rule (docs/audit.md) on a valid-looking task that breaks it, through the ``proctor`` command's entry
point (``validate``): the finding names its rule, file, row or line and field; clean tasks give none; an error
rule and ``--strict`` stop the task; a task file silences a rule with a reason; a plug-in adds a rule."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from proctor.audit.rules import BUILTIN_RULES
from proctor.cli import main
from proctor.core.registry import registry
from tests.support.audit_runner import write_files as write
from tests.support.cli_runs import QUESTIONS

pytestmark = pytest.mark.fast

MC = """\
name: quiz
kind: multiple_choice
data: {{path: data.jsonl, id: id}}
prompt: "{prompt}"
choices: "{{{{ choices }}}}"
target: "{target}"
metrics: [acc]
{extra}"""


def mc(prompt: str = "Q: {{ question }}\\nA:", target: str = "{{ label }}", extra: str = "") -> str:
    return MC.format(prompt=prompt, target=target, extra=textwrap.dedent(extra))


def rows(*items: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in items)


def numbered(n: int, labels: list[int], width: int = 3) -> str:
    """``n`` distinct questions of ``width`` choices whose right answers cycle through ``labels``."""
    return rows(
        *(
            {
                "id": f"q{i}",
                "question": f"question number {i}?",
                "choices": [f"answer {i}-{k}" for k in range(width)],
                "label": labels[i % len(labels)],
            }
            for i in range(n)
        )
    )


GEN = """\
name: capitals
kind: generate
data: {path: data.jsonl, id: id}
prompt: "PROMPT"
target: "{{ answers }}"
metrics: [exact_match]
"""

CLEAN = rows(*QUESTIONS)
SEVERITY = {rule.id: rule.severity for rule in BUILTIN_RULES}

# rule id -> (files, where the finding points: a regex over its text)
CASES: dict[str, tuple[dict[str, str], str]] = {
    "choices.duplicate": (
        {
            "quiz.yaml": mc(),
            "data.jsonl": rows(
                *QUESTIONS[:4], {"id": "x", "question": "Sky?", "choices": ["blue", "Blue ", "red"], "label": 2}
            ),
        },
        r"data\.jsonl, row 5, field 'choices'",
    ),
    "choices.near-duplicate": (
        {
            "quiz.yaml": mc(),
            "data.jsonl": rows(
                *QUESTIONS[:4], {"id": "x", "question": "Capital?", "choices": ["Paris", "Paris.", "Rome"], "label": 2}
            ),
        },
        r"data\.jsonl, row 5, field 'choices'",
    ),
    "target.ambiguous": (
        {
            "quiz.yaml": mc(target="{{ answer }}"),
            "data.jsonl": rows(
                *({**q, "answer": q["choices"][q["label"]]} for q in QUESTIONS[:4]),
                {"id": "x", "question": "Sky?", "choices": ["blue", "red", "blue"], "answer": "blue"},
            ),
        },
        r"row 5, field 'target'",
    ),
    "target.constant": (
        {"quiz.yaml": mc(), "data.jsonl": numbered(12, [1])},
        r"quiz\.yaml:\d+, field 'target'",
    ),
    "labels.off-by-one": (
        {"quiz.yaml": mc(), "data.jsonl": numbered(20, [1, 2])},
        r"quiz\.yaml:\d+, field 'target'",
    ),
    "target.coerced": (
        {
            "quiz.yaml": mc(target="{{ label | int }}")
            .replace("data: {path: data.jsonl, id: id}", "data: {path: data.csv, id: id}")
            .replace('choices: "{{ choices }}"', 'choices: ["{{ a }}", "{{ b }}"]'),
            "data.csv": "id,question,a,b,label\n1,Is ice cold?,yes,no,0\n2,Is fire cold?,yes,no,1.5\n",
        },
        r"data\.csv, row 3, field 'label'",
    ),
    "references.coerced": (
        {
            "capitals.yaml": GEN.replace("PROMPT", "What is {{ a }} + {{ b }}?").replace(
                "{{ answers }}", "{{ total }}"
            ),
            "data.jsonl": rows({"id": "a", "a": 1, "b": 2, "total": 3.0}, {"id": "b", "a": 2, "b": 2, "total": 4.0}),
        },
        r"row 1, field 'total'",
    ),
    "references.empty": (
        {
            "capitals.yaml": GEN.replace("PROMPT", "Capital of {{ country }}?"),
            "data.jsonl": rows(
                {"id": "a", "country": "France", "answers": ["Paris"]},
                {"id": "b", "country": "Peru", "answers": ["Lima", "  "]},
            ),
        },
        r"row 2, field 'target'",
    ),
    "prompt.shows-target": (
        {"quiz.yaml": mc(prompt="Q: {{ question }} (key {{ label }})\\nA:"), "data.jsonl": CLEAN},
        r"quiz\.yaml:\d+, field 'prompt'",
    ),
    "prompt.contains-gold": (
        {
            "quiz.yaml": mc(prompt="{{ question }} Hint: think of {{ note }}.\\nA:"),
            "data.jsonl": rows(*({**q, "note": q["choices"][q["label"]]} for q in QUESTIONS)),
        },
        r"row 1, field 'prompt'",
    ),
    "prompt.constant": (
        {
            "capitals.yaml": GEN.replace("PROMPT", "Name a capital city."),
            "data.jsonl": rows({"id": "a", "answers": ["Paris"]}, {"id": "b", "answers": ["Lima"]}),
        },
        r"capitals\.yaml:\d+, field 'prompt'",
    ),
    "fewshot.leak": (
        {
            "quiz.yaml": mc(extra="fewshot: {count: 1, source: {path: copy.jsonl, id: id}}\n"),
            "data.jsonl": CLEAN,
            "copy.jsonl": CLEAN,
        },
        r"row 1, field 'fewshot\.source'",
    ),
    "fewshot.from-evaluated": (
        {"quiz.yaml": mc(extra="fewshot: {count: 2}\n"), "data.jsonl": CLEAN},
        r"quiz\.yaml:\d+, field 'fewshot\.source'",
    ),
    "samples.duplicate": (
        {"quiz.yaml": mc(), "data.jsonl": rows(*QUESTIONS, {**QUESTIONS[1], "id": "again"})},
        r"row 6, field 'data'",
    ),
    "samples.conflict": (
        {"quiz.yaml": mc(), "data.jsonl": rows(*QUESTIONS, {**QUESTIONS[1], "id": "again", "label": 2})},
        r"row 6, field 'target'",
    ),
    "ids.look-alike": (
        {"quiz.yaml": mc(), "data.jsonl": rows(*QUESTIONS[:4], {**QUESTIONS[4], "id": "A"})},
        r"row 5, field 'id'",
    ),
    "generation.stop-inside-answer": (
        {
            "capitals.yaml": GEN.replace("PROMPT", "Capital of {{ country }}?") + "generation: {stop: [' City']}\n",
            "data.jsonl": rows(
                {"id": "a", "country": "Mexico", "answers": ["Mexico City"]},
                {"id": "b", "country": "Guatemala", "answers": ["Guatemala City"]},
                {"id": "c", "country": "Peru", "answers": ["Lima"]},
            ),
        },
        r"capitals\.yaml:\d+, field 'generation\.stop'",
    ),
    "generation.too-short": (
        {
            "capitals.yaml": GEN.replace("PROMPT", "Who wrote {{ book }}?") + "generation: {max_tokens: 1}\n",
            "data.jsonl": rows(
                {"id": "a", "book": "Hamlet", "answers": ["William Shakespeare"]},
                {"id": "b", "book": "Emma", "answers": ["Jane Austen"]},
            ),
        },
        r"capitals\.yaml:\d+, field 'generation\.max_tokens'",
    ),
    "text.damaged": (
        {
            "quiz.yaml": mc(),
            "data.jsonl": rows(*QUESTIONS[:4], {**QUESTIONS[4], "question": "Which planet is the cafÃ© on?"}),
        },
        r"row 5, field 'prompt'",
    ),
    "choices.placeholder": (
        {"quiz.yaml": mc(), "data.jsonl": rows(*QUESTIONS[:4], {**QUESTIONS[4], "choices": ["Earth", "nan", "Mars"]})},
        r"row 5, field 'choices'",
    ),
    "target.none": (
        {"quiz.yaml": mc(extra="unscored_target: -1\n"), "data.jsonl": rows(*({**q, "label": -1} for q in QUESTIONS))},
        r"quiz\.yaml:\d+, field 'target'",
    ),
    "prompt.delimiter": (
        {"quiz.yaml": mc(prompt="Q: {{ question }} Answer", extra="target_delimiter: ''\n"), "data.jsonl": CLEAN},
        r"quiz\.yaml:\d+, field 'target_delimiter'",
    ),
    "generation.min-tokens": (
        {
            "capitals.yaml": GEN.replace("PROMPT", "Capital of {{ country }}?")
            + "generation: {max_tokens: 8, min_tokens: 8}\n",
            "data.jsonl": rows({"id": "a", "country": "Peru", "answers": ["Lima"]}),
        },
        r"capitals\.yaml:\d+, field 'generation\.min_tokens'",
    ),
    "extraction.never-matches": (
        {
            "capitals.yaml": GEN.replace("PROMPT", "Capital of {{ country }}?") + "extraction: {regex: '(\\d+)'}\n",
            "data.jsonl": rows({"id": "a", "country": "Peru", "answers": ["Lima"]}),
        },
        r"capitals\.yaml:\d+, field 'extraction\.regex'",
    ),
    "text.escaped": (
        {
            "quiz.yaml": mc(),
            "data.jsonl": rows(*({**q, "question": q["question"] + " Tom &amp; Jerry"} for q in QUESTIONS)),
        },
        r"row 1, field 'prompt'",
    ),
    "data.split": (
        {"quiz.yaml": mc().replace("path: data.jsonl", "path: train.jsonl"), "train.jsonl": CLEAN},
        r"quiz\.yaml:\d+, field 'data'",
    ),
    "data.header-row": (
        {
            "quiz.yaml": mc(target="{{ label | int }}")
            .replace("data: {path: data.jsonl, id: id}", "data: {path: data.csv, columns: [question, a, b, label]}")
            .replace('choices: "{{ choices }}"', 'choices: ["{{ a }}", "{{ b }}"]'),
            "data.csv": "Question,A,B,0\nIs ice cold?,yes,no,0\nIs fire cold?,yes,no,1\n",
        },
        r"data\.csv, row 1, field 'data\.columns'",
    ),
    "breakdown.per-row": (
        {"quiz.yaml": mc(extra="breakdown: [question]\n"), "data.jsonl": CLEAN},
        r"quiz\.yaml:\d+, field 'breakdown'",
    ),
    "fewshot.settings": (
        {
            "quiz.yaml": mc(extra="fewshot: {count: 0, source: {path: dev.jsonl, id: id}}\n"),
            "data.jsonl": CLEAN,
            "dev.jsonl": rows({"id": "p1", "question": "Colour of grass?", "choices": ["green", "blue"], "label": 0}),
        },
        r"quiz\.yaml:\d+, field 'fewshot\.count'",
    ),
    "extraction.tag-not-asked": (
        {
            "capitals.yaml": GEN.replace("PROMPT", "Capital of {{ country }}?")
            + "extraction: {answer_tag: 'ANSWER:'}\n",
            "data.jsonl": rows({"id": "a", "country": "Peru", "answers": ["Lima"]}),
        },
        r"capitals\.yaml:\d+, field 'extraction\.answer_tag'",
    ),
    "generation.sampling": (
        {
            "capitals.yaml": GEN.replace("PROMPT", "Capital of {{ country }}?") + "generation: {temperature: 0.8}\n",
            "data.jsonl": rows({"id": "a", "country": "Peru", "answers": ["Lima"]}),
        },
        r"capitals\.yaml:\d+, field 'generation\.temperature'",
    ),
    "breakdown.mixed": (
        {
            "quiz.yaml": mc(extra="breakdown: [level]\n"),
            "data.jsonl": rows(*({**q, "level": 1 if i % 2 else "1"} for i, q in enumerate(QUESTIONS))),
        },
        r"quiz\.yaml:\d+, field 'breakdown'",
    ),
    "data.glob-merge": (
        {
            "quiz.yaml": mc(extra="breakdown: [_file]\n").replace("path: data.jsonl", "path: '*/test.jsonl'"),
            "easy/test.jsonl": rows(*QUESTIONS[:3]),
            "hard/test.jsonl": rows(*QUESTIONS[3:]),
        },
        r"quiz\.yaml:\d+, field 'breakdown'",
    ),
}

# rules that stop the task (severity error): validate exits 2 naming the place
ERRORS: dict[str, tuple[dict[str, str], str]] = {
    "target.all-choices": (
        {"quiz.yaml": mc(target="{{ [0, 1, 2] if id == 'c' else label }}"), "data.jsonl": CLEAN},
        r"data\.jsonl, row 3, field 'target'",
    ),
    "data.join": (
        {
            "quiz.yaml": mc().replace("id: id}", "id: id, join: [labels.jsonl]}"),
            "data.jsonl": rows(*({k: v for k, v in q.items() if k != "label"} for q in QUESTIONS)),
            "labels.jsonl": rows(*({"qid": q["id"], "label": q["label"]} for q in reversed(QUESTIONS))),
        },
        r"labels\.jsonl, row 1, field 'qid'",
    ),
    "target.coerced": CASES["target.coerced"],
}


def validate(folder: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        main(["validate", *args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


def task_file(files: dict[str, str]) -> str:
    return next(name for name in files if name.endswith(".yaml"))


def findings(text: str) -> list[str]:
    return re.findall(r"audit \[([a-z.-]+)\]", text)


@pytest.mark.parametrize("rule", sorted(r for r in CASES if SEVERITY.get(r) == "warning"))
def test_a_warning_rule_names_its_finding_and_the_task_still_validates(rule, tmp_path, monkeypatch, capsys):
    files, where = CASES[rule]
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    code, text = validate(tmp_path, task_file(files), capsys=capsys)
    assert code == 0, text
    assert rule in findings(text), text
    line = next(line for line in text.splitlines() if f"[{rule}]" in line)
    assert re.search(where, line), line


@pytest.mark.parametrize("rule", sorted(ERRORS))
def test_an_error_rule_stops_the_task_naming_file_row_and_field(rule, tmp_path, monkeypatch, capsys):
    files, where = ERRORS[rule]
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    code, text = validate(tmp_path, task_file(files), capsys=capsys)
    assert code == 2, text
    assert f"[{rule}]" in text, text
    assert re.search(where, text), text
    assert "silence the rule" in text and "Traceback" not in text


def test_every_builtin_rule_has_a_case_here():
    # choices.single and prompt.empty: the native format refuses such rows itself; the other dialects meet them.
    # A rule module added later keeps its cases in its own test file here (test_label_rules.py, ...)
    here = Path(__file__)
    elsewhere = "".join(p.read_text(encoding="utf-8") for p in here.parent.glob("test_*.py") if p != here)
    covered = set(CASES) | set(ERRORS) | {rule for rule in SEVERITY if f'"{rule}"' in elsewhere}
    assert set(SEVERITY) - {"choices.single", "prompt.empty"} <= covered


def test_clean_tasks_have_no_findings(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"quiz.yaml": mc(), "data.jsonl": CLEAN})
    write(
        tmp_path / "gen",
        {
            "capitals.yaml": GEN.replace("PROMPT", "Capital of {{ country }}?") + 'generation: {stop: ["\\n"]}\n',
            "data.jsonl": rows(
                {"id": "a", "country": "France", "answers": ["Paris"]},
                {"id": "b", "country": "Peru", "answers": ["Lima"]},
            ),
        },
    )
    # an MMLU-style prompt lists every choice: the gold is in the prompt, and so are the others
    listed = mc(prompt="{{ question }}\\n{% for c in choices %}- {{ c }}\\n{% endfor %}Answer:")
    write(tmp_path / "listed", {"quiz.yaml": listed.replace("name: quiz", "name: listed"), "data.jsonl": CLEAN})
    # few-shot examples from a separate split
    pool = rows({"id": "p1", "question": "Colour of grass?", "choices": ["green", "blue"], "label": 0})
    sep = mc(extra="fewshot: {count: 1, source: {path: dev.jsonl, id: id}}\n")
    sep = sep.replace("name: quiz", "name: shots")
    write(tmp_path / "shots", {"quiz.yaml": sep, "data.jsonl": CLEAN, "dev.jsonl": pool})
    monkeypatch.chdir(tmp_path)
    code, text = validate(tmp_path, "quiz.yaml", "gen", "listed", "shots", capsys=capsys)
    assert code == 0, text
    assert findings(text) == [], text
    assert "4 task(s) valid" in text


def test_strict_turns_a_warning_into_an_error(tmp_path, monkeypatch, capsys):
    files, _ = CASES["choices.duplicate"]
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    code, text = validate(tmp_path, "quiz.yaml", "--strict", capsys=capsys)
    assert code == 2, text
    assert "[choices.duplicate]" in text and "--strict" in text


def test_a_task_file_silences_a_rule_with_a_reason(tmp_path, monkeypatch, capsys):
    files, _ = CASES["choices.duplicate"]
    silence = "audit:\n  silence:\n    - {rule: choices.duplicate, reason: the pair is the test}\n"
    silenced = files["quiz.yaml"] + silence
    write(tmp_path, {**files, "quiz.yaml": silenced})
    monkeypatch.chdir(tmp_path)
    code, text = validate(tmp_path, "quiz.yaml", "--strict", capsys=capsys)
    assert code == 0, text
    assert findings(text) == [], text  # no warning
    assert "silenced [choices.duplicate]" in text and "the pair is the test" in text


def test_silencing_an_unknown_rule_is_an_error_naming_the_closest(tmp_path, monkeypatch, capsys):
    silenced = mc() + "audit:\n  silence:\n    - {rule: choices.duplicates, reason: typo}\n"
    write(tmp_path, {"quiz.yaml": silenced, "data.jsonl": CLEAN})
    monkeypatch.chdir(tmp_path)
    code, text = validate(tmp_path, "quiz.yaml", capsys=capsys)
    assert code == 2, text
    assert "field 'audit.silence'" in text and "did you mean choices.duplicate" in text


def test_a_silence_without_a_reason_is_refused(tmp_path, monkeypatch, capsys):
    silenced = mc() + "audit:\n  silence:\n    - {rule: choices.duplicate, reason: ' '}\n"
    write(tmp_path, {"quiz.yaml": silenced, "data.jsonl": CLEAN})
    monkeypatch.chdir(tmp_path)
    code, text = validate(tmp_path, "quiz.yaml", capsys=capsys)
    assert code == 2 and "reason" in text, text


PLUGIN = """
from proctor.core.audit import AuditRule, Hit


def long_questions(subject):
    for sample in subject.samples:
        if len(sample.sample.fields.get("question", "")) > 30:
            yield Hit("the question is over 30 characters", file=sample.sample.file, row=sample.sample.row,
                      field="question")


def register(registry):
    registry.add_audit_rule(AuditRule("house.long-question", "warning", "Questions over 30 characters.",
                                      long_questions))
"""


def test_a_plugin_adds_a_rule_through_the_registry(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"quiz.yaml": mc(), "data.jsonl": CLEAN, "house_rules.py": PLUGIN})
    monkeypatch.chdir(tmp_path)
    try:
        code, text = validate(tmp_path, "quiz.yaml", "--plugin", "house_rules.py", capsys=capsys)
    finally:  # the registry is the process's: the other tests' tasks must not meet this rule
        registry().audit_rules.pop("house.long-question", None)
    assert code == 0, text
    assert findings(text) == ["house.long-question"], text
    assert "data.jsonl, row 1, field 'question'" in text  # "What colour is the sky on a clear day?"
    assert "(2 rows or places in all" in text  # and "What is frozen water called?"


def test_docs_list_every_rule_with_its_severity():
    from tests.conftest import REPO

    text = (REPO / "docs" / "audit.md").read_text(encoding="utf-8")
    for rule in BUILTIN_RULES:
        assert f"| `{rule.id}` | {rule.severity} |" in text, rule.id


def test_an_extraction_regex_that_backtracks_without_end_is_an_error_not_a_hang(tmp_path, monkeypatch, capsys):
    """``(a|aa)+$`` has exponentially many ways to fail on forty a's and a '!': the audit, trying the pattern on
    the references, names it within the time bound (``re`` would hold ``validate`` for hours)."""
    from proctor.core import bounded_regex

    monkeypatch.setattr(bounded_regex, "SEARCH_SECONDS", 0.2)
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        {
            "capitals.yaml": GEN.replace("PROMPT", "Say it: {{ country }}") + "extraction: {regex: '(a|aa)+$'}\n",
            "data.jsonl": rows({"id": "a", "country": "a", "answers": ["a" * 40 + "!"]}),
        },
    )
    code, text = validate(tmp_path, "capitals.yaml", capsys=capsys)
    assert code == 2, text
    assert re.search(r"capitals\.yaml:\d+, field 'extraction\.regex'", text), text
    assert "'(a|aa)+$' takes more than 0.2 seconds" in text and "internal error" not in text
