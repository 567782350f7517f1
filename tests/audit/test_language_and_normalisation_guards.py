"""Right tasks the audit once misread, through ``proctor validate``'s entry point, each beside the broken twin the
rule must still name: a Chinese task that joins its continuations with no space (``prompt.delimiter`` names the
space instead), references the metric keeps that a stricter normalisation emptied (an emoji alias; 'A', an
article, under a letter regex that can never read an empty answer)."""

from __future__ import annotations

import pytest
import yaml

from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast
DELIMITER, EMPTY = "prompt.delimiter", "references.empty"

COPA_ZH = [
    {
        "id": f"z{i}",
        "premise": f"男人打开了水龙头{i}。",
        "choice1": "马桶里装满了水。",
        "choice2": "水从喷口流出。",
        "label": i % 2,
    }
    for i in range(8)
]


def _task(**fields) -> str:
    task = {"name": "quiz", "data": {"path": "data.jsonl", "id": "id"}, **fields}
    return yaml.safe_dump(task, sort_keys=False, allow_unicode=True)


@pytest.mark.parametrize(("delimiter", "named"), [("", False), (" ", True)])
def test_a_chinese_task_is_joined_without_a_space_and_a_space_is_named(delimiter, named, tmp_path, capsys):
    task = _task(
        kind="multiple_choice",
        prompt="{{ premise[:-1] }}，所以",
        choices=["{{ choice1 }}", "{{ choice2 }}"],
        target="{{ label }}",
        target_delimiter=delimiter,
    )
    lines = audit_lines(tmp_path, {"t.yaml": task, "data.jsonl": jsonl_text(COPA_ZH)}, capsys)
    found = [x for x in lines if f"[{DELIMITER}]" in x]
    assert bool(found) is named, lines
    if named:
        assert "written without spaces" in found[0] and "field 'target_delimiter'" in found[0], found[0]


@pytest.mark.parametrize(("aliases", "named"), [(["🐎", "Horse"], False), (["...", "Horse"], True)])
def test_a_reference_the_metric_keeps_is_not_empty(aliases, named, tmp_path, capsys):
    rows = [{"id": f"t{i}", "question": f"What animal is number {i}?", "aliases": aliases} for i in range(6)]
    task = _task(kind="generate", prompt="Q: {{ question }}\nA:", target="{{ aliases }}", generation={"stop": ["\n"]})
    lines = audit_lines(tmp_path, {"t.yaml": task, "data.jsonl": jsonl_text(rows)}, capsys)
    assert any(f"[{EMPTY}]" in x for x in lines) is named, lines


@pytest.mark.parametrize(("regex", "named"), [(r"\b([A-D])\b", False), (r"([A-D]?)", True)])
def test_letter_references_under_a_regex_that_never_reads_empty_are_not_empty(regex, named, tmp_path, capsys):
    rows = [
        {"id": f"m{i}", "question": f"Question {i}?\nA. x\nB. y\nC. z\nD. w", "answer": "ABCD"[i % 4]} for i in range(8)
    ]
    task = _task(
        kind="generate",
        prompt="{{ question }}\nAnswer:",
        target="{{ answer }}",
        generation={"stop": ["\n"], "max_tokens": 4},
        extraction={"regex": regex, "fallback": "none"},
    )
    lines = audit_lines(tmp_path, {"t.yaml": task, "data.jsonl": jsonl_text(rows)}, capsys)
    assert any(f"[{EMPTY}]" in x for x in lines) is named, lines
