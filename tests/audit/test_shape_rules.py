"""Rules for data whose shape is not what the task file expects, through ``proctor validate``'s entry point: a CSV
quote left open (``data.quote-open``), a list's filter on a text (``references.coerced``), a list printed as
Python writes it (``prompt.python-repr``), a field cut by the template (``prompt.cut``), an n-gram ban on answers
copied from the prompt (``generation.ngram-ban``), a huge choice temperature or f1 on answers written without
spaces (``metrics.mismatch``), labels counted from 1 in one file of a glob or in the few-shot pool
(``labels.off-by-one``). Each finding names its rule, file, line or row and field; the right twin of each task is
silent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.cli import main

pytestmark = pytest.mark.fast


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


MC = """\
name: colours
kind: multiple_choice
data: {{path: {path}, id: id}}
prompt: "{prompt}"
choices: {choices}
target: "{{{{ answer }}}}"
{extra}"""

GEN = """\
name: capitals
kind: generate
data: {{path: data.jsonl, id: id}}
prompt: "{prompt}"
target: "{target}"
generation: {generation}
"""

COLOURS = [("red", "apple", "sea"), ("blue", "sea", "coal"), ("green", "grass", "snow"), ("black", "coal", "milk")]


CJK = [
    {"id": "c1", "q": "中国的首都是哪里?", "answer": "北京市"},
    {"id": "c2", "q": "日本的首都是哪里?", "answer": "东京都"},
    {"id": "c3", "q": "法国的首都是哪里?", "answer": "巴黎市"},
]


def _mc_rows(n: int, labels: list[int], start: int = 0) -> list[dict]:
    rows = []
    for i in range(start, start + n):
        colour, *options = COLOURS[i % len(COLOURS)]
        choices = [f"{options[0]} {i}", f"{options[1]} {i}", f"cloud {i}", f"stone {i}"]
        rows.append({"id": f"q{i}", "question": f"What is {colour} ({i})?", "choices": choices})
        rows[-1]["answer"] = labels[(i - start) % len(labels)]
    return rows


def _csv(quoted: bool) -> str:
    first = '1,"What is red",apple,sky,0' if quoted else '1,"What is red,apple,sky,0'
    return (
        "id,question,A,B,answer\n"
        + first
        + '\n2,What is blue,sea,fire,0\n3,"What is green",grass,coal,0\n4,What is black,coal,snow,0\n'
        + "5,What is white,snow,coal,0\n"
    )


STOPPED = '{max_tokens: 8, stop: ["\\n"]}'
CSV_CHOICES = '["{{ A }}", "{{ B }}"]'


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir()
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder / "task.yaml"


def _mc(prompt: str = "Q: {{ question }}\\nA:", choices: str = '"{{ choices }}"', path: str = "data.jsonl", extra=""):
    return MC.format(path=path, prompt=prompt, choices=choices, extra=extra)


PPL = """\
name: texts
kind: perplexity
data: {path: data.jsonl, id: id}
text: "{{ text }}"
metrics: [word_perplexity]
"""


def _cases() -> dict[str, tuple[dict[str, str], dict[str, str], str, str]]:
    """rule -> (the broken task's files, its right twin's, the file the finding names, the field)."""
    csv_task = _mc(choices='["{{ A }}", "{{ B }}"]', path="data.csv")
    words = {"id": "a", "q": "Capital of Peru?"}
    listed = [{**words, "answers": ["Lima", "lima"]}, {"id": "b", "q": "Capital of Chile?", "answers": ["Santiago"]}]
    mixed = [listed[0], {"id": "b", "q": "Capital of Chile?", "answers": "Santiago"}]
    passage = [
        {"id": f"p{i}", "text": f"Row {i}: the old port of {city} is the capital.", "answer": f"old port of {city}"}
        for i, city in enumerate(["Lima", "Quito", "Accra", "Hanoi", "Oslo"])
    ]
    gen = GEN.format
    aliased = [
        {"id": r["id"], "q": r["q"], "answer": r["answers"][0], "aliases": [*r["answers"], "the city"]} for r in listed
    ]
    letters = [{"id": f"l{i}", "q": f"Pick option {c}.", "answer": c} for i, c in enumerate("BCDB")]
    unspaced_texts = [
        {"id": f"t{i}", "text": t}
        for i, t in enumerate(["今天天气很好我们去公园散步吧", "北京是中国的首都也是文化中心"])
    ]
    evaluated = _jsonl(_mc_rows(8, [0, 1, 2, 3]))
    pool_ok, pool_shifted = _mc_rows(8, [0, 1, 2, 3], start=200), _mc_rows(8, [1, 2, 3], start=200)
    few = "fewshot: {count: 2, source: {path: dev.jsonl}, seed: 1}"
    return {
        "data.quote-open": (
            {"task.yaml": csv_task, "data.csv": _csv(quoted=False)},
            {"task.yaml": csv_task, "data.csv": _csv(quoted=True)},
            "data.csv",
            "question",
        ),
        "references.coerced": (
            {
                "task.yaml": gen(prompt="{{ q }}", target="{{ answers | first }}", generation="{max_tokens: 8}"),
                "data.jsonl": _jsonl(mixed),
            },
            {
                "task.yaml": gen(prompt="{{ q }}", target="{{ answers | first }}", generation="{max_tokens: 8}"),
                "data.jsonl": _jsonl(listed),
            },
            "data.jsonl",
            "answers",
        ),
        "prompt.python-repr": (
            {
                "task.yaml": _mc(prompt="Q: {{ question }} Options: {{ choices }}\\nA:"),
                "data.jsonl": _jsonl(_mc_rows(4, [0, 1, 2, 3])),
            },
            {
                "task.yaml": _mc(prompt="Q: {{ question }} Options: {{ choices | join(', ') }}\\nA:"),
                "data.jsonl": _jsonl(_mc_rows(4, [0, 1, 2, 3])),
            },
            "data.jsonl",
            "choices",
        ),
        "generation.ngram-ban": (
            {
                "task.yaml": gen(
                    prompt="{{ text }} Where?",
                    target="{{ answer }}",
                    generation="{max_tokens: 8, no_repeat_ngram_size: 3}",
                ),
                "data.jsonl": _jsonl(passage),
            },
            {
                "task.yaml": gen(
                    prompt="{{ text }} Where?",
                    target="{{ answer }}",
                    generation="{max_tokens: 8, no_repeat_ngram_size: 5}",
                ),
                "data.jsonl": _jsonl(passage),
            },
            "task.yaml",
            "generation.no_repeat_ngram_size",
        ),
        "generation.unbounded-answer": (
            {
                "task.yaml": gen(prompt="{{ q }}", target="{{ answer }}", generation="{max_tokens: 200}"),
                "data.jsonl": _jsonl(CJK),
            },
            {
                "task.yaml": gen(
                    prompt="{{ q }}", target="{{ answer }}", generation='{max_tokens: 200, stop: ["\\n"]}'
                ),
                "data.jsonl": _jsonl(CJK),
            },
            "task.yaml",
            "generation.stop",
        ),
        "prompt.field-missing": (
            {
                "task.yaml": gen(prompt="{{ text | default('') }} Where?", target="{{ answer }}", generation=STOPPED),
                "data.jsonl": _jsonl(
                    [{k: v for k, v in r.items() if k != "text" or i % 2} for i, r in enumerate(passage)]
                ),
            },
            {
                "task.yaml": gen(prompt="{{ text | default('') }} Where?", target="{{ answer }}", generation=STOPPED),
                "data.jsonl": _jsonl(passage),
            },
            "data.jsonl",
            "text",
        ),
        "references.aliases-lost": (
            {
                "task.yaml": gen(prompt="{{ q }}", target="{{ answers[0] }}", generation=STOPPED),
                "data.jsonl": _jsonl(listed),
            },
            {
                "task.yaml": gen(prompt="{{ q }}", target="{{ answers }}", generation=STOPPED),
                "data.jsonl": _jsonl(listed),
            },
            "data.jsonl",
            "answers",
        ),
        "references.aliases-lost (unread aliases)": (
            {
                "task.yaml": gen(prompt="{{ q }}", target="{{ answer }}", generation=STOPPED),
                "data.jsonl": _jsonl(aliased),
            },
            {
                "task.yaml": gen(prompt="{{ q }}", target="{{ aliases }}", generation=STOPPED),
                "data.jsonl": _jsonl(aliased),
            },
            "data.jsonl",
            "aliases",
        ),
        "extraction.letter-in-word": (
            {
                "task.yaml": gen(prompt="{{ q }}", target="{{ answer }}", generation=STOPPED)
                + "extraction: {regex: '([ABCD])'}\n",
                "data.jsonl": _jsonl(letters),
            },
            {
                "task.yaml": gen(prompt="{{ q }}", target="{{ answer }}", generation=STOPPED)
                + "extraction: {regex: '\\\\b([ABCD])\\\\b'}\n",
                "data.jsonl": _jsonl(letters),
            },
            "task.yaml",
            "extraction.regex",
        ),
        "fewshot.separator": (
            {
                "task.yaml": _mc(extra="fewshot: {count: 2, source: {path: dev.jsonl}, seed: 1, separator: ' '}"),
                "data.jsonl": evaluated,
                "dev.jsonl": _jsonl(pool_ok),
            },
            {
                "task.yaml": _mc(
                    extra="fewshot: {count: 2, source: {path: dev.jsonl}, seed: 1, separator: '\\n'}"
                ).replace("separator: '\\n'", 'separator: "\\n"'),
                "data.jsonl": evaluated,
                "dev.jsonl": _jsonl(pool_ok),
            },
            "task.yaml",
            "fewshot.separator",
        ),
        "prompt.cut": (
            {
                "task.yaml": gen(
                    prompt="{{ text | truncate(30) }} Where?", target="{{ answer }}", generation="{max_tokens: 8}"
                ),
                "data.jsonl": _jsonl(passage),
            },
            {
                "task.yaml": gen(
                    prompt="{{ text | truncate(300) }} Where?", target="{{ answer }}", generation="{max_tokens: 8}"
                ),
                "data.jsonl": _jsonl(passage),
            },
            "data.jsonl",
            "text",
        ),
        "metrics.mismatch": (
            {"task.yaml": _mc(extra="choice_temperature: 1000\n"), "data.jsonl": _jsonl(_mc_rows(4, [0, 1, 2, 3]))},
            {"task.yaml": _mc(extra="choice_temperature: 2\n"), "data.jsonl": _jsonl(_mc_rows(4, [0, 1, 2, 3]))},
            "task.yaml",
            "choice_temperature",
        ),
        "metrics.mismatch (f1 on one-letter labels)": (
            {
                "task.yaml": gen(prompt="{{ q }}", target="{{ answer }}", generation="{max_tokens: 8}")
                + "metrics: [f1]\n",
                "data.jsonl": _jsonl(letters),
            },
            {
                "task.yaml": gen(prompt="{{ q }}", target="{{ answer }}", generation="{max_tokens: 8}")
                + "metrics: [exact_match]\n",
                "data.jsonl": _jsonl(letters),
            },
            "task.yaml",
            "metrics",
        ),
        "metrics.mismatch (word_perplexity on unspaced text)": (
            {"task.yaml": PPL, "data.jsonl": _jsonl(unspaced_texts)},
            {"task.yaml": PPL.replace("word_perplexity", "bits_per_byte"), "data.jsonl": _jsonl(unspaced_texts)},
            "task.yaml",
            "metrics",
        ),
        "metrics.mismatch (f1 on unspaced text)": (
            {
                "task.yaml": gen(prompt="{{ q }}", target="{{ answer }}", generation="{max_tokens: 8}")
                + "metrics: [f1]\n",
                "data.jsonl": _jsonl(CJK),
            },
            {
                "task.yaml": gen(prompt="{{ q }}", target="{{ answer }}", generation="{max_tokens: 8}")
                + "metrics: [f1]\n",
                "data.jsonl": _jsonl([{**r, "answer": " ".join(r["answer"])} for r in CJK]),
            },
            "task.yaml",
            "metrics",
        ),
        "labels.off-by-one": (
            {
                "task.yaml": _mc(path="parts/*.jsonl"),
                "parts/a.jsonl": _jsonl(_mc_rows(8, [0, 1, 2, 3])),
                "parts/b.jsonl": _jsonl(_mc_rows(8, [1, 2, 3], start=100)),
            },
            {
                "task.yaml": _mc(path="parts/*.jsonl"),
                "parts/a.jsonl": _jsonl(_mc_rows(8, [0, 1, 2, 3])),
                "parts/b.jsonl": _jsonl(_mc_rows(8, [3, 2, 1, 0], start=100)),
            },
            "b.jsonl",
            "target",
        ),
        "labels.off-by-one (few-shot pool)": (
            {
                "task.yaml": _mc(extra=few),
                "data.jsonl": _jsonl(_mc_rows(8, [0, 1, 2, 3])),
                "dev.jsonl": _jsonl(pool_shifted),
            },
            {
                "task.yaml": _mc(extra=few),
                "data.jsonl": _jsonl(_mc_rows(8, [0, 1, 2, 3])),
                "dev.jsonl": _jsonl(pool_ok),
            },
            "task.yaml",
            "fewshot.source",
        ),
    }


CASES = _cases()


def _validate(task: Path, capsys) -> str:
    try:
        main(["validate", str(task)])
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr()
    out = capsys.readouterr()
    return out.out + out.err


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_finding_names_its_rule_file_and_field_and_the_twin_is_silent(case, tmp_path, capsys):
    broken, right, file, field = CASES[case]
    rule = case.split(" ")[0]
    text = _validate(_write(tmp_path / "broken", broken), capsys)
    found = [line for line in text.splitlines() if f"[{rule}]" in line]
    assert found, text
    assert file in found[0] and field in found[0], found[0]
    quiet = _validate(_write(tmp_path / "right", right), capsys)
    assert f"[{rule}]" not in quiet, quiet


def test_a_quote_left_open_that_breaks_the_column_count_says_where_the_row_began(tmp_path, capsys):
    task = _write(
        tmp_path / "t",
        {
            "task.yaml": _mc(choices='["{{ A }}", "{{ B }}"]', path="data.csv"),
            "data.csv": 'id,question,A,B,answer\n1,"What is red,apple,sky,0\n2,What is blue,sea,fire,0\n',
        },
    )
    with pytest.raises(SystemExit) as exc:
        main(["validate", str(task)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "data.csv" in err and "a row running from line 2" in err and "quote left open" in err, err


def test_a_passage_with_line_breaks_in_a_quoted_field_is_not_taken_for_rows(tmp_path, capsys):
    passage = '"First line of the passage.\nSecond line, with a comma.\nThird line."'
    rows = "".join(f"{i},{passage},yes,no,0\n" for i in range(1, 5))
    task = _write(
        tmp_path / "t",
        {
            "task.yaml": _mc(choices='["{{ A }}", "{{ B }}"]', path="data.csv"),
            "data.csv": "id,question,A,B,answer\n" + rows,
        },
    )
    assert "[data.quote-open]" not in _validate(task, capsys)


def test_an_answer_without_stop_is_not_flagged_when_the_chat_template_ends_it(tmp_path, capsys):
    """A chat model's reply ends at its end of turn: with the chat template asked for (the task file's chat, or the
    command's --chat-template), nothing runs on."""
    broken, _, _, _ = CASES["generation.unbounded-answer"]
    task = _write(tmp_path / "t", {**broken, "task.yaml": broken["task.yaml"] + "chat: {fewshot_as_turns: true}\n"})
    assert "[generation.unbounded-answer]" not in _validate(task, capsys)


