"""Text in the prompt that no model should see, and rules that held for some dialects only, through ``proctor
validate``'s entry point (red team 10): a model's control token written as text ('[MASK]' ending every GLM-130B
input, '</s>' closing every reference: ``text.control-token``), a placeholder nobody filled in the text every
prompt shares (a probsem pretext's '{topic}', a slot '<passage>': ``prompt.unfilled``), worked examples in another
label vocabulary or after another cue (SEA-HELM's examples split, a probsem prompt file: ``fewshot.other-format``),
rows whose text ends with the template's answer tag (SEA-HELM: ``prompt.doubled-cue``), a use case's questions
that are 'nan' (``data.missing-as-text``), and a group whose members do not all compute a metric (native and
lm-eval: ``group.metric-not-shared``). Each finding is named by rule, file, row or line and field; each broken
input has a right twin that stays silent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.audit_inputs import ARC_QUESTIONS, QUIZ_USE_CASE
from tests.support.seahelm_fixtures import sentiment_args, sentiment_files, sentiment_rows
from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast


def _named(lines: list[str], rule: str) -> str:
    named = [line for line in lines if f"[{rule}]" in line]
    assert len(named) == 1, lines
    return named[0]


def _silent(lines: list[str], rule: str) -> None:
    assert not [line for line in lines if f"[{rule}]" in line], lines


# -- text.control-token: a model's control token written as text ----------------------------------------------------

GLM = 'name: "glmtask"\ntype: "mul"\npath: "data"\nfile-pattern:\n  test: "**/test.jsonl"\n'


def _glm(inputs: str) -> dict[str, str]:
    rows = [
        {"inputs_pretokenized": inputs.format(q=q), "choices_pretokenized": c, "label": g} for q, c, g in ARC_QUESTIONS
    ]
    return {"glm.yaml": GLM, "data/prompt_1/test.jsonl": jsonl_text(rows)}


GEN = "kind: generate\ndata: data.jsonl\nprompt: 'Q: {{ question }}\n\n  A:'\ntarget: '{{ answer }}'\nname: t\n"
GEN += 'generation:\n  stop: ["\\n"]\n'
CAPITALS = [("France", "Paris"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Peru", "Lima"), ("Chile", "Santiago")]


def _gen(answer: str, prompt: str | None = None) -> dict[str, str]:
    rows = [{"question": f"What is the capital of {c}?", "answer": answer.format(a=a)} for c, a in CAPITALS]
    task = GEN if prompt is None else GEN.replace("'Q: {{ question }}\n\n  A:'", prompt)
    return {"t.yaml": task, "data.jsonl": jsonl_text(rows)}


CONTROL_CASES: dict[str, tuple[dict[str, str], list[str] | None, str | None, str]] = {
    "GLM inputs ending with [MASK]": (
        _glm("{q} Answer: [MASK]"),
        ["glm.yaml"],
        "text.control-token",
        "test.jsonl, row 1, field 'prompt'",
    ),
    "references closed by </s>": (_gen("{a}</s>"), None, "text.control-token", "data.jsonl, row 1, field 'target'"),
    # right twins: a blank to fill inside the question; the task's own chat turn written by hand; HTML in one row
    "a [MASK] blank inside the question": (
        _glm("Fill in: [MASK] is the answer to '{q}'. Answer:"),
        ["glm.yaml"],
        None,
        "",
    ),
    "a chat turn the template writes": (
        _gen("{a}", "'<|im_start|>user\n\n  {{ question }}<|im_end|>\n\n  <|im_start|>assistant\n\n  '"),
        None,
        None,
        "",
    ),
}


@pytest.mark.parametrize("case", CONTROL_CASES)
def test_a_control_token_written_as_text(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files, args, rule, where = CONTROL_CASES[case]
    lines = audit_lines(tmp_path, files, capsys, [str(tmp_path / a) for a in args] if args else None)
    if rule is None:
        _silent(lines, "text.control-token")
        return
    assert where in _named(lines, rule), lines


# -- prompt.unfilled: a placeholder in the text every prompt shares -------------------------------------------------

SUITE = {
    "pretext": "Judge the statement.",
    "context": [
        {"text": t, "expected": e}
        for t, e in [("The sky is blue.", 0), ("Fish can fly.", 1), ("Water is wet.", 0), ("Stones sing.", 1)]
    ],
    "posttext": "Verdict:",
    "queries": ["True", "False"],
}


def _probsem(prompt: str = "Read the statements and judge them.\n", **changes: Any) -> dict[str, str]:
    return {"p/test.txt": prompt, "p/test_A.json": json.dumps({**SUITE, **changes})}


NATIVE = "kind: multiple_choice\ndata: data.jsonl\nprompt: 'PROMPT'\nchoices: '{{ choices }}'\ntarget: '{{ gold }}'\n"
NATIVE += "name: t\n"


def _native(prompt: str) -> dict[str, str]:
    rows = [{"query": q, "choices": c, "gold": g} for q, c, g in ARC_QUESTIONS]
    return {"t.yaml": NATIVE.replace("PROMPT", prompt), "data.jsonl": jsonl_text(rows)}


UNFILLED_CASES: dict[str, tuple[dict[str, str], list[str] | None, str | None]] = {
    "a probsem pretext's {topic}": (
        _probsem(pretext="Judge the statement about {topic}."),
        ["p"],
        "test_A.json, field 'pretext'",
    ),
    "a slot <passage> in a native prompt": (
        _native("Context: <passage>\n\n  Question: {{ query }}\n\n  Answer:"),
        None,
        "t.yaml:3, field 'prompt'",
    ),
    "a slot [TOPIC] on the question's own line": (
        _native("Topic: [TOPIC]. Question: {{ query }}\n\n  Answer:"),
        None,
        "t.yaml:3, field 'prompt'",
    ),
    # right twins: braces of a JSON example; the form of the reply shown with a slot for the answer
    "a JSON example in the pretext": (_probsem(pretext='Judge it. Reply as {"verdict": true}.'), ["p"], None),
    "the reply's form shown as SEA-HELM's GPQA shows it": (
        _probsem(pretext='Reply as "Verdict: {answer}", where {answer} is True or False.'),
        ["p"],
        None,
    ),
    "the reply's form shown": (
        _native("Reply in the form Answer: <letter>.\n\n  Question: {{ query }}\n\n  Answer:"),
        None,
        None,
    ),
}


@pytest.mark.parametrize("case", UNFILLED_CASES)
def test_a_placeholder_nobody_filled(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files, args, where = UNFILLED_CASES[case]
    lines = audit_lines(tmp_path, files, capsys, [str(tmp_path / a) for a in args] if args else None)
    if where is None:
        _silent(lines, "prompt.unfilled")
        return
    assert where in _named(lines, "prompt.unfilled"), lines


# -- SEA-HELM: examples in other labels, texts ending with the answer tag --------------------------------------------

# the rows' text set off by a fence in the template
FENCED = "Kalimat:\n```\n{text}\n```"

SEA_CASES: dict[str, tuple[dict[str, str], str | None, str]] = {
    "examples labelled in English": (
        sentiment_files(sentiment_rows(0), sentiment_rows(100, english=True), FENCED),
        "fewshot.other-format",
        "config.yaml, field 'example_filepath': 3 of the 3 few-shot examples",
    ),
    "texts ending with the answer tag": (
        sentiment_files(sentiment_rows(0, text="{t}\nJawaban:"), sentiment_rows(100), FENCED),
        "prompt.doubled-cue",
        "copy, row 1, field 'text'",
    ),
    # right twin: the language's own rows and examples
    "Indonesian rows and examples": (sentiment_files(sentiment_rows(0), sentiment_rows(100), FENCED), None, ""),
}


@pytest.mark.parametrize("case", SEA_CASES)
def test_seahelm_examples_and_texts(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files, rule, where = SEA_CASES[case]
    lines = audit_lines(tmp_path, files, capsys, sentiment_args(tmp_path))
    if rule is None:
        _silent(lines, "fewshot.other-format")
        _silent(lines, "prompt.doubled-cue")
        return
    assert where in _named(lines, rule), lines


# -- probsem: a prompt file's worked examples in another format ------------------------------------------------------

DEMOS = "Judge the statement.\nDogs have fur.\n{cue}\n{yes}\nJudge the statement.\nTrees can walk.\n{cue}\n{no}\n"

PROBSEM_CASES: dict[str, tuple[str, bool]] = {
    "demos after Answer: with yes/no": (DEMOS.format(cue="Answer:", yes="yes", no="no"), True),
    "demos after Verdict: with yes/no": (DEMOS.format(cue="Verdict:", yes="yes", no="no"), True),
    # right twin: the suite's own cue and queries
    "demos after Verdict: with True/False": (DEMOS.format(cue="Verdict:", yes="True", no="False"), False),
}


@pytest.mark.parametrize("case", PROBSEM_CASES)
def test_probsem_prompt_file_demonstrating_another_format(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt, named = PROBSEM_CASES[case]
    lines = audit_lines(tmp_path, _probsem(prompt), capsys, [str(tmp_path / "p")])
    if not named:
        _silent(lines, "fewshot.other-format")
        return
    assert "p/test.txt, field 'prompt'" in _named(lines, "fewshot.other-format"), lines


# -- target.none: probsem's documented 'no gold' (fp14 FP-009) against a native task's unscored targets --------------

NO_GOLD = [{"text": "Is writing with a model good?", "expected": -1}]
NATIVE_NO_GOLD = (
    "name: t\nkind: multiple_choice\ndata: data.jsonl\nprompt: '{{ query }}'\nchoices: '{{ choices }}'\n"
    "target: '{{ gold }}'\nunscored_target: -1\nmetrics: [METRIC]\n"
)


@pytest.mark.parametrize(
    ("case", "named"),
    [
        ("probsem: every context expected -1", False),  # docs/probsem.md: the sample gets its distribution
        ("native: every target the unscored value, scored by acc", True),
        ("native: every target the unscored value, scored by distribution_acc", True),
    ],
)
def test_no_right_answer_by_design_or_by_mistake(
    case: str, named: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if case.startswith("probsem"):
        lines = audit_lines(tmp_path, _probsem(context=NO_GOLD), capsys, [str(tmp_path / "p")])
    else:
        rows = [{"query": q, "choices": c, "gold": -1} for q, c, _ in ARC_QUESTIONS]
        task = NATIVE_NO_GOLD.replace("METRIC", case.rsplit(" ", 1)[-1])
        lines = audit_lines(tmp_path, {"t.yaml": task, "data.jsonl": jsonl_text(rows)}, capsys)
    if not named:
        _silent(lines, "target.none")
        return
    line = _named(lines, "target.none")
    assert f"none of the {len(ARC_QUESTIONS)} rows has a right answer" in line and "field 'target'" in line, line


# -- data.missing-as-text: a use case's questions that are 'nan' -------------------------------------------------------


def _missing_as_text(lines: list[str], where: str | None) -> None:
    """The finding names ``where`` and 2 of the 6 rows; None: no finding."""
    if where is None:
        _silent(lines, "data.missing-as-text")
        return
    line = _named(lines, "data.missing-as-text")
    assert where in line and "2 of the 6 rows" in line, line


@pytest.mark.parametrize("missing", [True, False])
def test_a_use_case_question_that_is_nan(missing: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        {"id": f"q{i}", "question": "nan" if missing and i in (2, 4) else q, "answer": c[g], "choices": c}
        for i, (q, c, g) in enumerate(ARC_QUESTIONS)
    ]
    files = {"quiz.py": QUIZ_USE_CASE, "rows.jsonl": jsonl_text(rows)}
    lines = audit_lines(tmp_path, files, capsys, [str(tmp_path / "quiz.py")])
    _missing_as_text(lines, "rows.jsonl, row 3, field 'question'" if missing else None)


@pytest.mark.parametrize("missing", [True, False])
def test_a_glm_input_that_is_nan(missing: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A dialect whose code makes the prompt from the row (GLM-130B's inputs): the fields the prompts hold are read."""
    rows = [
        {"inputs_pretokenized": "nan" if missing and i in (1, 4) else q, "choices_pretokenized": c, "label": g}
        for i, (q, c, g) in enumerate(ARC_QUESTIONS)
    ]
    files = {"glm.yaml": GLM, "data/prompt_1/test.jsonl": jsonl_text(rows)}
    lines = audit_lines(tmp_path, files, capsys, [str(tmp_path / "glm.yaml")])
    _missing_as_text(lines, "test.jsonl, row 2, field 'inputs_pretokenized'" if missing else None)


