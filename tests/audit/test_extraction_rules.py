"""The rules over how a generated answer is read back (``audit/extraction_rules.py``) and over settings whose
escapes are written out (``audit/escape_rules.py``), through ``proctor validate``'s entry point: each finding
names its rule, the task file's line and the field, and a right twin of each task stays silent."""

from __future__ import annotations

import json
import re

import pytest

from proctor.cli import main

pytestmark = pytest.mark.fast

TASK = """\
name: capitals
kind: generate
data: {{path: data.jsonl, id: id}}
prompt: "{prompt}"
target: "{{{{ answer }}}}"
generation: {generation}
{extra}"""
ROWS = [("a", "Peru", "Lima"), ("b", "Chile", "Santiago"), ("c", "Japan", "Tokyo"), ("d", "Kenya", "Nairobi")]

# rule -> (the task, its right twin): (prompt, generation, extra lines)
CASES = {
    "settings.escaped": (
        ("Capital of {{ country }}?", "{max_tokens: 8, stop: ['\\n']}", ""),
        ("Capital of {{ country }}?", '{max_tokens: 8, stop: ["\\n"]}', ""),
    ),
    "extraction.matches-empty": (
        ("Capital of {{ country }}?", "{max_tokens: 8}", "extraction: {regex: '([A-Z]*)'}"),
        ("Capital of {{ country }}?", "{max_tokens: 8}", "extraction: {regex: '([A-Za-z]+)'}"),
    ),
    "extraction.anchored": (
        ("Capital of {{ country }}?", "{max_tokens: 8}", "extraction: {regex: '^([A-Z]\\w+)'}"),
        ("Capital of {{ country }}?", "{max_tokens: 8}", "extraction: {regex: '^\\s*([A-Z]\\w+)'}"),
    ),
    "extraction.tag-unwritten": (
        (
            "Reason, then give 'Answer:' and the city. {{ country }}?",
            "{max_tokens: 64, stop: ['Answer']}",
            "extraction: {answer_tag: 'Answer:'}",
        ),
        (
            "Reason, then give 'Answer:' and the city. {{ country }}?",
            '{max_tokens: 64, stop: ["\\n\\n"]}',
            "extraction: {answer_tag: 'Answer:'}",
        ),
    ),
}
FIELDS = {
    "settings.escaped": "generation.stop",
    "extraction.matches-empty": "extraction.regex",
    "extraction.anchored": "extraction.regex",
    "extraction.tag-unwritten": "generation.stop",
}


def _validate(folder, prompt: str, generation: str, extra: str, capsys) -> str:
    folder.mkdir()
    (folder / "capitals.yaml").write_text(TASK.format(prompt=prompt, generation=generation, extra=extra))
    (folder / "data.jsonl").write_text(
        "".join(json.dumps({"id": i, "country": c, "answer": a}) + "\n" for i, c, a in ROWS)
    )
    try:
        main(["validate", str(folder / "capitals.yaml")])
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr()
    out = capsys.readouterr()
    return out.out + out.err


@pytest.mark.parametrize("rule", sorted(CASES))
def test_each_rule_names_its_line_and_field_and_its_twin_is_silent(rule, tmp_path, capsys):
    broken, right = CASES[rule]
    text = _validate(tmp_path / "broken", *broken, capsys)
    found = [line for line in text.splitlines() if f"[{rule}]" in line]
    assert found, text
    assert re.search(rf"capitals\.yaml:\d+, field '{re.escape(FIELDS[rule])}'", found[0]), found[0]
    text = _validate(tmp_path / "right", *right, capsys)
    assert "audit [" not in text, text


def test_the_answer_tag_at_the_end_of_every_prompt_is_never_written(tmp_path, capsys):
    text = _validate(
        tmp_path / "t",
        "Capital of {{ country }}?\\nAnswer:",
        "{max_tokens: 8}",
        "extraction: {answer_tag: 'Answer:'}",
        capsys,
    )
    (line,) = [line for line in text.splitlines() if "[extraction.tag-unwritten]" in line]
    assert "field 'extraction.answer_tag'" in line and "every prompt ends with the answer tag" in line