def test_reading_comprehension_whose_passage_holds_the_right_choice_is_not_a_leak(tmp_path, capsys):
    """A passage holds the right answer by design (the question is which choice it supports): prompt.contains-gold
    speaks of a prompt that shows the answer otherwise (a hint, the gold field), not of the passage."""
    rows = [
        {
            "id": f"r{i}",
            "passage": f"Story {i}: Mia keeps a {pet} called Rex at home.",
            "question": "Which animal does Mia keep?",
            "choices": [pet, "parrot", "goldfish", "rabbit"],
            "answer": 0,
        }
        for i, pet in enumerate(["dog", "cat", "hamster", "turtle", "pony", "ferret"])
    ]
    prompt = "{{ passage }}\\nQ: {{ question }}\\nA:"
    task = _write(tmp_path / "t", {"task.yaml": _mc(prompt=prompt), "data.jsonl": _jsonl(rows)})
    assert "[prompt.contains-gold]" not in _validate(task, capsys)
    hinted = _write(
        tmp_path / "h",
        {"task.yaml": _mc(prompt="Hint: {{ choices[answer] }}\\nQ: {{ question }}\\nA:"), "data.jsonl": _jsonl(rows)},
    )
    assert "[prompt.contains-gold]" in _validate(hinted, capsys)


