"""Labels the model's own picks say are misaligned (runs/label_alignment.py): an inverted 0/1 map, indices one
choice off, a labels file one row off. Red team 9's 007 (a labels file rotated by one line) and 101 (BoolQ's
0 = no against choices listed ['yes', 'no']) ended as plausible numbers with no word."""

from __future__ import annotations

import json
import random

import pytest

from proctor.runs.label_alignment import INVERTED, NEXT, PREVIOUS, PREVIOUS_ROW, misaligned_labels
from tests.support.cli_runs import REPO, jsonl, run_proctor, write


def _records(n, k, accuracy, *, shift=0, row_shift=False, first_pick=0.0, seed=1):
    """``n`` rows of ``k`` choices: a model right on ``accuracy`` of them (its errors spread over the other
    choices, or on choice 0 for ``first_pick`` of all rows), the labels written ``shift`` choices later, or each
    row given the next row's label."""
    rng = random.Random(seed)
    golds = [rng.randrange(k) for _ in range(n)]
    picks = []
    for gold in golds:
        if rng.random() < first_pick:
            picks.append(0)
        elif rng.random() < accuracy:
            picks.append(gold)
        else:
            picks.append(rng.choice([c for c in range(k) if c != gold]))
    labels = [(g + shift) % k for g in golds]
    if row_shift:
        labels = labels[1:] + labels[:1]
    return [{"choices": [f"c{c}" for c in range(k)], "target": t, "prediction": p} for t, p in zip(labels, picks)]


@pytest.mark.fast
@pytest.mark.parametrize(
    "records, reading",
    [
        (_records(300, 2, 0.8, shift=1), INVERTED),
        (_records(300, 4, 0.6, shift=1), PREVIOUS),  # written one later: the right reading is one earlier
        (_records(300, 4, 0.45, shift=3), NEXT),
        (_records(300, 4, 0.6, row_shift=True), PREVIOUS_ROW),
        (_records(20000, 4, 0.5, shift=1), PREVIOUS),  # past 1,000 discordant rows: the normal approximation
    ],
)
def test_labels_another_reading_makes_far_more_often_right_are_named(records, reading):
    said = misaligned_labels(records)
    assert said is not None and reading in said, said


@pytest.mark.fast
@pytest.mark.parametrize(
    "records",
    [
        _records(300, 4, 0.6),  # a decent model, labels right
        _records(300, 4, 0.25),  # a model at chance: shifts win and lose alike
        _records(3000, 2, 0.55),
        _records(20000, 4, 0.3),
        _records(300, 2, 0.6, shift=1),  # inverted, but a weak model: 0.4 against 0.6 is not twice the wins
        _records(300, 2, 0.5, first_pick=0.85),  # one position nearly always: its hits follow the labels' spread
        _records(20, 2, 0.9, shift=1),  # too few rows to make the case
    ],
)
def test_right_labels_weak_models_and_constant_picks_are_silent(records):
    assert misaligned_labels(records) is None


@pytest.mark.fast
def test_rows_that_are_not_one_answer_multiple_choice_are_left_out():
    records = _records(300, 2, 0.8, shift=1)
    assert misaligned_labels(records) is not None
    for r in records:
        r["target"] = [0, 1]  # several right choices: no one label to shift
    assert misaligned_labels(records) is None
    assert misaligned_labels([{"generation": "Paris", "target": "Paris"}] * 100) is None


TASK = """\
name: capitals
kind: multiple_choice
data: {path: rows.jsonl, id: id}
prompt: "Q: {{ question }}\\nA:"
choices: "{{ options }}"
target: "{{ label }}"
metrics: [acc]
"""

# a --plugin backend: tests.support.fakes.FakeModel that knows the right answer (a choice written '*...')
PLUGIN = """\
import sys
sys.path.insert(0, {repo!r})
from tests.support.fakes import FakeModel


def register(registry):
    registry.add_model_backend("knows", lambda rest, **options: FakeModel(rest, prefer_gold=60.0))
"""


def _run(tmp_path, name, label_of):
    """40 two-choice rows whose right answer (marked '*', which the model picks) sits at a random place;
    ``label_of(place)`` is the label the file gives."""
    rng = random.Random(7)
    rows = []
    for i in range(40):
        place = rng.randrange(2)
        options = ["wrong answer"] * 2
        options[place] = "*right answer"
        rows.append({"id": f"q{i}", "question": f"question {i}?", "options": options, "label": label_of(place)})
    folder = tmp_path / name
    write(folder / "task.yaml", TASK)
    jsonl(folder / "rows.jsonl", rows)
    write(folder / "knows.py", PLUGIN.format(repo=str(REPO)))
    done = run_proctor("run", "task.yaml", "--plugin", "knows.py", "--model", "knows:m", "-o", "out", cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((folder / "out" / "results.json").read_text())["tasks"]["capitals"]
    return results["metrics"]["acc"]["value"], results.get("warnings") or [], done.stdout + done.stderr


def test_an_inverted_label_map_is_said_on_the_console_and_in_results(tmp_path):
    """Through the command: labels 0/1 against choices listed the other way (BoolQ's trap): acc 0.0, and the
    warning gives the number the other reading would have (40 of 40); the right map gives 1.0 and no word."""
    value, warnings, said = _run(tmp_path, "inverted", lambda place: 1 - place)
    assert value == 0.0
    [warning] = [w for w in warnings if "the model's picks match" in w]
    assert "match 0 of 40 labels (0.00), but 40 (1.00) if each label named the other of the two" in warning
    assert "the model's picks match 0 of 40 labels" in said
    value, warnings, said = _run(tmp_path, "right", lambda place: place)
    assert value == 1.0 and not [w for w in warnings if "the model's picks" in w]
    assert "the model's picks" not in said
