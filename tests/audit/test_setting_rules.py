"""The audit's rules over a task's settings, its limits and its group (``proctor.audit.setting_rules``,
``limit_rules``, ``run_rules``), and the generation rules on lm-eval's and SEA-HELM's own settings: each on a
valid-looking task that breaks it, through the ``proctor`` command's entry point, checking the finding's rule,
file, row or line, field and the numbers it names; each with a clean twin that must stay silent. ``--limit`` is
checked on ``proctor run`` (in-process, and once in a fresh process with results.json)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import SHARED
from tests.support.audit_corpus import (
    LETTERED,
    LM,
    LM_GEN,
    LM_STRIP,
    QUIZ,
    SEA_ARGS,
    SEA_CONFIG,
    jsonl,
    lm,
    native,
    sea,
    task_yaml,
)
from tests.support.audit_runner import write_files as write
from tests.support.cli_runs import proctor, results, run_in_process

TWO = """\
tasks:
  - name: quiz_a
    kind: multiple_choice
    data: DATA_A
    prompt: "Q: {{ question }}\\nA:"
    choices: "{{ choices }}"
    target: "{{ label }}"
    group: quizzes
  - name: quiz_b
    kind: multiple_choice
    data: DATA_B
    prompt: "Q: {{ question }}\\nA:"
    choices: "{{ choices }}"
    target: "{{ label }}"
    group: quizzes