@pytest.mark.parametrize(
    ("options", "found"),
    [("{{ choices | join(', ') }}", True), ("{{ choices.text | join(', ') }}", False)],
)
def test_a_mapping_joined_in_the_prompt_shows_its_keys_on_real_arc_rows(options, found, tmp_path, capsys):
    """ARC's Arrow rows hold ``choices: {text: [...], label: [...]}``: joining the mapping prints 'text, label' in
    every prompt and none of the options. Joining its ``text`` list is right."""
    from tests.conftest import shared_path

    arrow = shared_path("data", "arc_easy", "hf_arrow_validation")
    task = tmp_path / "arc.yaml"
    task.write_text(
        f"name: arc\nkind: multiple_choice\ndata: {{path: {arrow}, id: id}}\nlimit: 40\n"
        f'prompt: "{{{{ question }}}}\\nOptions: {options}\\nAnswer:"\n'
        'choices: "{{ choices.text }}"\ntarget: "{{ choices.label.index(answerKey) }}"\n'
    )
    try:
        main(["validate", str(task), "--data-dir", str(arrow.parent)])
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr()
    out = capsys.readouterr()
    lines = [line for line in (out.out + out.err).splitlines() if "[prompt.python-repr]" in line]
    if found:
        (line,) = lines
        assert "'text, label'" in line and "mapping 'choices'" in line and "40 of the 40 rows" in line, line
    else:
        assert lines == [], lines
