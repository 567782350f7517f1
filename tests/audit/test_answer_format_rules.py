"""Answer formats the prompt asks for against what is stopped, shown and scored, through ``proctor validate``'s
entry point: stop strings that cut the reasoning the prompt asks for or the examples' line-break answers
(``generation.stop-inside-answer``) or miss the next question's cue (``generation.unbounded-answer``); few-shot
examples in another format (``fewshot.other-format``) or answered in words the task never scores
(``fewshot.wrong-answer``); single-label choices that are not the labels the prompt lists
(``prompt.options-listed-wrong``); an instruction to answer with the letter over text choices
(``prompt.asks-other-form``). Each finding names its rule, file, line or row and field; each right twin is
silent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.audit_inputs import LETTERED_PROMPT as LISTED
from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast

QA = [{"id": f"q{i}", "question": f"What is {i} plus {i + 3}?", "answer": str(2 * i + 3)} for i in range(12)]
DEV = [{"id": f"d{i}", "question": f"What is {i} times 2?", "answer": str(2 * i)} for i in range(1, 9)]


def _gen(prompt: str, stop: list[str], extra: str = "") -> str:
    return (
        "name: sums\nkind: generate\ndata: {path: data.jsonl, id: id}\n"
        f"prompt: {json.dumps(prompt)}\ntarget: '{{{{ answer }}}}'\n"
        f"generation: {{stop: {json.dumps(stop)}, max_tokens: 200}}\n{extra}"
    )


COT = 'Question: {{ question }}\nLet\'s think step by step, then finish with "The answer is N."\nAnswer:'
REGEX = "extraction: {regex: 'The answer is (\\d+)', fallback: none}\n"
PLAIN = "Question: {{ question }}\nAnswer:"


def _fewshot(template: str) -> str:
    return f"fewshot: {{count: 3, source: {{path: dev.jsonl}}, template: {json.dumps(template)}}}\n"


def _hits(tmp_path: Path, capsys: Any, task: str, rule: str, **extra: str) -> list[str]:
    files = {"t.yaml": task, "data.jsonl": jsonl_text(QA), "dev.jsonl": jsonl_text(DEV), **extra}
    return [line for line in audit_lines(tmp_path, files, capsys) if f"[{rule}]" in line]


@pytest.mark.parametrize(
    ("task", "twin", "rule", "field"),
    [
        pytest.param(  # the reasoning's first line ends generation before 'The answer is'
            _gen(COT, ["\n"], REGEX),
            _gen(COT, ["\n\n"], REGEX),
            "generation.stop-inside-answer",
            "generation.stop",
            id="cot-stopped-at-newline",
        ),
        pytest.param(  # the examples answer on the line after 'Answer:': the copied line break ends every answer
            _gen(PLAIN, ["\n"], _fewshot("Question: {{ question }}\nAnswer:\n{{ answer }}")),
            _gen(PLAIN, ["\n"], _fewshot("Question: {{ question }}\nAnswer: {{ answer }}")),
            "generation.stop-inside-answer",
            "generation.stop",
            id="examples-answer-after-line-break",
        ),
        pytest.param(  # 'Q:' never stops a run-on into 'Question: ...'
            _gen(PLAIN, ["Q:"]),
            _gen(PLAIN, ["Question:"]),
            "generation.unbounded-answer",
            "generation.stop",
            id="stop-misses-next-cue",
        ),
    ],
)
def test_stop_strings_against_the_asked_shape(
    tmp_path: Path, capsys: Any, task: str, twin: str, rule: str, field: str
) -> None:
    hits = _hits(tmp_path / "bad", capsys, task, rule)
    assert len(hits) == 1, hits
    assert "t.yaml:6" in hits[0] and f"field '{field}'" in hits[0]
    assert not _hits(tmp_path / "good", capsys, twin, rule)


def test_cot_examples_on_one_line_are_spared(tmp_path: Path, capsys: Any) -> None:
    one_line = "Q: {{ question }}\nA: Let's think step by step. The answer is {{ answer }}."
    task = _gen("Q: {{ question }}\nA: Let's think step by step.", ["\n"], REGEX + _fewshot(one_line))
    assert not _hits(tmp_path, capsys, task, "generation.stop-inside-answer")


BOOLQ = [{"id": f"b{i}", "question": f"is {i} even", "answer": i % 2 == 0, "label": int(i % 2 == 0)} for i in range(12)]


def _mc(prompt: str, choices: str, target: str, extra: str = "") -> str:
    return (
        "name: quiz\nkind: multiple_choice\ndata: {path: data.jsonl, id: id}\n"
        f"prompt: {json.dumps(prompt)}\nchoices: {choices}\ntarget: {json.dumps(target)}\n{extra}"
    )


def test_examples_in_another_format(tmp_path: Path, capsys: Any) -> None:
    rows = jsonl_text(BOOLQ)
    task = _mc(PLAIN, "['no', 'yes']", "{{ label }}", _fewshot("Q: {{ question }}\nA: {{ ['no', 'yes'][label] }}"))
    hits = _hits(tmp_path / "bad", capsys, task, "fewshot.other-format", **{"data.jsonl": rows, "dev.jsonl": rows})
    assert len(hits) == 1 and "t.yaml:7" in hits[0] and "field 'fewshot.template'" in hits[0], hits
    twin = _mc(PLAIN, "['no', 'yes']", "{{ label }}", _fewshot(PLAIN + " {{ ['no', 'yes'][label] }}"))
    assert not _hits(tmp_path / "good", capsys, twin, "fewshot.other-format", **{"data.jsonl": rows, "dev.jsonl": rows})


@pytest.mark.parametrize(
    ("example_answer", "choices", "target", "rows"),
    [
        pytest.param("{{ answer }}", "['no', 'yes']", "{{ label }}", BOOLQ, id="true-false-for-no-yes"),
        pytest.param(
            "{{ 'ABCD'[gold] }}",
            "'{{ options }}'",
            "{{ gold }}",
            [
                {"id": f"m{i}", "question": f"Which colour is sample {i}?", "gold": i % 4,
                 "options": [f"deep red {i}", f"pale blue {i}", f"dark green {i}", f"light grey {i}"]}
                for i in range(12)
            ],
            id="letter-for-text-choices",
        ),
    ],
)  # fmt: skip
def test_example_answers_outside_the_scored_labels(
    tmp_path: Path, capsys: Any, example_answer: str, choices: str, target: str, rows: list[dict[str, Any]]
) -> None:
    data = {"data.jsonl": jsonl_text(rows), "dev.jsonl": jsonl_text(rows)}
    task = _mc(PLAIN, choices, target, _fewshot(f"{PLAIN} {example_answer}"))
    hits = _hits(tmp_path / "bad", capsys, task, "fewshot.wrong-answer", **data)
    assert len(hits) == 1 and "t.yaml:7" in hits[0] and "field 'fewshot.template'" in hits[0], hits
    right = "{{ ['no', 'yes'][label] }}" if "label" in target else "{{ options[gold] }}"
    twin = _mc(PLAIN, choices, target, _fewshot(f"{PLAIN} {right}"))
    assert not _hits(tmp_path / "good", capsys, twin, "fewshot.wrong-answer", **data)


MMLU = [
    {"id": f"u{i}", "question": f"Which organ is number {i}?", "A": f"heart {i}", "B": f"lung {i}",
     "C": f"liver {i}", "D": f"kidney {i}", "answer": i % 4}
    for i in range(12)
]  # fmt: skip


@pytest.mark.parametrize(
    ("choices", "right"),
    [
        pytest.param("[' 1', ' 2', ' 3', ' 4']", "[' A', ' B', ' C', ' D']", id="numbers-under-letters"),
        pytest.param("[' Ａ', ' Ｂ', ' Ｃ', ' Ｄ']", "['A', 'B', 'C', 'D']", id="full-width-letters"),
    ],
)
def test_choices_not_the_listed_labels(tmp_path: Path, capsys: Any, choices: str, right: str) -> None:
    data = {"data.jsonl": jsonl_text(MMLU)}
    hits = _hits(tmp_path / "bad", capsys, _mc(LISTED, choices, "{{ answer }}"), "prompt.options-listed-wrong", **data)
    assert len(hits) == 1 and "data.jsonl, row 1" in hits[0] and "field 'choices'" in hits[0], hits
    twin = _mc(LISTED, right, "{{ answer }}")
    assert not _hits(tmp_path / "good", capsys, twin, "prompt.options-listed-wrong", **data)


# flan MMLU's form: a 'Q:'/'A:' dialogue whose options stand in parentheses on one line (FP-003 of fp14)
FLAN = "Q: {{ question }}\n(A) {{ A }} (B) {{ B }} (C) {{ C }} (D) {{ D }}\nA:"


@pytest.mark.parametrize(
    ("choices", "listed"),
    [
        pytest.param("['(A)', '(B)', '(C)', '(D)']", None, id="parenthesised-letters-inline"),
        pytest.param("[' A', ' B', ' C', ' D']", None, id="bare-letters-inline"),
        pytest.param("[' 1', ' 2', ' 3', ' 4']", "A, B, C, D", id="numbers-under-inline-letters"),
    ],
)
def test_inline_listing_in_a_cue_dialogue(tmp_path: Path, capsys: Any, choices: str, listed: str | None) -> None:
    """The labels of an inline '(A) x (B) y' listing, never the dialogue's 'Q:' and 'A:' cues: choices '(A)'..'(D)'
    are the listed labels, and ' 1'..' 4' under the same listing are still named, with the labels it lists."""
    data = {"data.jsonl": jsonl_text(MMLU)}
    hits = _hits(tmp_path, capsys, _mc(FLAN, choices, "{{ answer }}"), "prompt.options-listed-wrong", **data)
    if listed is None:
        assert not hits, hits
    else:
        assert len(hits) == 1 and f"lists the options under {listed} and" in hits[0], hits
        assert "in 12 of the 12 rows read" in hits[0], hits


@pytest.mark.parametrize(
    "question",
    [
        pytest.param("Q: {q} (3)\nA: the organ", id="cue-prefixes-and-a-stray-label"),
        # MMLU abstract algebra: numbers in parentheses inside the question, numbers as the answers (0, 4, 2, 6)
        pytest.param("Find the degree of Q(sqrt(2), sqrt(3)) over Q, {q}", id="arguments-in-parentheses"),
        pytest.param("{q} Take f(1) and f(2) first.", id="function-values"),
    ],
)
def test_cue_prefixes_and_parentheses_in_a_question_are_no_listing(tmp_path: Path, capsys: Any, question: str) -> None:
    """'Q: text' and 'A: text' lines are a dialogue's cues, a stray '(3)' is no run, and '(2)' written against a word
    ('sqrt(2)', 'f(1)') labels nothing: the prompt lists no options, so answers ' 1'..' 4' are not compared."""
    rows = [{**row, "question": question.format(q=row["question"])} for row in MMLU]
    task = _mc("{{ question }}\nA:", "[' 1', ' 2', ' 3', ' 4']", "{{ answer }}")
    assert not _hits(tmp_path, capsys, task, "prompt.options-listed-wrong", **{"data.jsonl": jsonl_text(rows)})


def test_asks_for_the_letter_scores_the_texts(tmp_path: Path, capsys: Any) -> None:
    data = {"data.jsonl": jsonl_text(MMLU)}
    asks = LISTED.replace("\nAnswer:", "\nAnswer with the letter of the correct option.\nAnswer:")
    texts = "['{{ A }}', '{{ B }}', '{{ C }}', '{{ D }}']"
    hits = _hits(tmp_path / "bad", capsys, _mc(asks, texts, "{{ answer }}"), "prompt.asks-other-form", **data)
    assert len(hits) == 1 and "t.yaml:4" in hits[0] and "field 'prompt'" in hits[0], hits
    for name, twin in (
        ("letters", _mc(asks, "[' A', ' B', ' C', ' D']", "{{ answer }}")),
        ("texts", _mc(LISTED, texts, "{{ answer }}")),
    ):
        assert not _hits(tmp_path / name, capsys, twin, "prompt.asks-other-form", **data)


ABOVE = [
    {**row, "D": "All of the above"} if i % 3 == 0 else {**row, "D": "Both A and B"} if i % 3 == 1 else row
    for i, row in enumerate(MMLU)
]
TEXTS = "['{{ A }}', '{{ B }}', '{{ C }}', '{{ D }}']"


def test_option_pointing_at_an_unseen_listing(tmp_path: Path, capsys: Any) -> None:
    data = {"data.jsonl": jsonl_text(ABOVE)}
    cloze = _mc(PLAIN, TEXTS, "{{ answer }}")
    hits = _hits(tmp_path / "bad", capsys, cloze, "choices.refers-to-listing", **data)
    assert len(hits) == 1 and "data.jsonl, row 1" in hits[0] and "field 'choices'" in hits[0], hits
    assert "8 row(s)" in hits[0]
    listed = _mc(LISTED, TEXTS, "{{ answer }}")  # the options listed under letters: what they point at is shown
    assert not _hits(tmp_path / "good", capsys, listed, "choices.refers-to-listing", **data)
    # a word whose letters spell 'C or E' without the spaces is a word (ARC-Easy's 'core', CommonsenseQA's 'bore')
    words = [{**row, "D": ["core", "bore", "dore"][i % 3]} for i, row in enumerate(MMLU)]
    assert not _hits(
        tmp_path / "words", capsys, cloze, "choices.refers-to-listing", **{"data.jsonl": jsonl_text(words)}
    )


SWAG = [
    {"id": f"s{i}", "ctx": f"A man number {i} is sitting on a roof. he",
     "endings": [f"is fixing tile {i}.", f"is eating lunch {i}.", f"is waving at us {i}."], "label": i % 3}
    for i in range(12)
]  # fmt: skip


def test_choices_that_repeat_the_prompt(tmp_path: Path, capsys: Any) -> None:
    stored = [{**r, "endings": [f"{r['ctx']} {e}" for e in r["endings"]]} for r in SWAG]
    task = _mc("{{ ctx }}", "'{{ endings }}'", "{{ label }}")
    hits = _hits(tmp_path / "bad", capsys, task, "choices.repeat-prompt", **{"data.jsonl": jsonl_text(stored)})
    assert len(hits) == 1 and "data.jsonl, row 1" in hits[0] and "field 'choices'" in hits[0], hits
    assert not _hits(tmp_path / "good", capsys, task, "choices.repeat-prompt", **{"data.jsonl": jsonl_text(SWAG)})


@pytest.mark.parametrize("kind", ["choices", "target"])
def test_continuations_that_carry_the_prompts_cue(tmp_path: Path, capsys: Any, kind: str) -> None:
    if kind == "choices":
        bad = _mc(PLAIN, "['Answer: {{ A }}', 'Answer: {{ B }}', 'Answer: {{ C }}', 'Answer: {{ D }}']", "{{ answer }}")
        good, data = _mc(PLAIN, TEXTS, "{{ answer }}"), {"data.jsonl": jsonl_text(MMLU)}
    else:
        bad = _gen(PLAIN, ["\n"]).replace("target: '{{ answer }}'", "target: 'Answer: {{ answer }}'")
        good, data = _gen(PLAIN, ["\n"]), {}
    hits = _hits(tmp_path / "bad", capsys, bad, "prompt.doubled-cue", **data)
    assert len(hits) == 1 and "data.jsonl, row 1" in hits[0] and f"field '{kind}'" in hits[0], hits
    assert not _hits(tmp_path / "good", capsys, good, "prompt.doubled-cue", **data)


def test_prespaced_choices_under_a_space_delimiter(tmp_path: Path, capsys: Any) -> None:
    data = {"data.jsonl": jsonl_text(BOOLQ)}
    task = _mc(PLAIN, "[' no', ' yes']", "{{ label }}")
    hits = _hits(tmp_path / "bad", capsys, task, "prompt.delimiter", **data)
    assert len(hits) == 1 and "t.yaml:5" in hits[0] and "field 'target_delimiter'" in hits[0], hits
    twin = task + "target_delimiter: ''\n"
    assert not _hits(tmp_path / "good", capsys, twin, "prompt.delimiter", **data)
