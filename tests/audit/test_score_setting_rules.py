"""Settings and texts that bias the number a task reports, through ``proctor validate``'s entry point (red team 9,
sections 14 to 17), each beside a right twin that stays silent:

- perplexity: a window of a few tokens (``perplexity.window``), texts cut at one length (``prompt.cut``), HTML
  markup in the texts (``text.escaped``), WikiText-style split punctuation under word_perplexity
  (``metrics.mismatch``; lm-eval's wikitext, which detokenizes, is silent), two fields glued in the text's
  template (``prompt.glued-text``), a row's id or URL scored with its text (``perplexity.metadata``);
- metrics: lm-eval's ``higher_is_better`` or ``aggregation`` against a known metric, GLM-130B's Accuracy_norm and
  acc_per_token on one-letter choices, f1 on one-number references (``metrics.mismatch``);
- brier_score on rows with two right choices (``metrics.mismatch``);
- selection: a limit over data ordered by a level (``data.limit-biased``), a breakdown of two-row parts
  (``breakdown.per-row``), a 6-row member beside a 40-row one (``group.tiny-member``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.audit_inputs import lmeval_quiz
from tests.support.cli_runs import QUESTIONS
from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast

STORY = (
    "In my palm is a clear stone, and inside it is a small ivory statuette. A guardian angel. Figured if you're "
    "going to be out at night getting hit by cars, you might as well have some backup. I look at him, feeling "
    "stunned. Like this is some sort of sign. But as I stare at him, his mouth curved in a confident grin, I don't "
    "care about signs"
)
TEXTS = [f"Story number {i} begins here. " + STORY + " And then it rained." * i for i in range(8)]
PPL = "name: ppl\nkind: perplexity\ndata: data.jsonl\ntext: 'TEXT'\n"


def _ppl(folder: Path, capsys, rows: list[dict], extra: str = "", text: str = "{{ text }}") -> list[str]:
    files = {"t.yaml": PPL.replace("TEXT", text) + extra, "data.jsonl": jsonl_text(rows)}
    return audit_lines(folder, files, capsys)


def _one(lines: list[str], rule_id: str) -> str:
    found = [line for line in lines if f"[{rule_id}]" in line]
    assert len(found) == 1, lines
    return found[0]


# ---------------------------------------------------------------- perplexity.window


def test_a_window_of_a_few_tokens_over_longer_texts_is_named(tmp_path, capsys):
    line = _one(_ppl(tmp_path, capsys, [{"text": t} for t in TEXTS], "perplexity:\n  window: 8\n"), "perplexity.window")
    assert "t.yaml:5" in line and "field 'perplexity.window'" in line and "window is 8 tokens" in line, line


@pytest.mark.parametrize(
    ("rows", "window"), [([{"text": t} for t in TEXTS], 512), ([{"text": f"A short text {i}."} for i in range(6)], 8)]
)
def test_a_whole_context_window_or_texts_within_it_are_silent(rows, window, tmp_path, capsys):
    assert _ppl(tmp_path, capsys, rows, f"perplexity:\n  window: {window}\n") == []


# ---------------------------------------------------------------- text.escaped: markup in perplexity texts


def test_html_tags_in_perplexity_texts_are_named(tmp_path, capsys):
    rows = [{"text": "<p>" + t.replace(". ", ".</p><p>", 2) + "</p>"} for t in TEXTS]
    line = _one(_ppl(tmp_path, capsys, rows), "text.escaped")
    assert "data.jsonl, row 1" in line and "field 'text'" in line and "8 of the 8 texts" in line, line
    assert "'<p>'" in line


def test_one_text_that_quotes_a_tag_is_silent(tmp_path, capsys):
    rows = [{"text": t} for t in TEXTS[:7]] + [{"text": "Write <b> before the bold word, " + STORY}]
    rows += [{"text": t.replace("Story", "Tale")} for t in TEXTS]
    assert _ppl(tmp_path, capsys, rows) == []


# ---------------------------------------------------------------- metrics.mismatch: WikiText-style spacing


def _split(text: str) -> str:
    """The text as WikiText writes it: punctuation and clitics apart, hyphens as ' @-@ '."""
    for mark in (",", ".", "'s", "n't"):
        text = text.replace(mark, " " + mark + " ")
    return " ".join(text.replace("-", " @-@ ").split())


def test_wikitext_style_spacing_under_word_perplexity_is_named(tmp_path, capsys):
    rows = [{"text": _split(t)} for t in TEXTS]
    line = _one(_ppl(tmp_path, capsys, rows, "metrics: [word_perplexity]\n"), "metrics.mismatch")
    assert "t.yaml:5" in line and "field 'metrics'" in line and "WikiText-style" in line, line


def test_the_same_texts_as_written_or_scored_per_byte_are_silent(tmp_path, capsys):
    assert _ppl(tmp_path / "written", capsys, [{"text": t} for t in TEXTS], "metrics: [word_perplexity]\n") == []
    split = [{"text": _split(t)} for t in TEXTS]
    assert _ppl(tmp_path / "bytes", capsys, split, "metrics: [bits_per_byte]\n") == []


LM_ROLLING = """\
task: wiki
dataset_path: json
dataset_kwargs:
  data_files:
    test: test.jsonl
