"""UseCase construction rules, data validation, seeded prompts, runtime-override alignment, IFEval checks."""

from __future__ import annotations

import json

import pytest

from proctor import UseCase
from proctor.dialects.aisteer import (
    CommonsenseMCQA,
    InstructionFollowing,
    MCQAAccuracy,
    StrictInstruction,
    UseCaseDataError,
)
from proctor.dialects.aisteer.control_arguments import resolve_overrides
from proctor.dialects.aisteer.ifeval import follows
from proctor.dialects.aisteer.mcqa import LETTERS, parse_letter
from tests.conftest import shared_path

ROWS = [
    {"id": f"r{i}", "question": f"Question {i}?", "answer": f"c{i}", "choices": [f"c{i}", "x", "y", "z", "w"]}
    for i in range(6)
]


class Echo(UseCase):
    _EVALUATION_REQ_KEYS = ("id", "text")
    flavour: str

    def validate_evaluation_data(self, row):
        if not isinstance(row["text"], str):
            raise ValueError("'text' must be a string")

    def generate(self, model_or_pipeline, tokenizer=None, gen_kwargs=None, runtime_overrides=None, **kwargs):
        return [{"response": row["text"]} for row in self.evaluation_data]

    def evaluate(self, generations):
        return {}


def test_extra_kwargs_become_attributes_and_data_loads_from_jsonl(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(json.dumps({"id": i, "text": str(i)}) for i in range(5)) + "\n")
    case = Echo(path, [MCQAAccuracy()], flavour="x", num_samples=3, shuffle=True, seed=1)
    assert case.flavour == "x" and len(case.evaluation_data) == 3
    again = Echo(path, [MCQAAccuracy()], flavour="x", num_samples=3, shuffle=True, seed=1)
    assert case.evaluation_data == again.evaluation_data
    json_path = tmp_path / "d.json"
    json_path.write_text(json.dumps([{"id": 1, "text": "a"}]))
    assert Echo(json_path).evaluation_data == [{"id": 1, "text": "a"}]


@pytest.mark.fast
def test_construction_rules():
    with pytest.raises(TypeError, match="__init__"):

        class Bad(Echo):  # noqa: F841
            def __init__(self):
                pass

    with pytest.raises(TypeError, match="Metric"):
        Echo([{"id": 1, "text": "a"}], ["not a metric"])
    with pytest.raises(TypeError, match="hide the method"):
        Echo([{"id": 1, "text": "a"}], generate=1)
    with pytest.warns(UserWarning, match="empty"):
        Echo([])


@pytest.mark.parametrize(
    "rows, message",
    [
        ([{"id": 1, "text": "a"}, {"text": "b"}], r"row 2: every row needs an 'id'"),
        ([{"id": 1, "text": "a"}, {"id": "b7"}], r"row 2 \(id 'b7'\): missing required keys \['text'\]"),
        ([{"id": 1, "text": None}], r"row 1 \(id 1\): required keys are null or NaN: \['text'\]"),
        ([{"id": 1, "text": float("nan")}], r"null or NaN"),
        ([{"id": 1, "text": "a"}, {"id": 1, "text": "b"}], r"row 2 \(id 1\): duplicate id"),
        ([{"id": 1, "text": "a"}, {"id": "z", "text": 5}], r"row 2 \(id 'z'\): 'text' must be a string"),
    ],
)
def test_every_row_is_validated_at_construction(rows, message):
    with pytest.raises(UseCaseDataError, match=message):
        Echo(rows)


def test_validation_runs_on_rows_beyond_num_samples():
    with pytest.raises(UseCaseDataError, match="row 3"):
        Echo([{"id": 1, "text": "a"}, {"id": 2, "text": "b"}, {"id": 3}], num_samples=1)


@pytest.mark.fast
def test_commonsense_validation_names_row():
    bad = dict(ROWS[1], answer="not there")
    with pytest.raises(UseCaseDataError, match=r"row 2 \(id 'r1'\): 'answer' 'not there' is not one of the choices"):
        CommonsenseMCQA([ROWS[0], bad], [MCQAAccuracy()])


def test_seeded_shuffles_are_reproducible_and_per_row():
    a = CommonsenseMCQA(ROWS, [MCQAAccuracy()], num_shuffling_runs=4, seed=3).prompt_data()
    b = CommonsenseMCQA(ROWS, [MCQAAccuracy()], num_shuffling_runs=4, seed=3).prompt_data()
    c = CommonsenseMCQA(ROWS, [MCQAAccuracy()], num_shuffling_runs=4, seed=4).prompt_data()
    assert a == b and a != c
    # A row's prompts do not depend on which other rows are present.
    only_last = CommonsenseMCQA(ROWS[-1:], [MCQAAccuracy()], num_shuffling_runs=4, seed=3).prompt_data()
    assert only_last == a[-4:]
    assert len({item["prompt"] for item in a[:4]}) > 1  # the runs really reorder the choices
    for item in a:
        row = next(r for r in ROWS if r["id"] == item["id"])
        shown = [line[3:] for line in item["prompt"].splitlines() if line[:3] in {f"{x}. " for x in LETTERS[:5]}]
        assert shown[LETTERS.index(item["reference_answer"])] == row["answer"]


