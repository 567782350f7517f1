"""lm-eval's own catalogue tasks on the real rows in ../shared/data, through ``proctor validate``'s entry point: the
audit must not speak where the task is right. Each case is a shape a rule once misread: LAMBADA's one
continuation scored by greedy match (its passage holds the word by design), Winogrande's contexts as choices
(lm-eval's ``multiple_input``: one continuation after each option's sentence), ARC-Challenge's genotype choices
that differ in case only ('Cc or cc' / 'CC or Cc'; 'rr' / 'Rr' / 'RR' under a question writing 'RR' and 'rr'),
OpenBookQA's answer 'none'. LAMBADA's one true finding (its file repeats a passage) and OpenBookQA's ('all of
these' scored with no options listed) must still be given, and the native cases below pair each right shape with
a broken twin the rule must still name ('Paris' / 'PARIS', Python's 'None')."""

from __future__ import annotations

import pytest

from tests.conftest import shared_path
from tests.support.audit_inputs import lmeval_quiz
from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast


def _catalogue(tmp_path, capsys, task: str, mapping: str) -> list[str]:
    pytest.importorskip("lm_eval")
    return audit_lines(tmp_path, {}, capsys, [f"lm_eval:{task}", "--lmeval-data", mapping])


@pytest.mark.parametrize(
    ("task", "dataset", "parts"),
    [
        ("lambada_openai", "EleutherAI/lambada_openai:default:test", ("lambada_openai", "lambada_test.jsonl")),
        ("winogrande", "allenai/winogrande:winogrande_xl:validation", ("winogrande", "hf_arrow_validation")),
        ("arc_challenge", "allenai/ai2_arc:ARC-Challenge:test", ("arc_challenge", "hf_arrow_validation")),
        ("openbookqa", "allenai/openbookqa:main:test", ("openbookqa", "hf_arrow_validation")),
    ],
)
def test_catalogue_tasks_on_real_rows_get_no_finding_but_a_true_one(task, dataset, parts, tmp_path, capsys):
    data = shared_path("data", *parts)
    lines = _catalogue(tmp_path, capsys, task, f"{dataset}={data}")
    # LAMBADA's test file really repeats one passage (rows 1753 and 1889): the one finding it must get.
    # OpenBookQA's cloze task scores 'all of these' / 'none of these' (15 rows) as continuations after a question
    # that lists no options: the model never sees what they refer to (red team 10, category 3)
    true_findings = {"lambada_openai": ["samples.duplicate"], "openbookqa": ["choices.refers-to-listing"]}
    expected = true_findings.get(task, [])
    assert [line.split("audit [")[1].split("]")[0] for line in lines] == expected, lines


def test_choices_that_differ_in_case_only_are_one_choice_unless_the_case_is_the_answer(tmp_path, capsys):
    rows = [
        {
            "id": "g1",
            "q": "Which genotype is heterozygous?",
            "choices": ["Cc or cc", "CC or Cc", "CC only", "Cc only"],
            "label": 1,
        },
        {"id": "g2", "q": "Capital of France?", "choices": ["Paris", "PARIS", "Rome", "Oslo"], "label": 0},
        *[
            {"id": f"g{i}", "q": f"Question {i}?", "choices": ["red", "green", "blue", "grey"], "label": i % 4}
            for i in range(3, 8)
        ],
    ]
    task = (
        "name: quiz\nkind: multiple_choice\ndata: {path: data.jsonl, id: id}\n"
        'prompt: "{{ q }}\\nAnswer:"\nchoices: "{{ choices }}"\ntarget: "{{ label }}"\n'
    )
    lines = audit_lines(tmp_path, {"t.yaml": task, "data.jsonl": jsonl_text(rows)}, capsys)
    duplicates = [line for line in lines if "[choices.duplicate]" in line]
    assert len(duplicates) == 1 and "row 2," in duplicates[0] and "'Paris' / 'PARIS'" in duplicates[0], lines
    assert not any("[target.ambiguous]" in line and "row 1," in line for line in lines), lines


ROLL = (
    "The ability to roll the tongue is coded by the dominant allele R. The inability is coded by the recessive "
    "allele r. A man with an RR allele combination has a child with a woman with an rr allele combination. "
    "Which allele combination could occur in the child?"
)


