"""Choices and data files whose surface form decides or corrupts the answer, through ``proctor validate``'s entry
point: a right choice told apart by a mark, quotes, its case or a word of its own (``choices.gold-form``), choices
that carry their option number ('1) ', ``choices.letter-prefixed``), values a spreadsheet made dates ('2-Jan',
``text.damaged``), rows whose options were sorted after labelling (``target.index-after-transform``) and a TSV
field whose opening quote a CSV reader takes for quoting (``data.quote-open``). Each finding names its rule, file,
row or line and field; each has a right twin that stays silent."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from tests.support.audit_inputs import LETTERED_PROMPT, PLAIN_OPTIONS
from tests.support.cli_runs import choice_task, generate_task
from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast

GOLD_FORM = "choices.gold-form"
PREFIXED = "choices.letter-prefixed"
DAMAGED = "text.damaged"
SORTED = "target.index-after-transform"
QUOTE = "data.quote-open"

MC_TASK = choice_task("quiz", "{{ q }}\nAnswer:", "{{ options }}", metrics=None)


def _rows(mark: Callable[[str], str] = lambda c: c, words: list[list[str]] = PLAIN_OPTIONS) -> list[dict[str, Any]]:
    """The quiz, its right answer at every position in turn, ``mark`` applied to the right choice alone."""
    rows = []
    for i, options in enumerate(words):
        label = i % 4
        options = [mark(o) if k == label else o for k, o in enumerate(options)]
        rows.append({"id": f"q{i}", "q": f"Question {i}?", "options": options, "label": label})
    return rows


def _lines(folder: Path, capsys: Any, rule: str, files: dict[str, str]) -> list[str]:
    return [line for line in audit_lines(folder, files, capsys) if f"[{rule}]" in line]


@pytest.mark.parametrize(
    ("mark", "says"),
    [
        (lambda c: "*" + c, "begins with a mark"),  # a quiz export's star
        (lambda c: "✓ " + c, "begins with a mark"),
        (lambda c: c + " (correct)", "ends with a mark or a note in brackets"),
        (lambda c: f'"{c}"', "is in quotes"),
        (lambda c: c[:1].upper() + c[1:], "begins with a capital letter"),  # OpenBookQA's annotation artefact
        (lambda c: c.upper(), "is written in capitals"),
    ],
)
def test_a_right_choice_told_apart_by_its_form_is_named(tmp_path, capsys, mark, says):
    (line,) = _lines(tmp_path, capsys, GOLD_FORM, {"t.yaml": MC_TASK, "data.jsonl": jsonl_text(_rows(mark))})
    assert "data.jsonl, row 1," in line and "field 'options'" in line and says in line, line


def test_a_word_only_the_right_choice_has_is_named(tmp_path, capsys):
    """'Answer: ...' before the right choice alone, every choice capitalised (its case tells nothing)."""
    words = [[w[:1].upper() + w[1:] for w in row] for row in PLAIN_OPTIONS]
    rows = _rows(lambda c: "Answer: " + c, words)
    (line,) = _lines(tmp_path, capsys, GOLD_FORM, {"t.yaml": MC_TASK, "data.jsonl": jsonl_text(rows)})
    assert "data.jsonl, row 1," in line and "field 'options'" in line and "begins with 'Answer:'" in line, line


def test_plain_choices_and_a_capital_at_random_are_silent(tmp_path, capsys):
    assert not _lines(tmp_path / "plain", capsys, GOLD_FORM, {"t.yaml": MC_TASK, "data.jsonl": jsonl_text(_rows())})
    # a proper name here and there, as real data has: capitalised, but the right answer no more than chance says
    rows = _rows()
    for i, row in enumerate(rows):
        k = (i * 3 + 1) % 4
        row["options"][k] = row["options"][k].title()
    assert not _lines(tmp_path / "names", capsys, GOLD_FORM, {"t.yaml": MC_TASK, "data.jsonl": jsonl_text(rows)})


def _odd_rows(total: int, width: int, odd: int, on_gold: int) -> list[dict[str, Any]]:
    """``total`` rows of ``width`` plain choices, the right one at every position in turn; in the first ``odd`` rows
    one choice alone ends with a full stop: the right one in the first ``on_gold`` of them, else the next one."""
    rows = []
    for i in range(total):
        label = i % width
        options = [f"option {i} {chr(97 + k)}" for k in range(width)]
        if i < odd:
            k = label if i < on_gold else (label + 1) % width
            options[k] += "."
        rows.append({"id": f"q{i}", "q": f"Question {i}?", "options": options, "label": label})
    return rows


@pytest.mark.parametrize(
    ("total", "width", "odd", "on_gold", "named"),
    [
        # fp14 FP-007 (MMLU anatomy): 5 odd rows of 135, all the gold, is real text's chance (under 10 rows, 5%)
        pytest.param(135, 4, 5, 5, False, id="five-odd-rows-of-135"),
        pytest.param(135, 4, 12, 12, True, id="twelve-odd-rows-of-135"),
        pytest.param(8, 4, 5, 5, True, id="most-of-a-small-task"),
        # 8 of 10 on the gold of 3 choices: p = 0.0034, under 0.02 but not once the nine forms tried share it
        pytest.param(200, 3, 10, 8, False, id="chance-over-the-forms-tried"),
        pytest.param(200, 3, 10, 10, True, id="ten-of-ten-of-three"),
    ],
)
def test_a_few_odd_rows_are_not_an_artefact(tmp_path, capsys, total, width, odd, on_gold, named):
    rows = _odd_rows(total, width, odd, on_gold)
    found = _lines(tmp_path, capsys, GOLD_FORM, {"t.yaml": MC_TASK, "data.jsonl": jsonl_text(rows)})
    assert len(found) == int(named), found
    if named:
        assert f"('option 0 a.') in {on_gold} of the {odd} probed rows" in found[0], found
        assert "data.jsonl, row 1," in found[0] and "field 'options'" in found[0], found


LISTING_TASK = MC_TASK.replace('"{{ q }}\\nAnswer:"', '"{{ q }}\\n{% for o in options %}{{ o }}\\n{% endfor %}Answer:"')


def test_choices_that_carry_their_option_number_are_named(tmp_path, capsys):
    rows = [{**r, "options": [f"{k + 1}) {o}" for k, o in enumerate(r["options"])]} for r in _rows()]
    (line,) = _lines(tmp_path / "broken", capsys, PREFIXED, {"t.yaml": MC_TASK, "data.jsonl": jsonl_text(rows)})
    assert "data.jsonl, row 1," in line and "field 'choices'" in line and "option number" in line, line
    # the prompt lists the numbered options: the choice names the one picked, number and all
    listed = {"t.yaml": LISTING_TASK, "data.jsonl": jsonl_text(rows)}
    assert not _lines(tmp_path / "listed", capsys, PREFIXED, listed)


@pytest.mark.parametrize(
    "options", [["1:2", "2:3", "3:4", "4:5"], ["1.5", "2.5", "3.5", "4.5"], ["1. 5 m", "2 m", "3 m", "4 m"]]
)
def test_numbers_ratios_and_decimals_are_not_option_numbers(tmp_path, capsys, options):
    rows = [{"id": f"q{i}", "q": f"Question {i}?", "options": options, "label": i % 4} for i in range(8)]
    assert not _lines(tmp_path, capsys, PREFIXED, {"t.yaml": MC_TASK, "data.jsonl": jsonl_text(rows)})


CSV_TASK = choice_task(
    "hours", "{{ question }}\nAnswer:", ["{{ a }}", "{{ b }}", "{{ c }}", "{{ d }}"], metrics=None, data="data.csv"
)


def _csv(first: str) -> str:
    lines = ["question,a,b,c,d,label"]
    lines += [f"How many hours are in {n} days?,{n * 24},{n * 24 + 1},{first},{n * 12},0" for n in range(2, 8)]
    return "\n".join(lines) + "\n"


def test_a_choice_a_spreadsheet_made_a_date_is_named(tmp_path, capsys):
    (line,) = _lines(tmp_path / "broken", capsys, DAMAGED, {"t.yaml": CSV_TASK, "data.csv": _csv("2-Jan")})
    assert "data.csv, row 2," in line and "field 'c'" in line and "'2-Jan'" in line, line
    assert not _lines(tmp_path / "right", capsys, DAMAGED, {"t.yaml": CSV_TASK, "data.csv": _csv("1-2")})
    # a date in words is an answer, not a spreadsheet's doing
    assert not _lines(tmp_path / "words", capsys, DAMAGED, {"t.yaml": CSV_TASK, "data.csv": _csv("January 2")})


GEN_TASK = generate_task("when", "data.jsonl", "{{ q }}\nAnswer:", "{{ answer }}", 16, metrics=None, stop=None)


def test_a_reference_read_back_as_a_midnight_timestamp_is_named(tmp_path, capsys):
    rows = [{"id": f"g{i}", "q": f"What is {i} over {i + 1}?", "answer": f"{i}/{i + 1}"} for i in range(1, 6)]
    rows[2]["answer"] = "2001-03-04 00:00:00"  # '3/4' read as a date through pandas
    (line,) = _lines(tmp_path / "broken", capsys, DAMAGED, {"t.yaml": GEN_TASK, "data.jsonl": jsonl_text(rows)})
    assert "data.jsonl, row 3," in line and "field 'answer'" in line and "00:00:00" in line, line
    rows[2]["answer"] = "3/4"
    assert not _lines(tmp_path / "right", capsys, DAMAGED, {"t.yaml": GEN_TASK, "data.jsonl": jsonl_text(rows)})


def _sorted_rows(extra: Callable[[list[str], int], dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Twenty rows whose options were sorted after labelling (the label kept at every position in turn)."""
    rows = []
    for i in range(20):
        options = sorted(PLAIN_OPTIONS[i % len(PLAIN_OPTIONS)], key=str.casefold)
        options = [f"{o} {i}" if k == 0 else o for k, o in enumerate(options)]  # rows of their own
        row = {"id": f"s{i}", "q": f"Question {i}?", "options": options, "label": i % 4}
        rows.append({**row, **(extra(options, i % 4) if extra else {})})
    return rows


