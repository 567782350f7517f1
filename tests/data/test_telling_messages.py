"""Errors that say what is wrong, not only that something is, through ``proctor validate``'s entry point: a
multiple-choice target that is a choice in another Unicode form, case or spacing (red team 13, 404, 420), and a JSON
file in the other layout or with old Mac line ends (205, 277, 278)."""

from __future__ import annotations

import json

import pytest

from proctor.cli import main

TASK = (
    "name: t\nkind: multiple_choice\ndata: {path: d.jsonl}\nprompt: '{{ q }}'\nchoices: '{{ c }}'\ntarget: '{{ a }}'\n"
)


@pytest.mark.parametrize(
    ("choices", "answer", "said"),
    [
        (["tea", "caf\u00e9", "coffee"], "cafe\u0301", "choice 1 ('café') in another Unicode form"),  # decomposed
        (["\uff21", "\uff22", "\uff23"], "A", "choice 0 ('Ａ') in another Unicode form"),  # full width
        (["Tea", "Coffee"], "coffee ", "choice 1 ('Coffee') in another case or spacing"),
        (["tea", "coffee"], "milk", None),  # no choice: nothing more to say
    ],
)
def test_a_target_in_another_form_of_a_choice_is_named(choices, answer, said, tmp_path, capsys):
    (tmp_path / "t.yaml").write_text(TASK)
    row = {"q": "Which drink?", "c": choices, "a": answer}
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(row) + "\n" for _ in range(3)))
    with pytest.raises(SystemExit) as exited:
        main(["validate", str(tmp_path / "t.yaml")])
    out = capsys.readouterr()
    text = " ".join((out.out + out.err).split())
    assert exited.value.code, text
    assert "neither a choice index nor one of the choices" in text and "row 1" in text, text
    assert (said in text) if said else (" in another " not in text), text


@pytest.mark.parametrize(
    ("name", "data", "said"),
    [
        ("d.jsonl", '{"q": "a"}\r{"q": "b"}\r{"q": "c"}\r', "carriage returns only"),  # red team 13, 205
        ("d.jsonl", '[\n  {"q": "a"},\n  {"q": "b"}\n]\n', "name it .json (or set format: json)"),  # 277
        ("d.jsonl", '[{"q": "a"}, {"q": "b"}]\n', "one JSON array (a .json file's layout)"),
        ("d.json", '{"q": "a"}\n{"q": "b"}\n', "name it .jsonl (or set format: jsonl)"),  # 278
    ],
)
def test_a_json_file_in_the_other_layout_says_which(name, data, said, tmp_path, capsys):
    task = "name: t\nkind: generate\ndata: {path: %s}\nprompt: '{{ q }}'\ntarget: '{{ q }}'\n" % name
    (tmp_path / "t.yaml").write_text(task)
    (tmp_path / name).write_bytes(data.encode())
    with pytest.raises(SystemExit) as exited:
        main(["validate", str(tmp_path / "t.yaml")])
    out = capsys.readouterr()
    text = " ".join((out.out + out.err).split())
    assert exited.value.code and said in text and name in text, text