"""


def check(folder: Path, files: dict, args: list[str], monkeypatch) -> tuple[int, str, list[str]]:
    """Write ``files`` into ``folder`` and run ``proctor ARGS`` there: (exit code, output, its findings' lines)."""
    write(folder, files)
    monkeypatch.chdir(folder)
    code, text = run_in_process(args)
    return code, text, [line for line in text.splitlines() if re.search(r"audit \[[a-z.-]+\]|^error: .*\[", line)]


def finding(lines: list[str], rule: str) -> str:
    found = [line for line in lines if f"[{rule}]" in line]  # a run logs it, then lists it with the warnings
    assert found, lines
    return found[0]


def rules_in(lines: list[str]) -> set[str]:
    return {m for line in lines for m in re.findall(r"\[([a-z][a-z0-9-]*\.[a-z0-9.-]+)\]", line)}


# ---------------------------------------------------------------- native task settings


def test_letter_choices_without_the_options_in_the_prompt(tmp_path, monkeypatch):
    bad = native(QUIZ, prompt="{{ question }}\nAnswer:", choices=["A", "B", "C", "D"])
    code, _, lines = check(tmp_path / "bad", bad, ["validate", "t.yaml"], monkeypatch)
    line = finding(lines, "choices.not-in-prompt")
    assert code == 0 and "data.jsonl, row 1, field 'choices'" in line and "6 of the 6 rows" in line
    good = native(QUIZ, prompt=LETTERED + "Answer:", choices=["A", "B", "C", "D"])
    code, text, lines = check(tmp_path / "good", good, ["validate", "t.yaml"], monkeypatch)
    assert code == 0 and lines == [], text


def test_acc_norm_on_one_letter_choices_and_a_choice_temperature_near_zero(tmp_path, monkeypatch):
    letters = native(QUIZ, prompt=LETTERED + "Answer:", choices=["A", "B", "C", "D"], metrics=["acc", "acc_norm"])
    _, _, lines = check(tmp_path / "letters", letters, ["validate", "t.yaml"], monkeypatch)
    line = finding(lines, "metrics.mismatch")
    assert re.search(r"t\.yaml:\d+, field 'metrics'", line) and "every choice is 1 character" in line
    cold = native(QUIZ, choice_temperature=1e-9)
    _, _, lines = check(tmp_path / "cold", cold, ["validate", "t.yaml"], monkeypatch)
    assert "field 'choice_temperature'" in finding(lines, "metrics.mismatch")
    fine = native(QUIZ, metrics=["acc", "acc_norm"], choice_temperature=0.5)  # choices of many lengths
    code, text, lines = check(tmp_path / "fine", fine, ["validate", "t.yaml"], monkeypatch)
    assert code == 0 and lines == [], text


PASSAGES = [
    {**r, "passage": f"Passage {i}: " + "the evidence that the answer rests on, at some length. " * 3}
    for i, r in enumerate(QUIZ)
]


def test_a_passage_no_prompt_shows(tmp_path, monkeypatch):
    _, _, lines = check(tmp_path / "bad", native(PASSAGES), ["validate", "t.yaml"], monkeypatch)
    line = finding(lines, "prompt.drops-field")
    assert "data.jsonl, row 1, field 'passage'" in line and "6 of 6 rows" in line
    shown = native(PASSAGES, prompt="{{ passage }}\nQ: {{ question }}\nA:")
    code, text, lines = check(tmp_path / "good", shown, ["validate", "t.yaml"], monkeypatch)
    assert code == 0 and lines == [], text


MMLU_CSV = SHARED / "data" / "mmlu" / "anatomy_test.csv"


@pytest.mark.fast
@pytest.mark.skipif(not MMLU_CSV.exists(), reason="needs ../shared/data/mmlu")
def test_mmlu_columns_named_one_place_off(tmp_path, monkeypatch):
    head = "".join(MMLU_CSV.read_text(encoding="utf-8").splitlines(keepends=True)[:40])

    def mmlu(columns: list[str]) -> dict:
        return {
            "t.yaml": task_yaml(
                data={"path": "anatomy_test.csv", "columns": columns},
                prompt="{{ question }}\nA. {{ A }}\nB. {{ B }}\nC. {{ C }}\nD. {{ D }}\nAnswer:",
                choices=["A", "B", "C", "D"],
                target="{{ 'ABCD'.index(answer) }}",
            ),
            "anatomy_test.csv": head,
        }

    _, _, lines = check(
        tmp_path / "bad", mmlu(["A", "B", "C", "D", "question", "answer"]), ["validate", "t.yaml"], monkeypatch
    )
    line = finding(lines, "data.columns")
    assert re.search(r"t\.yaml:\d+, field 'data\.columns'", line)
    asks = sum(r.rstrip().split(",")[0].endswith("?") or r.startswith('"') and '?",' in r for r in head.splitlines())
    assert f"column named 'A' in {asks}" in line or "column named 'A'" in line
    code, text, lines = check(
        tmp_path / "good", mmlu(["question", "A", "B", "C", "D", "answer"]), ["validate", "t.yaml"], monkeypatch
    )
    assert code == 0 and lines == [], text


@pytest.mark.fast
def test_a_filter_that_keeps_one_row(tmp_path, monkeypatch):
    one = native(QUIZ, data={"path": "data.jsonl", "filter": "{{ id == 'q3' }}"})
    _, _, lines = check(tmp_path / "one", one, ["validate", "t.yaml"], monkeypatch)
    line = finding(lines, "data.filter-drops-most")
    assert re.search(r"t\.yaml:\d+, field 'data\.filter'", line) and "keeps 1 of the 6 rows" in line
    most = native(QUIZ, data={"path": "data.jsonl", "filter": "{{ id != 'q3' }}"})
    code, text, lines = check(tmp_path / "most", most, ["validate", "t.yaml"], monkeypatch)
    assert code == 0 and lines == [], text


# ---------------------------------------------------------------- limits and groups


def test_a_task_limit_larger_than_the_data(tmp_path, monkeypatch):
    _, _, lines = check(tmp_path / "big", native(QUIZ, limit=1000), ["validate", "t.yaml"], monkeypatch)
    line = finding(lines, "data.limit-exceeds")
    assert re.search(r"t\.yaml:\d+, field 'limit'", line) and "limit is 1000, more than the 6 rows" in line
    code, text, lines = check(tmp_path / "small", native(QUIZ, limit=6), ["validate", "t.yaml"], monkeypatch)
    assert code == 0 and lines == [], text


def test_a_limit_over_rows_sorted_by_their_answer(tmp_path, monkeypatch):
    by_label = sorted(QUIZ, key=lambda r: r["label"])  # labels 0 1 1 1 2 3
    _, _, lines = check(tmp_path / "sorted", native(by_label, limit=2), ["validate", "t.yaml"], monkeypatch)
    line = finding(lines, "data.limit-biased")
    assert "data.jsonl, row 1, field 'label'" in line and "first 2 of 6" in line and "answer 2, 3" in line
    code, text, lines = check(tmp_path / "as-is", native(QUIZ, limit=2), ["validate", "t.yaml"], monkeypatch)
    assert code == 0 and lines == [], text


def test_a_limit_that_keeps_the_first_of_several_files(tmp_path, monkeypatch):
    """A glob over two subjects' files and a limit of the first file's size: the second subject is never asked.
    A limit that reaches into the second file leaves none out."""
    files = {
        "t.yaml": task_yaml(data="subj/*.jsonl", limit=6, breakdown="_file"),
        "subj/algebra.jsonl": jsonl(QUIZ),
        "subj/biology.jsonl": jsonl([{**r, "id": r["id"] + "b", "question": r["question"] + " (2)"} for r in QUIZ]),
    }
    _, _, lines = check(tmp_path / "first", files, ["validate", "t.yaml"], monkeypatch)
    line = finding(lines, "data.limit-biased")
    assert re.search(r"t\.yaml:\d+, field 'limit'", line) and "6 of 12 rows, all from 1 of the 2 files" in line
    assert "no row of biology.jsonl" in line
    files["t.yaml"] = task_yaml(data="subj/*.jsonl", limit=8, breakdown="_file")
    code, text, lines = check(tmp_path / "both", files, ["validate", "t.yaml"], monkeypatch)
    assert code == 0 and lines == [], text


def test_a_fallback_data_source_is_said_by_validate(tmp_path, monkeypatch):
    files = {
        "t.yaml": task_yaml(data=[{"path": "full/test.jsonl"}, {"path": "sample.jsonl"}]),
        "sample.jsonl": jsonl(QUIZ),
    }
    code, text, _ = check(tmp_path / "fallback", files, ["validate", "t.yaml"], monkeypatch)
    assert code == 0 and "warning: quiz: read sample.jsonl because an earlier source was unavailable" in text, text
    assert "full/test.jsonl" in text


def test_a_group_member_of_one_row_and_one_task_twice(tmp_path, monkeypatch):
    files = {"t.yaml": TWO.replace("DATA_A", "one.jsonl").replace("DATA_B", "data.jsonl"), "data.jsonl": jsonl(QUIZ)}
    files["one.jsonl"] = jsonl(QUIZ[:1])
    _, _, lines = check(tmp_path / "tiny", files, ["validate", "t.yaml"], monkeypatch)
    line = finding(lines, "group.tiny-member")
    assert re.search(r"t\.yaml:\d+, field 'group'", line) and "has 1 row(s)" in line and "'quizzes'" in line
    twice = {"t.yaml": TWO.replace("DATA_A", "data.jsonl").replace("DATA_B", "data.jsonl"), "data.jsonl": jsonl(QUIZ)}
    _, text, lines = check(tmp_path / "twice", twice, ["validate", "t.yaml"], monkeypatch)
    line = finding(lines, "task.duplicate")
    assert line.startswith("warning: quiz_b:") and "task 'quiz_a'" in line and "6 rows" in line, text
    other = [{**r, "id": "b" + r["id"], "question": "Again: " + r["question"]} for r in QUIZ]
    apart = {"t.yaml": TWO.replace("DATA_A", "data.jsonl").replace("DATA_B", "b.jsonl"), "data.jsonl": jsonl(QUIZ)}
    apart["b.jsonl"] = jsonl(other)
    code, text, lines = check(tmp_path / "apart", apart, ["validate", "t.yaml"], monkeypatch)
    assert code == 0 and lines == [], text


def test_group_members_whose_filters_overlap_name_the_rows_counted_twice(tmp_path, monkeypatch):
    """Two members of one group over one file of 60 rows, filtered to rows 1-40 and 31-60: rows 31-40 count twice
    in the group's mean. Filters that split the file are silent."""
    rows = [{**r, "id": f"{r['id']}-{n}", "question": f"{r['question']} ({n})"} for n in range(10) for r in QUIZ]
    two = TWO.replace("DATA_A", '{path: data.jsonl, id: id, filter: "{{ _row <= LOW }}"}')
    two = two.replace("DATA_B", '{path: data.jsonl, id: id, filter: "{{ _row >= HIGH }}"}')
    overlapping = {"t.yaml": two.replace("LOW", "40").replace("HIGH", "31"), "data.jsonl": jsonl(rows)}
    _, text, lines = check(tmp_path / "overlap", overlapping, ["validate", "t.yaml"], monkeypatch)
    line = finding(lines, "group.overlap")
    assert line.startswith("warning: quiz_b:") and "10 of the task's 30 rows" in line and "task 'quiz_a'" in line
    assert f"sample '{rows[30]['id']}'" in line and "'quizzes'" in line, line
    split = {"t.yaml": two.replace("LOW", "30").replace("HIGH", "31"), "data.jsonl": jsonl(rows)}
    code, text, lines = check(tmp_path / "split", split, ["validate", "t.yaml"], monkeypatch)
    assert code == 0 and lines == [], text


def test_a_limit_that_keeps_one_subject_of_a_file_ordered_by_subject(tmp_path, monkeypatch):
    """MMLU's subjects in one file, one after another: `limit: 12` keeps the first subject's rows only. The same
    rows interleaved, or a limit per part, are silent."""
    subjects = ["abstract_algebra", "anatomy", "astronomy"]
    rows = [
        {**r, "id": f"{s}-{n}-{r['id']}", "question": f"{s} {n}: {r['question']}", "subject": s}
        for s in subjects
        for n in range(3)
        for r in QUIZ
    ]
    task = task_yaml(data={"path": "data.jsonl", "id": "id"}, limit=12, breakdown="subject")
    _, text, lines = check(
        tmp_path / "one", {"t.yaml": task, "data.jsonl": jsonl(rows)}, ["validate", "t.yaml"], monkeypatch
    )
    line = finding(lines, "data.limit-biased")
    assert "keeps 12 of 54 rows" in line and "subject 'abstract_algebra'" in line and "3 values" in line, line
    assert "field 'subject'" in line
    mixed = [rows[i + j * 18] for i in range(18) for j in range(3)]
    code, text, lines = check(
        tmp_path / "mixed", {"t.yaml": task, "data.jsonl": jsonl(mixed)}, ["validate", "t.yaml"], monkeypatch
    )
    assert code == 0 and lines == [], text


def test_a_joined_file_that_repeats_a_key_in_place_of_another(tmp_path, monkeypatch):
    questions = jsonl([{k: v for k, v in r.items() if k != "label"} for r in QUIZ])
    keys = [{"qid": r["id"], "label": r["label"]} for r in QUIZ]
    task = task_yaml(data={"path": "q.jsonl", "join": "keys.jsonl"})
    repeated = {"t.yaml": task, "q.jsonl": questions, "keys.jsonl": jsonl([keys[0], keys[0], *keys[2:]])}
    code, text, lines = check(tmp_path / "repeated", repeated, ["validate", "t.yaml"], monkeypatch)
    assert code == 2 and "[data.join]" in text and "keys.jsonl, row 2, field 'qid'" in text, text
    aligned = {"t.yaml": task, "q.jsonl": questions, "keys.jsonl": jsonl(keys)}
    code, text, lines = check(tmp_path / "aligned", aligned, ["validate", "t.yaml"], monkeypatch)
    assert code == 0 and lines == [], text


@pytest.fixture
def run_args(tiny_model_dir):
    return ["run", "t.yaml", "-m", str(tiny_model_dir), "-o", "out", "-q"]


def test_run_limits_larger_than_the_data_or_leaving_one_row(tmp_path, monkeypatch, run_args):
    _, _, lines = check(tmp_path / "fifty", native(QUIZ), [*run_args, "--limit", "50"], monkeypatch)
    line = finding(lines, "data.limit-exceeds")
    assert "field '--limit'" in line and "--limit 50 is more than the 6 rows" in line
    _, _, lines = check(tmp_path / "tiny", native(QUIZ), [*run_args, "--limit", "0.01"], monkeypatch)
    assert "--limit 0.01 keeps 1 of the 6 rows" in finding(lines, "data.limit-tiny")
    for limit in ("6", "0.5"):
        code, text, lines = check(tmp_path / f"ok-{limit}", native(QUIZ), [*run_args, "--limit", limit], monkeypatch)
        assert code == 0 and lines == [], text


def test_run_records_a_limit_larger_than_the_data_in_a_fresh_process(tmp_path, tiny_model_dir):
    write(tmp_path, native(QUIZ))
    done = proctor("run", "t.yaml", "-m", str(tiny_model_dir), "-o", "out", "--limit", "50", cwd=tmp_path)
    assert "audit [data.limit-exceeds]" in done.stdout + done.stderr
    task = results(tmp_path / "out")["tasks"]["quiz"]
    (entry,) = [f for f in task["audit"] if f["rule"] == "data.limit-exceeds"]
    assert entry["field"] == "--limit" and "6 rows" in entry["message"]
    assert len(results_samples(tmp_path / "out")) == 6  # every row ran: the number is of 6 rows, not 50


def results_samples(run: Path) -> list:
    from tests.support.cli_runs import samples

    return samples(run)


# ---------------------------------------------------------------- lm-eval's and SEA-HELM's own settings


def lmeval(tmp_path, monkeypatch, files: dict) -> list[str]:
    pytest.importorskip("lm_eval")
    code, text, lines = check(tmp_path, files, ["validate", "quiz.yaml"], monkeypatch)
    assert code == 0, text
    return lines


@pytest.mark.fast
def test_lmeval_until_strings_inside_the_answers_and_a_one_token_limit(tmp_path, monkeypatch):
    until = lm(
        LM_GEN + "generation_kwargs:\n  until: ['P', 'B', 'W', 'S', 'I', '4', '6', '3', 'E']\n  max_gen_toks: 8\n"
    )
    line = finding(lmeval(tmp_path / "until", monkeypatch, until), "generation.stop-inside-answer")
    assert re.search(r"quiz\.yaml(:\d+)?, field 'generation_kwargs\.until'", line) and "of 6 of 6 rows" in line
    sentence = LM_GEN.replace('doc_to_target: "{{choices[label]}}"', 'doc_to_target: "It is {{choices[label]}} here"')
    short = lm(sentence + 'generation_kwargs:\n  until: ["\\n"]\n  max_gen_toks: 1\n')
    line = finding(lmeval(tmp_path / "short", monkeypatch, short), "generation.too-short")
    assert "field 'generation_kwargs.max_gen_toks'" in line and "max_gen_toks is 1" in line and "6 of 6 rows" in line
    fine = lm(LM_GEN + 'generation_kwargs:\n  until: ["\\n"]\n  max_gen_toks: 8\n' + LM_STRIP)
    assert lmeval(tmp_path / "fine", monkeypatch, fine) == []


def test_lmeval_empty_target_delimiter_glues_the_answers(tmp_path, monkeypatch):
    line = finding(lmeval(tmp_path / "glued", monkeypatch, lm(LM + 'target_delimiter: ""\n')), "prompt.glued-answer")
    assert "field 'target_delimiter'" in line and "6 of 6 documents" in line
    spaced_prompt = LM.replace('doc_to_text: "Q: {{question}}\\nA:"', 'doc_to_text: "Q: {{question}}\\nA: "')
    assert spaced_prompt != LM
    spaced = lm(spaced_prompt + 'target_delimiter: ""\n')
    assert lmeval(tmp_path / "spaced", monkeypatch, spaced) == []


@pytest.mark.fast
@pytest.mark.skipif(not SEA_CONFIG, reason="needs ../shared/examples/seahelm")
def test_seahelm_one_token_limit_and_an_empty_answer_tag(tmp_path, monkeypatch):
    one = sea(config=SEA_CONFIG.replace("max_tokens: 32", "max_tokens: 1", 1))
    _, _, lines = check(tmp_path / "one", one, SEA_ARGS, monkeypatch)
    line = finding(lines, "generation.too-short")
    assert "field 'languages.id.max_tokens'" in line and "max_tokens is 1" in line and "4 of 4 rows" in line
    empty = sea(config=SEA_CONFIG.replace('answer_tag: "Jawaban:"', 'answer_tag: ""', 1))
    _, _, lines = check(tmp_path / "empty", empty, SEA_ARGS, monkeypatch)
    assert "field 'languages.id.prompt_template.answer_tag'" in finding(lines, "extraction.tag-empty")
    code, text, lines = check(tmp_path / "fine", sea(), SEA_ARGS, monkeypatch)
    assert code == 0 and not rules_in(lines), text
