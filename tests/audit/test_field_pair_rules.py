"""Two fields that should differ or agree, and a label spelled two ways, through ``proctor validate``'s entry point:
SEA-HELM's real paraphrase task (Burmese, ``label`` beside ``text_label``, ``sentence1`` and ``sentence2``) with one
row's label flipped, sentence2 copied from sentence1, a label written with a trailing space; and native twins of the
first two. Each finding names its rule, file, row and field; the unchanged data is silent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable

import pytest

from tests.conftest import shared_path
from tests.support.validate_lines import validate_output as _validate

pytestmark = pytest.mark.fast

PARAPHRASE = Path("seahelm_tasks", "nlu", "paraphrase_identification")
DATA = PARAPHRASE / "data" / "my_myparaphrase.jsonl"
RULES = ("data.fields-identical", "labels.inconsistent-mapping", "target.not-a-choice")


def _paraphrase(root: Path, change: Callable[[list[dict]], None]) -> Path:
    source = shared_path("examples", "seahelm", str(PARAPHRASE))
    shutil.copytree(source, root / PARAPHRASE)
    rows = [json.loads(line) for line in (root / DATA).read_text(encoding="utf-8").splitlines()]
    change(rows)
    (root / DATA).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return root / PARAPHRASE


def _flip(rows: list[dict]) -> None:
    row = next(r for r in rows[5:] if r["text_label"] == "non-paraphrase")
    row["label"] = next(r["label"] for r in rows if r["text_label"] == "paraphrase")


def _copy_sentence(rows: list[dict]) -> None:
    for row in rows:
        row["prompts"][0]["sentence2"] = row["prompts"][0]["sentence1"]


def _space(rows: list[dict]) -> None:
    rows[2]["label"] += " "


def _found(text: str, rule: str) -> str:
    found = [line for line in text.splitlines() if f"[{rule}]" in line]
    assert found, text
    return found[0]


@pytest.mark.parametrize(
    "change, rule, place",
    [
        (_flip, "labels.inconsistent-mapping", "field 'label'"),
        (_copy_sentence, "data.fields-identical", "row 1, field 'sentence2'"),
        (_space, "target.not-a-choice", "row 3, field 'label'"),
    ],
    ids=["label flipped", "sentence copied", "label with a space"],
)
def test_seahelm_rows_are_named_by_rule_file_row_and_field(change, rule, place, tmp_path, capsys):
    found = _found(_validate([str(_paraphrase(tmp_path, change))], capsys), rule)
    assert "my_myparaphrase.jsonl" in found and place in found, found


def test_the_flipped_row_is_the_one_named(tmp_path, capsys):
    rows_seen: list[dict] = []

    def flip(rows: list[dict]) -> None:
        _flip(rows)
        rows_seen.extend(rows)

    found = _found(_validate([str(_paraphrase(tmp_path, flip))], capsys), "labels.inconsistent-mapping")
    flipped = next(
        i
        for i, r in enumerate(rows_seen, 1)
        if r["text_label"] == "non-paraphrase" and r["label"] != rows_seen[0]["label"]
    )
    assert f"row {flipped}," in found, found


def test_the_real_paraphrase_task_is_silent(tmp_path, capsys):
    text = _validate([str(_paraphrase(tmp_path, lambda rows: None))], capsys)
    assert not any(f"[{rule}]" in text for rule in RULES), text


NATIVE = """\
name: nli
kind: multiple_choice
data: {{path: data.jsonl, id: id}}
prompt: "Premise: {{{{ premise }}}}\\nHypothesis: {{{{ hypothesis }}}}\\nEntailed?"
choices: [entailment, contradiction]
target: "{{{{ label }}}}"
"""
PAIRS = [
    ("A man plays a guitar.", "A person makes music."),
    ("Two dogs run in a park.", "Animals are outside."),
    ("A child reads a book.", "Nobody is reading."),
    ("The shop is closed.", "The shop is open."),
    ("A woman cooks dinner.", "Food is being made."),
    ("It is raining hard.", "The weather is dry."),
]


def _native(folder: Path, copy: bool = False, flip: bool = False) -> Path:
    folder.mkdir()
    rows = []
    for i, (premise, hypothesis) in enumerate(PAIRS):
        label = i // 2 % 2
        rows.append(
            {
                "id": f"n{i}",
                "premise": premise,
                "hypothesis": premise if copy else hypothesis,
                "label": 1 - label if flip and i == 4 else label,
                "label_text": ["entailment", "contradiction"][label],
            }
        )
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "task.yaml").write_text(NATIVE.format())
    return folder / "task.yaml"


def test_native_twins(tmp_path, capsys):
    found = _found(_validate([str(_native(tmp_path / "copied", copy=True))], capsys), "data.fields-identical")
    assert "data.jsonl, row 1, field 'premise'" in found or "field 'hypothesis'" in found, found
    found = _found(_validate([str(_native(tmp_path / "flipped", flip=True))], capsys), "labels.inconsistent-mapping")
    assert "data.jsonl, row 5, field 'label'" in found, found
    quiet = _validate([str(_native(tmp_path / "right"))], capsys)
    assert not any(f"[{rule}]" in quiet for rule in RULES), quiet
