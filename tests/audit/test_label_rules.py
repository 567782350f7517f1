"""The label and example rules (audit/label_rules.py, audit/example_rules.py) through the ``proctor`` command's
entry point (``validate``, in-process): each on a valid-looking task that breaks it, checking the finding's rule,
file, row or line and field; and look-alike tasks that are right (a key counted from 1 read with '- 1', numeric
answers, a template that names every option) that must stay silent."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.audit_corpus import SUITE, jsonl
from tests.support.audit_corpus import task_yaml as task
from tests.support.audit_inputs import lmeval_quiz
from tests.support.audit_runner import write_files as write
from tests.support.cli_runs import run_in_process


def rows(*items: dict) -> str:
    return jsonl(list(items))


QUIZ = [
    {"id": "q1", "question": "What is 2 + 2?", "choices": ["3", "4", "5", "6"], "label": 1, "answer": "B"},
    {"id": "q2", "question": "Capital of France?", "choices": ["Berlin", "Madrid", "Paris", "Rome"], "label": 2},
    {"id": "q3", "question": "Which is a mammal?", "choices": ["Whale", "Shark", "Trout", "Eel"], "label": 0},
    {"id": "q4", "question": "Colour of the sky?", "choices": ["Green", "Red", "Yellow", "Blue"], "label": 3},
    {"id": "q5", "question": "Legs of a spider?", "choices": ["Six", "Eight", "Ten", "Four"], "label": 1},
    {"id": "q6", "question": "What is frozen water?", "choices": ["Steam", "Ice", "Fog", "Dew"], "label": 1},
]
LETTERED = [{**r, "answer": "ABCD"[r["label"]]} for r in QUIZ]
GEN = {"kind": "generate", "choices": None, "target": "{{ answer }}", "generation": {"max_tokens": 8}}
SENTIMENT = "Answer Positive, Negative or Neutral.\nText: {{ text }}\nAnswer:"
FEELINGS = [("Great day", "Positive"), ("Awful food", "Negative"), ("It is fine", "Neutral"), ("Lovely", "Positive")]
PROBSEM_SUITE = SUITE  # the corpus's four statements, answers alternating
DEV_SAME_POSITION = [
    {"id": "d1", "question": "1+1?", "choices": ["2", "1"], "label": 0},
    {"id": "d2", "question": "2+1?", "choices": ["3", "1"], "label": 0},
    {"id": "d3", "question": "2+2?", "choices": ["4", "1"], "label": 0},
]
DEV_MIXED = [
    {"id": "d1", "question": "1+1?", "choices": ["1", "2"], "label": 1},
    {"id": "d2", "question": "2+1?", "choices": ["3", "1"], "label": 0},
]


def probsem(**changes: object) -> dict[str, str]:
    return {"p/test.txt": "Judge the statements.\n", "p/test_A.json": json.dumps({**PROBSEM_SUITE, **changes})}


# rule -> (files, the arguments after 'validate', where the finding points: a regex over its line)
CASES: dict[str, tuple[dict[str, str], list[str], str]] = {
    "choices.coerced": (
        {"t.yaml": task(), "data.jsonl": rows(*QUIZ[:2], {**QUIZ[2], "choices": [True, False], "label": 0}, *QUIZ[3:])},
        ["t.yaml"],
        r"data\.jsonl, row 3, field 'choices'",
    ),
    "labels.off-by-one": (  # a letter key moved one place on: 'B' scored as choice 2
        {
            "t.yaml": task(target="{{ 'ABCD'.index(answer) + 1 if answer != 'D' else 0 }}"),
            "data.jsonl": rows(*LETTERED),
        },
        ["t.yaml"],
        r"t\.yaml:\d+, field 'target'",
    ),
    "target.constant": (  # every generated row's reference is the same text
        {"t.yaml": task(**GEN), "data.jsonl": rows(*({**r, "answer": "Paris"} for r in QUIZ))},
        ["t.yaml"],
        r"data\.jsonl, row 1, field 'target'",
    ),
    "target.index-as-reference": (  # a generated task scored on the choice index
        {"t.yaml": task(**{**GEN, "target": "{{ label }}"}), "data.jsonl": rows(*QUIZ)},
        ["t.yaml"],
        r"data\.jsonl, row 1, field 'target'",
    ),
    "target.flipped": (  # the task lists yes/no, the rows' own lists say no/yes
        {
            "t.yaml": task(choices=["yes", "no"], target="{{ gold }}"),
            "data.jsonl": rows(
                *({"question": f"Is {n} even?", "choices": ["no", "yes"], "gold": int(n % 2 == 0)} for n in range(5))
            ),
        },
        ["t.yaml"],
        r"t\.yaml:\d+, field 'choices'",
    ),
    "target.not-a-choice": (  # the prompt offers 'Positive'; row 5's reference is 'positive'
        {
            "t.yaml": task(**{**GEN, "prompt": SENTIMENT}),
            "data.jsonl": rows(
                *({"text": t, "answer": a} for t, a in FEELINGS), {"text": "Nice", "answer": "positive"}
            ),
        },
        ["t.yaml"],
        r"data\.jsonl, row 5, field 'target'",
    ),
    "prompt.empty": (  # probsem: the first statement is empty, the prompt is the suite's text alone
        probsem(context=[{"text": "", "expected": 0}, *PROBSEM_SUITE["context"][1:]]),  # type: ignore[index]
        ["p"],
        r"test_A\.json, row 1, field 'prompt'",
    ),
    "prompt.contains-gold": (  # the posttext names one of the two queries in every prompt
        probsem(posttext="The answer is True. Answer:"),
        ["p"],
        r"test_A\.json, field 'prompt'",
    ),
    "fewshot.constant-label": (
        {
            "t.yaml": task(fewshot={"count": 2, "source": {"path": "dev.jsonl"}}),
            "data.jsonl": rows(*QUIZ),
            "dev.jsonl": rows(*DEV_SAME_POSITION),
        },
        ["t.yaml"],
        r"t\.yaml:\d+, field 'fewshot\.source'",
    ),
    "fewshot.wrong-answer": (
        {
            "t.yaml": task(
                fewshot={
                    "count": 2,
                    "source": {"path": "dev.jsonl"},
                    "template": "Q: {{ question }}\nA: {{ choices[0] }}",
                }
            ),
            "data.jsonl": rows(*QUIZ),
            "dev.jsonl": rows(*DEV_MIXED),
        },
        ["t.yaml"],
        r"t\.yaml:\d+, field 'fewshot\.template'",
    ),
}

# right tasks that look like the above: none may be flagged
CLEAN: dict[str, dict[str, str]] = {
    "one-based-key-read-minus-one": {
        "t.yaml": task(target="{{ label - 1 }}"),
        "data.jsonl": rows(*({**r, "label": r["label"] + 1} for r in QUIZ)),
    },
    "letter-key-read-as-is": {"t.yaml": task(target="{{ 'ABCD'.index(answer) }}"), "data.jsonl": rows(*LETTERED)},
    "numeric-answers": {
        "t.yaml": task(**GEN),
        "data.jsonl": rows(*({"question": f"{a} + {a}?", "answer": str(a + a)} for a in range(1, 7))),
    },
    "offered-labels": {
        "t.yaml": task(**{**GEN, "prompt": SENTIMENT}),
        "data.jsonl": rows(*({"text": t, "answer": a} for t, a in FEELINGS)),
    },
    "fixed-choices-same-order": {
        "t.yaml": task(choices=["no", "yes"], target="{{ gold }}"),
        "data.jsonl": rows(
            *({"question": f"Is {n} even?", "choices": ["no", "yes"], "gold": int(n % 2 == 0)} for n in range(5))
        ),
    },
    "few-shot-mixed-answers": {
        "t.yaml": task(
            fewshot={
                "count": 2,
                "source": {"path": "dev.jsonl"},
                "template": "Q: {{ question }}\nA: {{ choices[label] }}",
            }
        ),
        "data.jsonl": rows(*QUIZ),
        "dev.jsonl": rows(*DEV_MIXED),
    },
}


def validate(folder: Path, args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch) -> tuple[int, str]:
    """``proctor validate ARGS`` in ``folder``, through the CLI's entry point in this process."""
    monkeypatch.chdir(folder)
    return run_in_process(["validate", *args])


