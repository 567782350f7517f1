"""``choices.gold-form`` skips a form when one search of the probed choices, joined, finds no choice with it
(``form_rules._MAY_HAVE``, for speed: issue 45); the search must find every choice that has the form, or the rule
would miss an odd one."""

from __future__ import annotations

import random

import pytest

from proctor.audit.form_rules import _MAY_HAVE, FORMS

pytestmark = pytest.mark.fast

PARTS = ["a", "Paris", " ", "\t", "\r", "\n", "\x1c", "\xa0", "\u3000", ".", "!", ";", ":", ",", "?", "\x7f", "\x01"]


@pytest.mark.parametrize("seed", range(200))
def test_the_search_finds_each_choice_with_the_form(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(20):
        choices = ["".join(rng.choice(PARTS) for _ in range(rng.randrange(4))) for _ in range(rng.randrange(1, 5))]
        joined = "\x00".join(choices)
        for (form, has), may_have in zip(FORMS, _MAY_HAVE):
            for choice in choices:
                if has(choice):
                    assert may_have.search(joined) is not None, (form, choices)
                alone = may_have.search(choice) is not None
                assert alone == has(choice), (form, choice)  # one choice alone: the search is the form


def test_a_right_choice_that_alone_lacks_the_form_is_said_so(tmp_path, capsys):
    """Every distractor ends with a full stop and the right answer does not (a red-team probe, whose message said
    the opposite): the finding says every choice but the right one has the form."""
    import json

    from proctor.cli import main

    rows = [
        {
            "id": f"r{i}",
            "q": f"Question {i}?",
            "options": [f"Distractor {i} one.", f"Right answer {i}", f"Distractor {i} two.", f"Distractor {i} three."],
            "label": 1,
        }
        for i in range(12)
    ]
    for row, order in zip(rows, [0, 1, 2, 3] * 3):  # the right answer at every position in turn
        right = row["options"].pop(1)
        row["options"].insert(order, right)
        row["label"] = order
    (tmp_path / "t.yaml").write_text(
        'name: q\nkind: multiple_choice\ndata: {path: data.jsonl, id: id}\nprompt: "{{ q }}"\n'
        'choices: "{{ options }}"\ntarget: "{{ label }}"\n'
    )
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    try:
        main(["validate", str(tmp_path / "t.yaml")])
    except SystemExit as exc:
        assert not exc.code
    out = capsys.readouterr()
    (line,) = [line for line in (out.out + out.err).splitlines() if "[choices.gold-form]" in line]
    assert "every choice but the right one ends with punctuation" in line and "12 of the 12" in line, line