CUTS = "extraction.cuts-reference"
SUMS = [("s1", "What is 1,000 + 1,125?", "2,125"), ("s2", "What is 3 + 0.5?", "3.5"), ("s3", "What is 4 + 4?", "8")]
RATIONALE = [("r1", "Ann has 3 apples and buys 4. How many?", "She has 3 + 4 = 7 apples.\n#### 7")]


@pytest.mark.parametrize(
    ("rows", "regex", "read"),
    [(SUMS, "(-?\\d+)", "'2' out of the reference '2,125' (2 of the 3 rows"), (RATIONALE, "#### (\\d+)", "'7' out")],
)
def test_a_regex_that_reads_part_of_the_reference_names_the_row(rows, regex, read, tmp_path, capsys):
    """The extraction read back from each reference: an integer regex cuts '2,125' and '3.5'; a '#### N' regex
    reads the number out of a worked solution given as the reference. The right twins stay silent."""
    task = (
        'name: sums\nkind: generate\ndata: {path: data.jsonl, id: id}\nprompt: "{{ question }}"\n'
        "target: \"{{ answer }}\"\ngeneration: {max_tokens: 8}\nextraction: {regex: 'REGEX'}\n"
    )
    for name, pattern, answers in (("broken", regex, None), ("right", "(-?[\\d.,]+)", None)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "t.yaml").write_text(task.replace("REGEX", pattern))
        (folder / "data.jsonl").write_text(
            "".join(json.dumps({"id": i, "question": q, "answer": answers or a}) + "\n" for i, q, a in rows)
        )
        if name == "right" and rows is RATIONALE:  # the reference is the final number the regex captures
            rows_right = [(i, q, a.split("#### ")[-1]) for i, q, a in rows]
            (folder / "t.yaml").write_text(task.replace("REGEX", regex))
            (folder / "data.jsonl").write_text(
                "".join(json.dumps({"id": i, "question": q, "answer": a}) + "\n" for i, q, a in rows_right)
            )
        try:
            main(["validate", str(folder / "t.yaml")])
        except SystemExit as exc:
            assert not exc.code
        out = capsys.readouterr()
        found = [line for line in (out.out + out.err).splitlines() if f"[{CUTS}]" in line]
        if name == "broken":
            assert found and read in found[0] and "field 'extraction.regex'" in found[0], out
            assert "data.jsonl, row 1" in found[0], found[0]
        else:
            assert not found, found


def test_a_regex_reading_the_phrase_the_prompt_asks_for_is_not_never_matching(tmp_path, capsys):
    """A chain-of-thought prompt asks for 'The answer is N' and the regex reads N after that phrase: the bare
    references do not match it, and that is by design (a red-team false positive). The same regex with a phrase
    the prompt never asks for is still named."""
    task = (
        'name: cot\nkind: generate\ndata: {path: data.jsonl, id: id}\nprompt: "{{ question }} PROMPT"\n'
        "target: \"{{ answer }}\"\ngeneration: {max_tokens: 256, stop: ['Question:']}\n"
        "extraction: {regex: 'The answer is (-?[\\d,]+)'}\n"
    )
    rows = [("s1", "What is 3 + 4?", "7"), ("s2", "What is 10 + 8?", "18"), ("s3", "What is 2 + 2?", "4")]
    for name, prompt, found in (("asked", "Think, then write 'The answer is N'.", False), ("not", "Think.", True)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "t.yaml").write_text(task.replace("PROMPT", prompt))
        (folder / "data.jsonl").write_text(
            "".join(json.dumps({"id": i, "question": q, "answer": a}) + "\n" for i, q, a in rows)
        )
        try:
            main(["validate", str(folder / "t.yaml")])
        except SystemExit as exc:
            assert not exc.code
        out = capsys.readouterr()
        lines = [line for line in (out.out + out.err).splitlines() if "[extraction.never-matches]" in line]
        assert bool(lines) == found, (name, out)