output_type: loglikelihood_rolling
test_split: test
doc_to_text: ""
TARGET
metric_list:
  - metric: word_perplexity
  - metric: bits_per_byte
"""


def _lm_rolling(folder: Path, capsys, target: str, args: list[str]) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)  # the caller's cwd: lm-eval reads data_files from it
    import lm_eval.tasks

    shutil.copy(Path(lm_eval.tasks.__file__).parent / "wikitext" / "preprocess_wikitext.py", folder)
    files = {
        "quiz.yaml": LM_ROLLING.replace("TARGET", target),
        "test.jsonl": jsonl_text([{"page": _split(t)} for t in TEXTS]),
    }
    return audit_lines(folder, files, capsys, [*args, "quiz.yaml"])


def test_lmeval_rolling_documents_scored_as_split_are_named(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = _one(_lm_rolling(tmp_path, capsys, 'doc_to_target: "{{page}}"', []), "metrics.mismatch")
    assert "quiz.yaml" in line and "field 'metric_list'" in line and "WikiText-style" in line, line


def test_lmeval_wikitext_detokenizer_is_silent(tmp_path, capsys, monkeypatch):
    """lm-eval's own wikitext task scores the page detokenized (its word count is the benchmark's own): the task
    from lm-eval's catalogue, on pages written WikiText-style, and a copy of it beside its task file."""
    monkeypatch.chdir(tmp_path)
    target = (
        "doc_to_target: !function preprocess_wikitext.wikitext_detokenizer\n"
        "process_results: !function preprocess_wikitext.process_results"
    )
    assert _lm_rolling(tmp_path, capsys, target, ["--trust-task-code"]) == []
    data = f"EleutherAI/wikitext_document_level:wikitext-2-raw-v1:test={tmp_path / 'test.jsonl'}"
    assert audit_lines(tmp_path, {}, capsys, ["lm_eval:wikitext", "--lmeval-data", data]) == []


# ---------------------------------------------------------------- prompt.cut: texts cut before they came


def test_texts_cut_at_one_length_are_named(tmp_path, capsys):
    line = _one(_ppl(tmp_path, capsys, [{"text": t[:150]} for t in TEXTS]), "prompt.cut")
    assert "data.jsonl, row 1" in line and "field 'text'" in line and "exactly 150 characters" in line, line


def test_texts_of_their_own_lengths_are_silent(tmp_path, capsys):
    rows = [{"text": t[: 150 + 7 * i]} for i, t in enumerate(TEXTS)]
    assert _ppl(tmp_path, capsys, rows) == []


# ---------------------------------------------------------------- prompt.glued-text: two fields side by side


TITLED = [{"title": f"Story {i}", "text": t} for i, t in enumerate(TEXTS)]


