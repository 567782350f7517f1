"""Right tasks the audit once misread, and missing values read back as text (``data.missing-as-text``), through
``proctor validate``'s entry point, each beside the broken twin the rule must still name: a Chinese task that joins
its continuations with no space (``prompt.delimiter`` names the space instead), references the metric keeps that a
stricter normalisation emptied (an emoji alias; 'A', an article, under a letter regex that can never read an empty
answer), a passage or reference that is 'nan'."""

from __future__ import annotations

import pytest
import yaml

from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast
DELIMITER, EMPTY, MISSING, CLUSTERS = (
    "prompt.delimiter",
    "references.empty",
    "data.missing-as-text",
    "stats.few-clusters",
)

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


THAI = [
    {"id": f"t{i}", "q": f"เมืองหลวงของประเทศไทย {i}", "choices": ["กรุงเทพ", "เชียงใหม่"], "label": 0} for i in range(6)
]


@pytest.mark.parametrize(("cue", "named"), [("คำตอบ:", False), ("Answer:", True)])
def test_a_cue_ending_in_a_colon_after_a_script_without_spaces_is_joined_without_one(cue, named, tmp_path, capsys):
    """'คำตอบ:' (Thai, 'answer:') then Thai choices with target_delimiter '': what prompt.delimiter advises for a
    script without spaces, warned as 'glued' because the prompt's last character is a colon (red team 13, 414). The
    script is read from the cue's last letter; an English cue before Thai choices is still glued."""
    task = _task(
        kind="multiple_choice",
        prompt="คำถาม: {{ q }} " + cue,
        choices="{{ choices }}",
        target="{{ label }}",
        target_delimiter="",
    )
    lines = audit_lines(tmp_path, {"t.yaml": task, "data.jsonl": jsonl_text(THAI)}, capsys)
    assert any(f"[{DELIMITER}]" in x for x in lines) is named, lines


@pytest.mark.parametrize(("aliases", "named"), [(["🐎", "Horse"], False), (["...", "Horse"], True)])
def test_a_reference_the_metric_keeps_is_not_empty(aliases, named, tmp_path, capsys):
    rows = [{"id": f"t{i}", "question": f"What animal is number {i}?", "aliases": aliases} for i in range(6)]
    task = _task(kind="generate", prompt="Q: {{ question }}\nA:", target="{{ aliases }}", generation={"stop": ["\n"]})
    lines = audit_lines(tmp_path, {"t.yaml": task, "data.jsonl": jsonl_text(rows)}, capsys)
    assert any(f"[{EMPTY}]" in x for x in lines) is named, lines


@pytest.mark.parametrize(("regex", "named"), [(r"\b([A-D])\b", False), (r"([A-D]?)", True), (r"^\s*([^\n]+)", True)])
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


PASSAGES = [
    {
        "id": f"b{i}",
        "passage": f"The river number {i} flows north through the long valley.",
        "question": f"Is {i} big?",
        "label": i % 2,
    }
    for i in range(8)
]


@pytest.mark.parametrize(("missing", "named"), [("nan", True), ("None", True), (None, False)])
def test_a_passage_read_back_as_nan_or_none_is_named(missing, named, tmp_path, capsys):
    rows = [{**r, "passage": missing} if i in (2, 5) and missing else r for i, r in enumerate(PASSAGES)]
    task = _task(
        kind="multiple_choice",
        prompt="{{ passage }}\nQuestion: {{ question }}?\nAnswer:",
        choices=["no", "yes"],
        target="{{ label }}",
    )
    lines = audit_lines(tmp_path, {"t.yaml": task, "data.jsonl": jsonl_text(rows)}, capsys)
    found = [x for x in lines if f"[{MISSING}]" in x]
    assert bool(found) is named, lines
    if named:
        assert "data.jsonl, row 3" in found[0] and "field 'passage'" in found[0] and "in 2 of the 8 rows" in found[0]


@pytest.mark.parametrize(("answer", "named"), [("nan", True), ("None", False)])
def test_a_reference_read_back_as_nan_is_named_and_none_as_a_short_answer_is_not(answer, named, tmp_path, capsys):
    rows = [
        {"id": f"q{i}", "question": f"How many moons has planet {i}?", "answer": answer if i == 3 else "two"}
        for i in range(6)
    ]
    task = _task(kind="generate", prompt="Q: {{ question }}\nA:", target="{{ answer }}", generation={"stop": ["\n"]})
    lines = audit_lines(tmp_path, {"t.yaml": task, "data.jsonl": jsonl_text(rows)}, capsys)
    found = [x for x in lines if f"[{MISSING}]" in x]
    assert bool(found) is named, lines
    if named:
        assert "data.jsonl, row 4" in found[0] and "field 'target'" in found[0], found[0]


@pytest.mark.parametrize(
    ("labels", "named"), [(["Positif", "Negatif", "Netral"], True), (["Positip", "Negatip", "Netral"], False)]
)
def test_labels_spelled_one_letter_off_the_offered_ones_are_named(labels, named, tmp_path, capsys):
    rows = [{"id": f"s{i}", "text": f"Ulasan nomer {i} ngeunaan hotél.", "label": labels[i % 3]} for i in range(9)]
    task = _task(
        kind="generate",
        prompt="Jawab ku Positip, Negatip, atawa Netral.\nKalimat: {{ text }}\nJawaban:",
        target="{{ label }}",
        generation={"stop": ["\n"]},
    )
    lines = audit_lines(tmp_path, {"t.yaml": task, "data.jsonl": jsonl_text(rows)}, capsys)
    found = [x for x in lines if "[target.not-a-choice]" in x]
    assert bool(found) is named, lines
    if named:
        assert "one letter off 'positip'" in found[0] and "in 6 of 9 rows" in found[0] and "field 'target'" in found[0]


@pytest.mark.parametrize(("groups", "named"), [(1, True), (3, True), (8, False)])
def test_a_cluster_field_with_a_handful_of_values_is_named(groups, named, tmp_path, capsys):
    rows = [{**r, "passage_id": f"p{i % groups}"} for i, r in enumerate(PASSAGES * 2)]
    rows = [{**r, "id": f"r{i}", "question": f"Is {i} big?"} for i, r in enumerate(rows)]
    task = _task(
        kind="multiple_choice",
        prompt="{{ passage }}\nQuestion: {{ question }}?\nAnswer:",
        choices=["no", "yes"],
        target="{{ label }}",
        cluster="passage_id",
    )
    lines = audit_lines(tmp_path, {"t.yaml": task, "data.jsonl": jsonl_text(rows)}, capsys)
    found = [x for x in lines if f"[{CLUSTERS}]" in x]
    assert bool(found) is named, lines
    if named:
        assert "field 'cluster'" in found[0] and "t.yaml:" in found[0], found[0]