def test_options_sorted_in_every_row_are_named(tmp_path, capsys):
    rows = _sorted_rows()
    (line,) = _lines(tmp_path, capsys, SORTED, {"t.yaml": MC_TASK, "data.jsonl": jsonl_text(rows)})
    assert "data.jsonl, row 1," in line and "field 'options'" in line and "alphabetical order in 20" in line, line


def test_unsorted_options_numbers_and_a_kept_answer_text_are_silent(tmp_path, capsys):
    files = {"t.yaml": MC_TASK, "data.jsonl": jsonl_text(_rows())}
    assert not _lines(tmp_path / "plain", capsys, SORTED, files)
    numbers = [
        {"id": f"n{i}", "q": f"What is {i} + {i}?", "options": [str(i), str(2 * i), str(3 * i), str(4 * i)], "label": 1}
        for i in range(1, 21)
    ]
    assert not _lines(tmp_path / "numbers", capsys, SORTED, {"t.yaml": MC_TASK, "data.jsonl": jsonl_text(numbers)})
    # the rows hold their answer text, which the gold names: labelled after the sort
    kept = _sorted_rows(lambda options, label: {"answer_text": options[label]})
    assert not _lines(tmp_path / "kept", capsys, SORTED, {"t.yaml": MC_TASK, "data.jsonl": jsonl_text(kept)})
    # one label set listed in every row, alphabetical as it happens (a "choices column per row" NLI layout)
    labels = ["contradiction", "entailment", "neutral"]
    nli = [{"id": f"p{i}", "q": f"Premise {i}. Hypothesis {i}?", "options": labels, "label": i % 3} for i in range(60)]
    assert not _lines(tmp_path / "nli", capsys, SORTED, {"t.yaml": MC_TASK, "data.jsonl": jsonl_text(nli)})