def test_two_fields_printed_side_by_side_are_named(tmp_path, capsys):
    line = _one(_ppl(tmp_path, capsys, TITLED, text="{{ title }}{{ text }}"), "prompt.glued-text")
    assert "data.jsonl, row 1" in line and "field 'text'" in line and "'Story 0Story number" in line, line


def test_fields_with_a_line_break_between_are_silent(tmp_path, capsys):
    assert _ppl(tmp_path, capsys, TITLED, text="{{ title }}\n\n  {{ text }}") == []


# ---------------------------------------------------------------- perplexity.metadata


def test_a_rows_id_and_url_scored_with_its_text_are_named(tmp_path, capsys):
    rows = [{"id": f"doc-{i:05}", "url": f"https://example.org/{i}", "text": t} for i, t in enumerate(TEXTS)]
    line = _one(_ppl(tmp_path, capsys, rows, text="id={{ id }} url={{ url }}\n\n  {{ text }}"), "perplexity.metadata")
    assert "data.jsonl, row 1" in line and "field 'id'" in line and "'doc-00000'" in line, line


def test_a_title_before_the_text_is_silent(tmp_path, capsys):
    rows = [{**r, "id": f"doc-{i}"} for i, r in enumerate(TITLED)]
    assert _ppl(tmp_path, capsys, rows, text="{{ title }}\n\n  {{ text }}") == []


# ---------------------------------------------------------------- metrics.mismatch: lm-eval's metric settings


COLOURS = ["red", "green", "blue", "white", "black", "yellow"]
QUIZ = [
    {"query": f"Question {i}: which colour is colour {i}?", "choices": (COLOURS[i:] + COLOURS[:i])[:4], "gold": i % 4}
    for i in range(6)
]
LM_MC = lmeval_quiz(
    '"{{query}}\\nAnswer:"',
    "choices",
    "gold",
    "metric_list:\n  - metric: METRIC\n    aggregation: AGGREGATION\n    higher_is_better: BETTER\n",
)


def _lm_metric(folder: Path, capsys, metric: str, aggregation: str, better: str) -> list[str]:
    text = LM_MC.replace("METRIC", metric).replace("AGGREGATION", aggregation).replace("BETTER", better)
    files = {"quiz.yaml": text, "test.jsonl": jsonl_text(QUIZ)}
    return audit_lines(folder, files, capsys, ["quiz.yaml"])