def findings(text: str) -> list[str]:
    return re.findall(r"audit \[([a-z.-]+)\]", text)


@pytest.mark.fast
@pytest.mark.parametrize("rule", sorted(CASES))
def test_the_rule_names_its_finding_and_place(rule, tmp_path, monkeypatch, capsys):
    files, args, where = CASES[rule]
    write(tmp_path, files)
    code, text = validate(tmp_path, args, capsys, monkeypatch)
    assert code == 0, text
    assert rule in findings(text), text
    line = next(line for line in text.splitlines() if f"[{rule}]" in line)
    assert re.search(where, line), line


@pytest.mark.fast
@pytest.mark.parametrize("name", sorted(CLEAN))
def test_right_tasks_that_look_alike_have_no_findings(name, tmp_path, monkeypatch, capsys):
    write(tmp_path, CLEAN[name])
    code, text = validate(tmp_path, ["t.yaml"], capsys, monkeypatch)
    assert code == 0, text
    assert findings(text) == [], text


def test_a_template_naming_every_option_is_not_a_gold_in_the_prompt(tmp_path, monkeypatch, capsys):
    write(tmp_path, probsem(pretext="Answer True or False: is it true?"))
    code, text = validate(tmp_path, ["p"], capsys, monkeypatch)
    assert code == 0, text
    assert findings(text) == [], text