# -- group.metric-not-shared: a group whose members do not all compute a metric ---------------------------------------


def _suite(first: list[str] | None, second: list[str] | None) -> dict[str, str]:
    tasks = [
        {"name": name, "group": "suite", "data": data, **({"metrics": metrics} if metrics is not None else {})}
        for name, data, metrics in (("arc", "a.jsonl", first), ("obqa", "b.jsonl", second))
    ]
    defaults = {"kind": "multiple_choice", "prompt": "{{ query }}\nAnswer:", "choices": "{{ choices }}"}
    task = {"defaults": {**defaults, "target": "{{ gold }}"}, "tasks": tasks}
    rows = [{"query": q, "choices": c, "gold": g} for q, c, g in ARC_QUESTIONS]
    return {
        "t.yaml": yaml.safe_dump(task, sort_keys=False),
        "a.jsonl": jsonl_text(rows),
        "b.jsonl": jsonl_text(rows[::-1]),
    }


GROUP_CASES: dict[str, tuple[list[str] | None, list[str] | None, str | None]] = {
    "one member without acc_norm": (["acc"], ["acc", "acc_norm"], "t.yaml:"),
    "one member on the defaults (acc, acc_norm)": (["acc"], None, "t.yaml:"),
    # right twins: the same metrics, named or by default
    "the same metrics": (["acc", "acc_norm"], ["acc", "acc_norm"], None),
    "both on the defaults": (None, None, None),
}