@pytest.mark.parametrize(
    ("aggregation", "better", "words"),
    [("mean", "false", "higher_is_better: false"), ("median", "true", "aggregates acc by 'median'")],
)
def test_lmeval_acc_ranked_lower_is_better_or_aggregated_by_median_is_named(
    aggregation, better, words, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    line = _one(_lm_metric(tmp_path, capsys, "acc", aggregation, better), "metrics.mismatch")
    assert "quiz.yaml" in line and "field 'metric_list'" in line and words in line, line


def test_lmeval_acc_by_its_mean_higher_is_better_is_silent(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _lm_metric(tmp_path, capsys, "acc", "mean", "true") == []


# ---------------------------------------------------------------- metrics.mismatch: normalised accuracies, f1

GLM = """\
name: "glmtask"
type: "mul"
path: "data"
file-pattern:
  test: "**/test.jsonl"
micro-batch-size: 2
metrics: ["Accuracy", "METRIC"]
"""


def _glm(folder: Path, capsys, metric: str, choices: list[str]) -> list[str]:
    rows = [
        {"inputs_pretokenized": f"Question {i}?", "choices_pretokenized": choices, "label": i % 4} for i in range(6)
    ]
    files = {"glm.yaml": GLM.replace("METRIC", metric), "data/prompt_1/test.jsonl": jsonl_text(rows)}
    return audit_lines(folder, files, capsys, [str(folder / "glm.yaml")])


def test_glm_accuracy_norm_on_letters_is_named(tmp_path, capsys):
    line = _one(_glm(tmp_path, capsys, "Accuracy_norm", ["A", "B", "C", "D"]), "metrics.mismatch")
    assert "glm.yaml:7" in line and "field 'metrics'" in line and "Accuracy_norm divides" in line, line


def test_glm_accuracy_norm_on_answers_of_their_own_lengths_is_silent(tmp_path, capsys):
    assert _glm(tmp_path, capsys, "Accuracy_norm", ["red", "green", "deep blue", "white"]) == []


NATIVE_MC = """\
name: letters
kind: multiple_choice
data: data.jsonl
prompt: "{{ query }}\\nA. {{ choices[0] }}\\nB. {{ choices[1] }}\\nC. {{ choices[2] }}\\nD. {{ choices[3] }}\\nAnswer:"
choices: CHOICES
target: "{{ gold }}"
metrics: [acc, acc_per_token]
"""


@pytest.mark.parametrize(
    ("choices", "named"), [("[A, B, C, D]", True), ('"{{ choices }}"', False)], ids=["letters", "texts"]
)
def test_acc_per_token_on_one_letter_choices_is_named(choices, named, tmp_path, capsys):
    files = {"t.yaml": NATIVE_MC.replace("CHOICES", choices), "data.jsonl": jsonl_text(QUIZ)}
    lines = audit_lines(tmp_path, files, capsys)
    if not named:
        assert lines == []
        return
    line = _one(lines, "metrics.mismatch")
    assert "t.yaml:7" in line and "field 'metrics'" in line and "acc_per_token divides" in line, line


GEN = """\
name: sums
kind: generate
data: data.jsonl
prompt: "Question: {{ question }}\\nAnswer:"
target: "{{ answer }}"
metrics: [f1]
generation: {stop: ["\\n"], max_tokens: 16}
"""


def test_f1_on_one_number_references_is_named(tmp_path, capsys):
    rows = [{"question": f"What is {i} times 12?", "answer": str(12 * i)} for i in range(1, 7)]
    line = _one(audit_lines(tmp_path, {"t.yaml": GEN, "data.jsonl": jsonl_text(rows)}, capsys), "metrics.mismatch")
    assert "t.yaml:6" in line and "field 'metrics'" in line and "one number" in line, line


def test_f1_on_answers_of_several_words_is_silent(tmp_path, capsys):
    rows = [{"question": f"Where is city {i}?", "answer": f"north of the river {i}"} for i in range(6)]
    assert audit_lines(tmp_path, {"t.yaml": GEN, "data.jsonl": jsonl_text(rows)}, capsys) == []


# ---------------------------------------------------------------- data.limit-biased: data ordered by a level

LEVELS = [1] * 12 + [2] * 20 + [3] * 6 + [4] * 2
SORTED = [{"question": f"What is {i} + {i}?", "answer": str(2 * i), "level": v} for i, v in enumerate(LEVELS)]
LIMITED = GEN.replace("metrics: [f1]\n", "limit: 10\n")


@pytest.mark.parametrize("key", ["level", "difficulty"])
def test_a_limit_over_rows_ordered_by_a_level_is_named(key, tmp_path, capsys):
    names = {1: "easy", 2: "medium", 3: "hard", 4: "expert"}
    rows = [{**r, key: r["level"] if key == "level" else names[r["level"]]} for r in SORTED]
    rows = [{k: v for k, v in r.items() if k != "level" or key == "level"} for r in rows]
    lines = audit_lines(tmp_path, {"t.yaml": LIMITED, "data.jsonl": jsonl_text(rows)}, capsys)
    line = _one(lines, "data.limit-biased")
    assert "data.jsonl, row 1" in line and f"field '{key}'" in line and "ordered by" in line, line


def test_a_limit_over_shuffled_levels_is_silent(tmp_path, capsys):
    rows = [{**r, "level": LEVELS[(i * 7) % len(LEVELS)]} for i, r in enumerate(SORTED)]
    assert audit_lines(tmp_path, {"t.yaml": LIMITED, "data.jsonl": jsonl_text(rows)}, capsys) == []


# ---------------------------------------------------------------- breakdown.per-row: parts of a row or two

BREAKDOWN = GEN.replace("metrics: [f1]\n", "breakdown: topic\n")


@pytest.mark.parametrize(("per_part", "named"), [(2, True), (6, False)])
def test_a_breakdown_into_parts_of_two_rows_is_named(per_part, named, tmp_path, capsys):
    rows = [{"question": f"What is {i} + 1?", "answer": str(i + 1), "topic": f"t{i // per_part}"} for i in range(30)]
    lines = audit_lines(tmp_path, {"t.yaml": BREAKDOWN, "data.jsonl": jsonl_text(rows)}, capsys)
    if not named:
        assert lines == []
        return
    line = _one(lines, "breakdown.per-row")
    assert "t.yaml:6" in line and "field 'breakdown'" in line and "15 parts over 30 rows" in line, line


def test_parts_made_small_by_a_limit_are_silent(tmp_path, capsys):
    """The parts are counted in the data: a limit (a smoke run's) makes them small by choice."""
    rows = [{"question": f"What is {i} + 1?", "answer": str(i + 1), "topic": f"t{i % 5}"} for i in range(30)]
    files = {"t.yaml": BREAKDOWN + "limit: 8\n", "data.jsonl": jsonl_text(rows)}
    assert audit_lines(tmp_path, files, capsys) == []


# ---------------------------------------------------------------- group.tiny-member: a member far smaller

GROUP = """\
defaults:
  kind: generate
  prompt: "Question: {{ question }}\\nAnswer:"
  target: "{{ answer }}"
  generation: {stop: ["\\n"], max_tokens: 16}
tasks:
  - name: small
    group: suite
    data: a.jsonl
    limit: LIMIT
  - name: large
    group: suite
    data: b.jsonl
"""


@pytest.mark.parametrize(("limit", "named"), [(6, True), (15, False)])
def test_a_member_of_six_rows_beside_one_of_forty_is_named(limit, named, tmp_path, capsys):
    a = [{"question": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(40)]
    b = [{"question": f"What is {i} + 2?", "answer": str(i + 2)} for i in range(40)]
    files = {"t.yaml": GROUP.replace("LIMIT", str(limit)), "a.jsonl": jsonl_text(a), "b.jsonl": jsonl_text(b)}
    lines = audit_lines(tmp_path, files, capsys)
    if not named:
        assert lines == []
        return
    line = _one(lines, "group.tiny-member")
    assert "t.yaml:10" in line and "field 'group'" in line and "task 'small' evaluates 6 rows" in line, line


# ---------------------------------------------------------------- metrics.mismatch: brier_score, several golds
BRIER = """\
name: quiz
kind: multiple_choice
data: {path: data.jsonl, id: id}
prompt: "Q: {{ question }}\\nA:"
choices: "{{ choices }}"
target: "TARGET"
metrics: METRICS
"""


def test_brier_score_on_rows_with_two_right_choices_is_named_and_one_right_choice_is_not(tmp_path, capsys):
    """Red team 12, probe 182: a row whose target names two choices is scored against a vector with two ones,
    whose best score is 0.5, not 0; the mean mixes that scale with the one-answer rows'."""

    def lines(folder, target, metrics):
        task = BRIER.replace("TARGET", target).replace("METRICS", metrics)
        found = audit_lines(folder, {"t.yaml": task, "data.jsonl": jsonl_text(QUESTIONS)}, capsys)
        return [line for line in found if "brier_score" in line]

    two = "{{ [0, 2] if id == 'c' else label }}"
    named = lines(tmp_path / "two", two, "[acc, brier_score]")
    assert len(named) == 1 and "[metrics.mismatch]" in named[0], named
    assert "data.jsonl, row 3, field 'target'" in named[0] and "brier_score with 2 right choices" in named[0]
    assert "(1 of 5 scored rows" in named[0] and "is 0.5 (1/2 on each)" in named[0], named
    assert lines(tmp_path / "one", "{{ label }}", "[acc, brier_score]") == []
    assert lines(tmp_path / "acc", two, "[acc]") == []