def test_the_off_by_one_finding_names_the_key_and_the_gold(tmp_path, monkeypatch, capsys):
    files, args, _ = CASES["labels.off-by-one"]
    write(tmp_path, files)
    _, text = validate(tmp_path, args, capsys, monkeypatch)
    # row 1's key 'B' is choice 1, the target makes it choice 2; all 6 rows are moved by one
    assert "1 place(s) from the row's own 'answer' (row 1: 'B' is choice 1, the gold is choice 2) in all 6 rows" in text


def test_four_two_choice_rows_with_one_answer_are_a_constant_target(tmp_path, monkeypatch, capsys):
    """1 in 8 by chance: small binary tasks (GLM's, probsem's four-row suites) are told apart too."""
    data = [{"question": f"Is {n} small?", "choices": ["yes", "no"], "label": 0} for n in range(4)]
    write(tmp_path, {"t.yaml": task(), "data.jsonl": rows(*data)})
    _, text = validate(tmp_path, ["t.yaml"], capsys, monkeypatch)
    assert findings(text) == ["target.constant"], text
    write(tmp_path, {"data.jsonl": rows(*data[:3])})  # three rows: 1 in 4, chance
    _, text = validate(tmp_path, ["t.yaml"], capsys, monkeypatch)
    assert findings(text) == [], text


LMEVAL = lmeval_quiz('"Q: {{question}}\\nA:"', "choices", '"{{choices[label]}}"')


def test_an_lmeval_digit_target_read_as_another_index(tmp_path, monkeypatch, capsys):
    pytest.importorskip("lm_eval")
    numeric = [
        {"question": f"What is {a} + {b}?", "choices": ["1", "2", "3", "4"], "label": a + b - 1}
        for a, b in [(1, 0), (1, 1), (1, 2), (2, 1), (0, 1)]
    ]
    write(tmp_path, {"quiz.yaml": LMEVAL, "test.jsonl": rows(*numeric)})
    code, text = validate(tmp_path, ["quiz.yaml"], capsys, monkeypatch)
    assert code == 0, text
    line = next(line for line in text.splitlines() if "[target.ambiguous]" in line)
    assert re.search(r"quiz\.yaml, row 0, field 'doc_to_target'", line), line
    assert "the text '1', which lm-eval reads as choice index 1 ('2'); '1' is choice 0's text" in line
    # the same task with texts that are not digits: lm-eval compares the text, nothing is read as an index
    words = [{**r, "choices": ["one", "two", "three", "four"]} for r in numeric]
    write(tmp_path, {"test.jsonl": rows(*words)})
    code, text = validate(tmp_path, ["quiz.yaml"], capsys, monkeypatch)
    assert code == 0 and "target.ambiguous" not in findings(text), text