@pytest.mark.parametrize("case", GROUP_CASES)
def test_a_group_metric_not_every_member_computes(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second, where = GROUP_CASES[case]
    lines = audit_lines(tmp_path, _suite(first, second), capsys)
    if where is None:
        _silent(lines, "group.metric-not-shared")
        return
    line = _named(lines, "group.metric-not-shared")
    assert "field 'metrics'" in line and "group 'suite'" in line and "'acc_norm'" in line and "'arc'" in line, line
    assert "arc: audit" in line, line


LM_MEMBER = """\
task: NAME
dataset_path: json
dataset_kwargs:
  data_files:
    test: DATA
test_split: test
output_type: multiple_choice
doc_to_text: "{{query}}\\nAnswer:"
doc_to_choice: choices
doc_to_target: gold
metric_list:
METRICS"""
LM_GROUP = "group: suite\ntask:\n  - quiz_a\n  - quiz_b\naggregate_metric_list:\n  - metric: acc_norm\n"


@pytest.mark.parametrize("shared", [False, True])
def test_an_lmeval_group_metric_not_every_member_computes(
    shared: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # lm-eval reads data_files from the working folder
    both = "  - metric: acc\n  - metric: acc_norm\n"
    rows = [{"query": q, "choices": c, "gold": g} for q, c, g in ARC_QUESTIONS]
    files = {
        "a.yaml": LM_MEMBER.replace("NAME", "quiz_a")
        .replace("DATA", "a.jsonl")
        .replace("METRICS", both if shared else "  - metric: acc\n"),
        "b.yaml": LM_MEMBER.replace("NAME", "quiz_b").replace("DATA", "b.jsonl").replace("METRICS", both),
        "suite.yaml": LM_GROUP,
        "a.jsonl": jsonl_text(rows),
        "b.jsonl": jsonl_text(rows[::-1]),
    }
    lines = audit_lines(tmp_path, files, capsys, [str(tmp_path)])
    if shared:
        _silent(lines, "group.metric-not-shared")
        return
    line = _named(lines, "group.metric-not-shared")
    assert "a.yaml, field 'metrics'" in line and "'quiz_a'" in line and "acc_norm" in line, line
    assert "lm-eval, whose group names the metric, averages the members that have it" in line, line


def test_an_lmeval_group_is_read_for_the_metrics_it_averages_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The group averages acc; one member also computes acc_norm, which is that member's own (lm-eval reports
    no group acc_norm, and neither does proctor)."""
    monkeypatch.chdir(tmp_path)
    rows = [{"query": q, "choices": c, "gold": g} for q, c, g in ARC_QUESTIONS]
    files = {
        "a.yaml": LM_MEMBER.replace("NAME", "quiz_a")
        .replace("DATA", "a.jsonl")
        .replace("METRICS", "  - metric: acc\n"),
        "b.yaml": LM_MEMBER.replace("NAME", "quiz_b")
        .replace("DATA", "b.jsonl")
        .replace("METRICS", "  - metric: acc\n  - metric: acc_norm\n"),
        "suite.yaml": LM_GROUP.replace("acc_norm", "acc"),
        "a.jsonl": jsonl_text(rows),
        "b.jsonl": jsonl_text(rows[::-1]),
    }
    _silent(audit_lines(tmp_path, files, capsys, [str(tmp_path)]), "group.metric-not-shared")