@pytest.mark.fast
def test_parse_letter():
    assert parse_letter("assistant: B") == "B"
    assert parse_letter("The answer is c.") == "C"
    assert parse_letter("I think D", 5) == "D"  # the reference parsed "I" here
    assert parse_letter("nothing", 5) is None


def test_runtime_overrides_follow_ids_not_positions():
    case = CommonsenseMCQA(ROWS, [MCQAAccuracy()], num_shuffling_runs=3, shuffle=True, seed=11)
    items = case.prompt_data()
    resolved = resolve_overrides({"Ctl": {"text": "question", "nested": {"a": "answer"}}}, items, case.evaluation_data)
    assert len(resolved) == len(items) == 18
    for item, args in zip(items, resolved):
        row = next(r for r in ROWS if r["id"] == item["id"])
        assert args == {"Ctl": {"text": row["question"], "nested": {"a": row["answer"]}}}
    with pytest.raises(ValueError, match="no column 'nope'"):
        resolve_overrides({"Ctl": {"text": "nope"}}, items, case.evaluation_data)


@pytest.mark.fast
def test_ifeval_strict_checks():
    assert follows("hello world", "punctuation:no_comma", {})
    assert not follows("hello, world", "punctuation:no_comma", {})
    assert follows("all lower", "change_case:english_lowercase", {})
    assert not follows("   ", "change_case:english_lowercase", {})
    assert follows("one two three", "length_constraints:number_words", {"num_words": 4, "relation": "less than"})
    assert not follows("one two three", "length_constraints:number_words", {"num_words": 4, "relation": "at least"})
    assert follows("* a\n* b\n- c", "detectable_format:number_bullet_lists", {"num_bullets": 3})
    assert follows("<<Title>> text", "detectable_format:title", {})
    assert follows('```json\n{"a": 1}\n```', "detectable_format:json_format", {})
    assert follows("Bye. Any other questions?", "startend:end_checker", {"end_phrase": "any other questions?"})
    assert follows('"quoted"', "startend:quotation", {})
    assert not follows("a cat", "keywords:forbidden_words", {"forbidden_words": ["cat"], "extra": None})
    assert follows("cat cat dog", "keywords:frequency", {"keyword": "cat", "frequency": 2, "relation": "at least"})
    metric = StrictInstruction()
    out = metric(
        responses=["no commas here", "has, comma"],
        instruction_id_lists=[["punctuation:no_comma", "keywords:existence"], ["punctuation:no_comma"]],
        kwargs_lists=[[{}, {"keywords": ["commas"]}], [{}]],
    )
    assert out["strict_prompt_accuracy"] == 0.5 and out["strict_instruction_accuracy"] == pytest.approx(2 / 3)
    with pytest.raises(UseCaseDataError, match=r"id 'p'\): unsupported instruction"):
        InstructionFollowing([{"id": "p", "prompt": "x", "instruction_id_list": ["made:up"], "kwargs": [{}]}], [metric])


def test_real_commonsense_rows_validate():
    path = shared_path(
        "examples", "aisteer360", "notebooks", "benchmarks", "commonsense_mcqa", "data", "evaluation_qa.first100.jsonl"
    )
    case = CommonsenseMCQA(path, [MCQAAccuracy()], num_shuffling_runs=3)
    assert len(case.evaluation_data) == 100 and len(case.prompt_data()) == 300


@pytest.mark.parametrize(
    "name, content, expect",
    [
        (
            "rows.jsonl",
            '{"id": "1", "text": "a"}\n{"id": "2", "id": "3", "text": "b"}\n',
            r"rows\.jsonl:2.*'id' is given",
        ),
        ("rows.jsonl", b'{"id": "1", "text": "a"}\n{"id": "2", "text": "\xff"}\n', r"rows\.jsonl:2.*not valid UTF-8"),
        ("rows.json", '[{"id": "1", "text": "a"},\n {bad}]', r"rows\.json:2.*not valid JSON"),
    ],
)
def test_an_evaluation_data_file_is_read_with_the_row_readers_checks(name, content, expect, tmp_path):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(UseCaseDataError, match=expect):
        Echo(str(path))


def test_gzipped_evaluation_data_reads_as_the_plain_file(tmp_path):
    import gzip

    rows = [{"id": "1", "text": "a"}, {"id": "2", "text": "b"}]
    (tmp_path / "rows.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    assert Echo(str(tmp_path / "rows.jsonl.gz")).evaluation_data == rows