def test_an_lmeval_integer_index_field_rendered_as_text_is_its_own_index(tmp_path, monkeypatch, capsys):
    """cais/mmlu's ``doc_to_target: "{{answer}}"``: the digit rendered is the int index the field holds (lm-eval
    reads it back as meant), even where it spells another choice's text ('2' among numeric choices)."""
    pytest.importorskip("lm_eval")
    mixed = [
        {"question": "What is 1 + 1?", "choices": ["1", "2", "3", "4"], "label": 1},  # '1' is choice 0's text
        {"question": "What is 3 - 1?", "choices": ["0", "1", "2", "3"], "label": 2},
        {"question": "Which is a colour?", "choices": ["dog", "red", "sky", "run"], "label": 1},
        {"question": "Which is a fruit?", "choices": ["pear", "car", "hat", "cup"], "label": 0},
        {"question": "What is 2 + 2?", "choices": ["2", "3", "4", "5"], "label": 2},  # '2' is choice 0's text
    ]
    write(
        tmp_path,
        {"quiz.yaml": lmeval_quiz('"Q: {{question}}\\nA:"', "choices", '"{{label}}"'), "test.jsonl": rows(*mixed)},
    )
    code, text = validate(tmp_path, ["quiz.yaml"], capsys, monkeypatch)
    assert code == 0 and "target.ambiguous" not in findings(text), text
    # the broken twin: a column of numeric answers (each row's value one of its choices' texts), read as an index
    values = [{**r, "choices": ["1", "2", "3", "4"], "label": v} for r, v in zip(mixed, [2, 1, 3, 1, 2])]
    write(tmp_path, {"test.jsonl": rows(*values)})
    code, text = validate(tmp_path, ["quiz.yaml"], capsys, monkeypatch)
    line = next(line for line in text.splitlines() if "[target.ambiguous]" in line)
    assert "row 0, field 'doc_to_target'" in line, line
    assert "the text '2', which lm-eval reads as choice index 2 ('3'); '2' is choice 1's text" in line, line


def test_seahelm_examples_that_are_evaluated_rows(tmp_path, monkeypatch, capsys):
    """SEA-HELM shows a base model the first examples of a task's 'examples' split: the dialect's rule reads them
    before any model loads; examples of their own give nothing."""
    from tests.conftest import SHARED

    config = SHARED / "examples" / "seahelm" / "seahelm_tasks" / "nlu" / "sentiment_analysis" / "config.yaml"
    if not config.exists():
        pytest.skip("the SEA-HELM example tree is not in ../shared")
    evaluated = [
        {"id": i, "label": label, "prompts": [{"text": text}], "metadata": {"language": "id"}}
        for i, (label, text) in enumerate([("Positif", "Bagus sekali"), ("Negatif", "Buruk"), ("Netral", "Biasa")])
    ]
    own = [{**r, "id": 100 + r["id"], "prompts": [{"text": r["prompts"][0]["text"] + "!"}]} for r in evaluated]
    args = ["sa", "--seahelm-data", "aisingapore/NLU-Sentiment-Analysis=copy"]
    files = {"sa/config.yaml": config.read_text(encoding="utf-8"), "copy/id/eval.jsonl": rows(*evaluated)}
    write(tmp_path, {**files, "copy/id/examples.jsonl": rows(*own, evaluated[1])})
    code, text = validate(tmp_path, args, capsys, monkeypatch)
    assert code == 0, text
    line = next(line for line in text.splitlines() if "sentiment/id: audit [seahelm.examples-are-evaluated]" in line)
    assert re.search(r"sa/config\.yaml, field 'example_filepath': 1 of the 4 few-shot examples", line), line
    write(tmp_path, {"copy/id/examples.jsonl": rows(*own)})
    code, text = validate(tmp_path, args, capsys, monkeypatch)
    assert code == 0 and "seahelm.examples-are-evaluated" not in findings(text), text


def test_seahelm_examples_file_with_fewer_rows_than_a_base_model_is_shown(tmp_path, monkeypatch, capsys):
    """The real sentiment config shows a base model 5 examples: an examples file of none, or of two, gives its
    prompts fewer (SEA-HELM shows what there is, with no word); five or more are silent."""
    from tests.conftest import SHARED

    config = SHARED / "examples" / "seahelm" / "seahelm_tasks" / "nlu" / "sentiment_analysis" / "config.yaml"
    if not config.exists():
        pytest.skip("the SEA-HELM example tree is not in ../shared")
    texts = ["Bagus sekali", "Buruk", "Biasa", "Hebat", "Jelek", "Lumayan", "Mantap"]
    labelled = [
        {
            "id": i,
            "label": ["Positif", "Negatif", "Netral"][i % 3],
            "prompts": [{"text": t}],
            "metadata": {"language": "id"},
        }
        for i, t in enumerate(texts)
    ]
    args = ["sa", "--seahelm-data", "aisingapore/NLU-Sentiment-Analysis=copy"]
    write(tmp_path, {"sa/config.yaml": config.read_text(encoding="utf-8"), "copy/id/eval.jsonl": rows(*labelled[:3])})
    for examples, found in (([], True), (labelled[3:5], True), (labelled[3:] + [{**labelled[3], "id": 99}], False)):
        (tmp_path / "copy" / "id" / "examples.jsonl").write_text(rows(*examples) if examples else "")
        code, text = validate(tmp_path, args, capsys, monkeypatch)
        assert code == 0, text
        lines = [line for line in text.splitlines() if "audit [seahelm.examples-too-few]" in line]
        if found:
            assert lines and f"holds {len(examples)} row(s), and a base model is to be shown 5" in lines[0], text
            assert "field 'example_filepath'" in lines[0]
        else:
            assert lines == [], lines