def test_genotypes_whose_case_is_the_answer_are_two_choices_and_a_plain_case_change_is_one(tmp_path, capsys):
    """ARC-Challenge's test rows Mercury_7238945 (choices 'R', 'rr', 'Rr', 'RR': the question writes 'RR' and 'rr'
    as distinct words) and Mercury_400752 ('100% Rr' / '100% rr' under a question naming both): case is the
    answer. 'Paris' / 'PARIS' under a question that writes neither twice is still one choice, listed twice."""
    rows = [
        {"id": "r1", "q": ROLL, "choices": ["R", "rr", "Rr", "RR"], "label": 2},
        {
            "id": "r2",
            "q": "When crossing parents with genotypes Rr and rr, what are the offspring's genotypes?",
            "choices": ["75% Rr, 25% rr", "50% Rr, 50% rr", "100% Rr", "100% rr"],
            "label": 1,
        },
        {
            "id": "r3",
            "q": "Which city is the capital of France, Paris or Lyon?",
            "choices": ["Paris", "PARIS", "Rome", "Oslo"],
            "label": 1,
        },
        *[
            {"id": f"g{i}", "q": f"Question {i}?", "choices": ["red", "green", "blue", "grey"], "label": i % 4}
            for i in range(4, 9)
        ],
    ]
    task = (
        "name: quiz\nkind: multiple_choice\ndata: {path: data.jsonl, id: id}\n"
        'prompt: "{{ q }}\\nAnswer:"\nchoices: "{{ choices }}"\ntarget: "{{ label }}"\n'
    )
    lines = audit_lines(tmp_path, {"t.yaml": task, "data.jsonl": jsonl_text(rows)}, capsys)
    duplicates = [line for line in lines if "[choices.duplicate]" in line]
    assert len(duplicates) == 1 and "row 3," in duplicates[0] and "'Paris' / 'PARIS'" in duplicates[0], lines
    ambiguous = [line for line in lines if "[target.ambiguous]" in line]
    assert len(ambiguous) == 1 and "row 3," in ambiguous[0] and "choice 1 ('PARIS')" in ambiguous[0], lines


@pytest.mark.parametrize(("choice", "named"), [("none", False), ("None", True), ("nan", True), ("NA", True)])
def test_none_as_a_word_is_an_answer_and_none_as_python_writes_it_is_a_placeholder(choice, named, tmp_path, capsys):
    rows = [
        {"id": f"n{i}", "q": f"How many moons has planet {i}?", "choices": ["one", "two", choice, "four"], "label": 0}
        for i in range(6)
    ]
    task = (
        "name: quiz\nkind: multiple_choice\ndata: {path: data.jsonl, id: id}\n"
        'prompt: "{{ q }}\\nAnswer:"\nchoices: "{{ choices }}"\ntarget: "{{ label }}"\n'
    )
    lines = audit_lines(tmp_path, {"t.yaml": task, "data.jsonl": jsonl_text(rows)}, capsys)
    assert any("[choices.placeholder]" in line for line in lines) is named, lines


# MMLU's "which of the statements I, II, III ...?" answered 'None' (fp14 FP-005; read as lm-eval reads MMLU: a
# 'choices' list and an integer answer): the word "none of them" beside statement combinations; the same 'None'
# where the row's source holds a null, or beside numbers or colours, is a value that went missing
STATEMENTS = ["III only", "I and II only", "I, II, and III"]


@pytest.mark.parametrize(
    ("choices", "named"),
    [
        pytest.param(["None", *STATEMENTS], False, id="none-of-the-statements"),
        pytest.param(["I only", "II only", "Both I and II", "None"], False, id="none-beside-both"),
        pytest.param([None, *STATEMENTS], True, id="null-in-the-source"),  # a null column cast to 'None'
        pytest.param(["None", "7", "6", "2"], True, id="none-beside-numbers"),
        pytest.param(["Green", "None", "Yellow", "Blue"], True, id="none-beside-colours"),
    ],
)
def test_none_beside_statement_combinations_is_an_answer(choices, named, tmp_path, capsys, monkeypatch):
    pytest.importorskip("lm_eval")
    monkeypatch.chdir(tmp_path)  # lm-eval reads data_files from the working folder
    rows = [
        {"question": f"Which of statements I, II, III hold for case {i}?", **dict(zip("abcd", choices)), "answer": 1}
        for i in range(6)
    ]
    # each field cast to text, as a task does that reads its options from columns: a null becomes 'None'
    task = lmeval_quiz('"{{question}}\\nAnswer:"', '"{{[a|string, b|string, c|string, d|string]}}"', "answer")
    files = {"quiz.yaml": task, "test.jsonl": jsonl_text(rows)}
    lines = audit_lines(tmp_path, files, capsys, [str(tmp_path / "quiz.yaml")])
    found = [line for line in lines if "[choices.placeholder]" in line]
    assert len(found) == int(named), lines
    if named:
        assert "row 0, field 'choices'" in found[0], found
        assert "(6 rows or places in all; the first is named)" in found[0], found