TSV_TASK = choice_task(
    "anatomy",
    LETTERED_PROMPT,
    [" A", " B", " C", " D"],
    "{{ 'ABCD'.index(answer) }}",
    metrics=None,
    data="{path: data.tsv, columns: [question, A, B, C, D, answer], format: tsv}",
)
TSV_ROWS = [
    'A "dished face" profile is often associated with\tmandible\tmaxilla\tfrontal bone\tair sinus\tB',
    "Which organ collects urine?\tBladder\tKidney\tUreter\tUrethra\tA",
    '"Ligament" is a term for which structure?\tBone to bone\tMuscle to bone\tNerve\tVessel\tA',
    "Which cells are derived from ectomesenchyme?\tMotor neurons\tMuscles\tMelanocytes\tSweat glands\tC",
]


def test_a_tsv_field_whose_opening_quote_a_csv_reader_drops_is_named(tmp_path, capsys):
    files = {"t.yaml": TSV_TASK, "data.tsv": "\n".join(TSV_ROWS) + "\n"}
    (line,) = _lines(tmp_path / "broken", capsys, QUOTE, files)
    assert "data.tsv:3," in line and "field 'question'" in line and "glues the rest" in line, line
    unquoted = [r.replace('"Ligament"', "Ligament") for r in TSV_ROWS]  # quotes inside a field stay text
    files = {"t.yaml": TSV_TASK, "data.tsv": "\n".join(unquoted) + "\n"}
    assert not _lines(tmp_path / "right", capsys, QUOTE, files)


def test_a_csv_quoted_as_csv_is_silent(tmp_path, capsys):
    text = 'question,A,B,C,D,answer\n"""Ligament"" is a term for, which?",a,"b, c",d,e,A\nWhich?,a,b,c,d,B\n'
    task = TSV_TASK.replace("{path: data.tsv, columns: [question, A, B, C, D, answer], format: tsv}", "data.csv")
    assert not _lines(tmp_path, capsys, QUOTE, {"t.yaml": task, "data.csv": text})