def test_labels_shown_one_by_one_in_fixed_examples_are_not_an_offered_set(tmp_path, monkeypatch, capsys):
    """A template whose fixed examples show 'Positive' and 'Negative' on lines of their own offers no label set:
    a row whose answer is 'Neutral' is not flagged."""
    prompt = "Text: Great\nSentiment: Positive\nText: Awful\nSentiment: Negative\nText: {{ text }}\nSentiment:"
    data = [*({"text": t, "answer": a} for t, a in FEELINGS), {"text": "Fine", "answer": "Neutral"}]
    write(tmp_path, {"t.yaml": task(**{**GEN, "prompt": prompt}), "data.jsonl": rows(*data)})
    code, text = validate(tmp_path, ["t.yaml"], capsys, monkeypatch)
    assert code == 0 and findings(text) == [], text


def test_a_limited_subset_missing_label_0_by_chance_is_not_blamed(tmp_path):
    """--limit 10 of a task whose labels use every position: its first ten rows happen to hold no label 0 (one run
    in 18 for four choices). The data is not counted from 1, and the run does not say it is (review of session 12,
    S2: the quickstart with --limit 10); the same ten rows as a whole file of their own still are."""
    from proctor import evaluate
    from tests.support.fakes import FakeModel

    labels = [1, 2, 3, 1, 2, 3, 1, 2, 3, 1] + [0, 1, 2, 3] * 5
    rows = [
        {"q": f"Question {i}?", "options": [f"a{i}", f"b{i}", f"c{i}", f"d{i}"], "label": k}
        for i, k in enumerate(labels)
    ]
    task = "name: t\nkind: multiple_choice\ndata: {path: rows.jsonl}\nprompt: '{{ q }}'\n"
    task += "choices: '{{ options }}'\ntarget: '{{ label }}'\n"
    for name, kept in (("whole", rows), ("first", rows[:10])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "t.yaml").write_text(task)
        (tmp_path / name / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    found = {}
    for name in ("whole", "first"):
        run = evaluate([tmp_path / name / "t.yaml"], FakeModel(), output_dir=tmp_path / f"run-{name}", limit=10)
        entry = json.loads((run.run_dir / "results.json").read_text())["tasks"]["t"]
        found[name] = {a["rule"] for a in entry.get("audit") or []}
    assert "labels.off-by-one" not in found["whole"], found  # ten of 30 rows: chance
    assert "labels.off-by-one" in found["first"], found  # the file itself: its labels, as written


def test_seahelm_examples_asked_for_with_no_examples_file(tmp_path, monkeypatch, capsys):
    """fewshot_num_examples asks a base model for 5 examples and the config names no example_filepath: a base
    model's run was 0-shot with no word (red team 13, 154). The config's own file, named, is silent."""
    from tests.conftest import SHARED

    config = SHARED / "examples" / "seahelm" / "seahelm_tasks" / "nlu" / "sentiment_analysis" / "config.yaml"
    if not config.exists():
        pytest.skip("the SEA-HELM example tree is not in ../shared")
    labelled = [
        {
            "id": i,
            "label": ["Positif", "Negatif", "Netral"][i % 3],
            "prompts": [{"text": t}],
            "metadata": {"language": "id"},
        }
        for i, t in enumerate(["Bagus sekali", "Buruk", "Biasa", "Hebat", "Jelek", "Lumayan"])
    ]
    args = ["sa", "--seahelm-data", "aisingapore/NLU-Sentiment-Analysis=copy"]
    original = config.read_text(encoding="utf-8")
    without = "\n".join(line for line in original.splitlines() if "example_filepath" not in line) + "\n"
    assert without != original
    write(tmp_path, {"sa/config.yaml": without, "copy/id/eval.jsonl": rows(*labelled[:3])})
    (tmp_path / "copy" / "id" / "examples.jsonl").write_text(rows(*labelled))
    code, text = validate(tmp_path, args, capsys, monkeypatch)
    lines = [line for line in text.splitlines() if "audit [seahelm.examples-too-few]" in line]
    assert code == 0 and lines and "names no example_filepath" in " ".join(lines[0].split()), text
