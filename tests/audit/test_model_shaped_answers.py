"""Generated answers read back as a model writes them, not as the reference stands (``audit/answer_shapes.py``):
an extraction regex that reads the first number of the reasoning a step-by-step prompt asks for, the optional
phrase's group, a ``$`` that '18.' never meets, a case-sensitive ``(yes|no)`` under 'Answer Yes or No.'
(``extraction.cuts-reference``, lm-eval's ``lmeval.filter-cuts-reference``), and a stop string that is an answer
as the prompt offers it (``generation.stop-inside-answer``). Through ``proctor validate``'s entry point, each with
a right twin that stays silent; lm-eval's own GSM8K chain-of-thought files stay silent on real rows."""

from __future__ import annotations

import json

import pytest

from tests.conftest import shared_path
from tests.support.validate_lines import audit_lines, jsonl_text

NUMBERS = [
    {"question": "Tom has 12 apples and gives 4 away. How many are left?", "answer": "8"},
    {"question": "A box holds 6 eggs. How many eggs are in 3 boxes?", "answer": "18"},
    {"question": "Ann reads 5 pages a day for 9 days. How many pages?", "answer": "45"},
    {"question": "A bus has 30 seats and 11 are taken. How many are free?", "answer": "19"},
    {"question": "Sam earns 7 dollars an hour for 8 hours. How much?", "answer": "56"},
]
YES_NO = [{"question": f"Is claim {i} of the passage supported?", "answer": "yes" if i % 3 else "no"} for i in range(9)]


def _task(prompt: str, generation: str, extraction: str = "") -> str:
    return (
        "name: shaped\nkind: generate\ndata: data.jsonl\n"
        f"prompt: {json.dumps(prompt)}\n"
        "target: '{{ answer }}'\n"
        f"generation: {generation}\n" + (f"extraction: {extraction}\n" if extraction else "")
    )


STEP_BY_STEP = "Question: {{ question }}\nLet's think step by step."
SHORT = "Question: {{ question }}\nAnswer:"
YES_OR_NO = "{{ question }}\nAnswer Yes or No.\nAnswer:"

# (rule, a broken task, its right twin, the rows, the field named, a word of the message)
CASES = [
    (  # the first number of the reasoning is read
        "extraction.cuts-reference",
        _task(STEP_BY_STEP, "{max_tokens: 256, stop: ['Question:']}", "{regex: '(-?\\d+)'}"),
        _task(STEP_BY_STEP, "{max_tokens: 256, stop: ['Question:']}", "{regex: '(-?\\d+)(?!.*\\d)'}"),
        NUMBERS,
        "extraction.regex",
        "read as '3'",
    ),
    (  # group 1 is the optional phrase, not the number
        "extraction.cuts-reference",
        _task(SHORT, '{max_tokens: 16, stop: ["\\n\\n"]}', "{regex: '(answer is )?(-?\\d+)', group: 1}"),
        _task(SHORT, '{max_tokens: 16, stop: ["\\n\\n"]}', "{regex: '(answer is )?(-?\\d+)', group: 2}"),
        NUMBERS,
        "extraction.regex",
        "read as 'answer is'",
    ),
    (  # '18.' never meets the $
        "extraction.cuts-reference",
        _task(SHORT, '{max_tokens: 16, stop: ["\\n\\n"]}', "{regex: '(-?\\d+)$', fallback: none}"),
        _task(SHORT, '{max_tokens: 16, stop: ["\\n\\n"]}', "{regex: '(-?\\d+)\\W*$', fallback: none}"),
        NUMBERS,
        "extraction.regex",
        "with a full stop",
    ),
    (  # 'Yes' as the prompt offers it, a case-sensitive regex, nothing to fall back on
        "extraction.cuts-reference",
        _task(YES_OR_NO, '{max_tokens: 4, stop: ["\\n\\n"]}', "{regex: '\\b(yes|no)\\b', fallback: none}"),
        _task(
            YES_OR_NO,
            '{max_tokens: 4, stop: ["\\n\\n"]}',
            "{regex: '\\b(yes|no)\\b', fallback: none, ignore_case: true}",
        ),
        YES_NO,
        "extraction.regex",
        "as the prompt offers it",
    ),
    (  # a stop string meant for 'No more' is the answer 'No' the prompt offers
        "generation.stop-inside-answer",
        _task(YES_OR_NO, "{max_tokens: 4, stop: ['No']}"),
        _task(YES_OR_NO, '{max_tokens: 4, stop: ["\\n"]}'),
        YES_NO,
        "generation.stop",
        "which a model writes 'No'",
    ),
]


@pytest.mark.fast
@pytest.mark.parametrize("rule, broken, right, rows, field, words", CASES, ids=[c[-1] for c in CASES])
def test_answers_shaped_as_a_model_writes_them(rule, broken, right, rows, field, words, tmp_path, capsys):
    found = audit_lines(tmp_path / "broken", {"t.yaml": broken, "data.jsonl": jsonl_text(rows)}, capsys)
    named = [line for line in found if f"[{rule}]" in line]
    assert named, found
    assert f"field '{field}'" in named[0] and words in named[0], named[0]
    if field == "extraction.regex":  # the first row it misreads
        assert "data.jsonl, row 1," in named[0], named[0]
    else:
        assert "t.yaml:6" in named[0], named[0]
    assert audit_lines(tmp_path / "right", {"t.yaml": right, "data.jsonl": jsonl_text(rows)}, capsys) == []


SILENT = [
    (  # the phrase the prompt asks for, read by a regex that needs it: no bare answer is tried
        "Question: {{ question }}\nLet's think step by step, then write 'The answer is N'.",
        "{regex: 'The answer is (-?[\\d,]+)', fallback: none}",
    ),
    (  # lower case, after 'So': as BIG-Bench Hard's chain-of-thought prompts end
        "{{ question }}\nLet's think step by step, and end with 'So the answer is N.'",
        "{regex: '(?<=the answer is )(-?\\d+)', fallback: none}",
    ),
    (  # a marker of the regex's own, closed as the prompt says: no phrase is guessed for it
        "{{ question }}\nThink step by step, then give the number as <answer>N</answer>.",
        "{regex: '<answer>(.*?)</answer>', fallback: none}",
    ),
    (  # a short answer, read wherever it stands
        "Question: {{ question }}\nAnswer:",
        "{regex: '(-?\\d+)', fallback: none}",
    ),
]


@pytest.mark.fast
@pytest.mark.parametrize("prompt, extraction", SILENT)
def test_regexes_that_read_the_answer_as_the_prompt_asks_for_it_are_silent(prompt, extraction, tmp_path, capsys):
    task = _task(prompt, "{max_tokens: 256, stop: ['Question:']}", extraction)
    assert audit_lines(tmp_path, {"t.yaml": task, "data.jsonl": jsonl_text(NUMBERS)}, capsys) == []


LMEVAL = """task: shaped_lm
dataset_path: json
dataset_kwargs:
  data_files:
    test: test.jsonl
output_type: generate_until
test_split: test
doc_to_text: "Question: {{{{question}}}}\\nLet's think step by step."
doc_to_target: "{{{{answer.split('#### ')[-1]}}}}"
generation_kwargs:
  until: ["Question:"]
filter_list:
  - name: {name}
    filter:
      - function: regex
        regex_pattern: "{regex}"
        group_select: {group}
      - function: take_first
metric_list:
  - metric: exact_match
    regexes_to_ignore: [",", "\\\\.$"]
"""


def test_lm_eval_first_number_under_step_by_step_is_named_and_the_last_is_not(tmp_path, capsys, monkeypatch):
    pytest.importorskip("lm_eval")
    rows = "\n".join(shared_path("data", "gsm8k", "test.jsonl").read_text().splitlines()[:8]) + "\n"

    def lines(folder, name, regex, group):
        folder.mkdir()
        monkeypatch.chdir(folder)  # lm-eval reads data_files from the working folder
        files = {"quiz.yaml": LMEVAL.format(name=name, regex=regex, group=group), "test.jsonl": rows}
        found = audit_lines(folder, files, capsys, [str(folder / "quiz.yaml")])
        return [line for line in found if "[lmeval.filter-cuts-reference]" in line]

    first = lines(tmp_path / "first", "first-number", "(-?[0-9]+)", 0)
    assert first and "filter 'first-number'" in first[0] and "read as '3'" in first[0], first
    assert "field 'filter_list[first-number]'" in first[0]
    assert lines(tmp_path / "last", "last-number", "(-?[0-9][0-9,]*)", -1) == []


@pytest.mark.parametrize("name", ["gsm8k-cot", "gsm8k-cot-zeroshot", "gsm8k-cot-llama"])
def test_lm_evals_own_chain_of_thought_files_are_silent(name, tmp_path, capsys, monkeypatch):
    pytest.importorskip("lm_eval")
    from proctor.dialects.lmeval.library import catalogue_root

    rows = "\n".join(shared_path("data", "gsm8k", "test.jsonl").read_text().splitlines()[:8]) + "\n"
    monkeypatch.chdir(tmp_path)
    task = (
        f"include: {catalogue_root()}/gsm8k/{name}.yaml\ntask: local_{name.replace('-', '_')}\ndataset_path: json\n"
        "dataset_name: null\ndataset_kwargs:\n  data_files:\n    test: test.jsonl\n    train: test.jsonl\n"
    )
    found = audit_lines(tmp_path, {"quiz.yaml": task, "test.jsonl": rows}, capsys, [str(tmp_path / "quiz.yaml")])
    assert [line for line in found if "cuts-reference" in line] == []


def _gsm8k_rows(count: int = 8) -> list[dict[str, str]]:
    return [json.loads(line) for line in shared_path("data", "gsm8k", "test.jsonl").read_text().splitlines()[:count]]


@pytest.mark.fast
def test_exact_match_on_the_whole_worked_solution_is_named_and_on_its_number_is_not(tmp_path, capsys):
    """GSM8K's answer field is the worked solution with its <<...>> marks: exact match against it, with nothing
    extracted, scores about 0 for any model (metrics.mismatch); its number after '#### ' is a short answer."""
    rows = jsonl_text(_gsm8k_rows())
    whole = "name: gsm\nkind: generate\ndata: data.jsonl\nprompt: 'Question: {{ question }}'\ntarget: '{{ answer }}'\n"
    whole += "metrics: [exact_match]\ngeneration: {max_tokens: 256, stop: ['Question:']}\n"
    found = audit_lines(tmp_path / "whole", {"t.yaml": whole, "data.jsonl": rows}, capsys)
    named = [line for line in found if "[metrics.mismatch]" in line]
    assert named and "t.yaml:6, field 'metrics'" in named[0] and "over several lines" in named[0], found
    number = whole.replace("'{{ answer }}'", "\"{{ answer.split('#### ')[-1] }}\"")
    assert audit_lines(tmp_path / "number", {"t.yaml": number, "data.jsonl": rows}, capsys) == []


GLM = 'name: "glmtask"\ntype: "gen"\npath: "data"\nfile-pattern:\n  test: "**/test.jsonl"\nmetrics: ["EM"]\n'


@pytest.mark.fast
def test_a_glm_generation_without_a_stop_is_unbounded_and_with_one_is_not(tmp_path, capsys):
    """GLM-130B's gen tasks: max_gen_length (128 by default) and no stop, scored by EM on short answers
    (generation.unbounded-answer reads GLM's own keys and its metric names, EM and F1)."""
    rows = [
        {"inputs_pretokenized": f"Question: capital of country {i}?\nAnswer:", "targets_pretokenized": [c]}
        for i, c in enumerate(["Lima", "Paris", "Tokyo", "Rome", "Oslo", "Cairo"])
    ]
    data = {"data/prompt_1/test.jsonl": jsonl_text(rows)}
    unbounded = GLM + "max_gen_length: 128\n"
    found = audit_lines(tmp_path / "open", {"glm.yaml": unbounded, **data}, capsys, [str(tmp_path / "open/glm.yaml")])
    named = [line for line in found if "[generation.unbounded-answer]" in line]
    assert named and "glm.yaml:7, field 'stop'" in named[0], found
    bounded = unbounded + 'stop: ["\\n"]\n'
    assert (
        audit_lines(tmp_path / "stop", {"glm.yaml": bounded, **data}, capsys, [str(tmp_path / "stop/glm.yaml")]) == []
    )


SAMPLED = """task: sampled
dataset_path: json
dataset_kwargs:
  data_files:
    test: test.jsonl
output_type: generate_until
test_split: test
doc_to_text: "Q: {{question}}\\nA:"
doc_to_target: "{{answer.split('#### ')[-1]}}"
generation_kwargs:
  until: ["\\n"]
  do_sample: SAMPLE
  temperature: 1.0
metric_list:
  - metric: exact_match
"""


def test_lm_eval_sampling_with_one_repeat_is_named_and_greedy_is_not(tmp_path, capsys, monkeypatch):
    pytest.importorskip("lm_eval")
    rows = jsonl_text(_gsm8k_rows())

    def lines(folder, sample):
        folder.mkdir()
        monkeypatch.chdir(folder)  # lm-eval reads data_files from the working folder
        files = {"quiz.yaml": SAMPLED.replace("SAMPLE", sample), "test.jsonl": rows}
        found = audit_lines(folder, files, capsys, [str(folder / "quiz.yaml")])
        return [line for line in found if "[generation.sampling]" in line]

    sampled = lines(tmp_path / "sampled", "true")
    assert sampled and "field 'generation_kwargs.do_sample'" in sampled[0], sampled
    assert lines(tmp_path / "greedy", "false") == []


GLM_ROWS = [
    ("Onion", "Onion; Allium cepa; Bulb onion"),
    ("Horse", "Horse; Equus caballus"),
    ("Antelope", "Antelope; Antilopina"),
]


@pytest.mark.fast
def test_glm_targets_glued_by_semicolons_are_named_and_listed_ones_are_not(tmp_path, capsys):
    """One GLM target holding the aliases glued with '; ' (references.aliases-lost): no answer matches it."""

    def lines(folder, glued):
        rows = [
            {
                "inputs_pretokenized": f"Question: what is thing {i}?\nAnswer:",
                "targets_pretokenized": [text] if glued else text.split("; "),
            }
            for i, (_, text) in enumerate(GLM_ROWS * 2)
        ]
        files = {"glm.yaml": GLM + 'max_gen_length: 16\nstop: ["\\n"]\n', "data/prompt_1/test.jsonl": jsonl_text(rows)}
        found = audit_lines(folder, files, capsys, [str(folder / "glm.yaml")])
        return [line for line in found if "[references.aliases-lost]" in line]

    glued = lines(tmp_path / "glued", True)
    assert glued and "test.jsonl, row 1, field 'targets_pretokenized'" in glued[0] and "'; '" in glued[0], glued
    assert lines(tmp_path / "listed", False) == []


@pytest.mark.fast
def test_glm_accuracy_on_references_ending_with_a_full_stop_is_named_and_em_is_not(tmp_path, capsys):
    """GLM's generation Accuracy compares the stripped texts as they are: 'Onion.' is matched by no answer that
    stops at the line's end without the full stop (metrics.mismatch)."""
    rows = [
        {"inputs_pretokenized": f"Question: what is thing {i}?\nAnswer:", "targets_pretokenized": [f"{name}."]}
        for i, (name, _) in enumerate(GLM_ROWS * 2)
    ]
    data = {"data/prompt_1/test.jsonl": jsonl_text(rows)}
    settings = 'max_gen_length: 16\nstop: ["\\n"]\n'
    accuracy = GLM.replace('["EM"]', '["Accuracy"]') + settings
    found = audit_lines(tmp_path / "acc", {"glm.yaml": accuracy, **data}, capsys, [str(tmp_path / "acc/glm.yaml")])
    named = [line for line in found if "[metrics.mismatch]" in line]
    assert named and "glm.yaml:6, field 'metrics'" in named[0] and "'Onion.'" in named[0], found
    assert (
        audit_lines(tmp_path / "em", {"glm.yaml": GLM + settings, **data}, capsys, [str(tmp_path / "em/glm.yaml")])
        == []
    )


@pytest.mark.fast
def test_top_p_under_greedy_decoding_is_named_and_a_seed_alone_is_not(tmp_path, capsys):
    rows = jsonl_text(NUMBERS)
    greedy = _task(SHORT, '{max_tokens: 8, stop: ["\\n"], top_p: 0.9}')
    found = audit_lines(tmp_path / "greedy", {"t.yaml": greedy, "data.jsonl": rows}, capsys)
    named = [line for line in found if "[generation.sampling]" in line]
    assert named and "t.yaml:6, field 'generation.top_p'" in named[0], found
    plain = _task(SHORT, '{max_tokens: 8, stop: ["\\n"], seed: 7}')  # a seed alone is harmless
    assert audit_lines(tmp_path / "plain", {"t.yaml": plain, "data.jsonl": rows}, capsys) == []


LM_BLEU = """\
task: rt_bleu
dataset_path: json
dataset_kwargs:
  data_files:
    test: DATA
test_split: test
output_type: generate_until
doc_to_text: "Translate: {{src}}\\nTranslation:"
doc_to_target: "{{tgt}}"
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 16
metric_list:
  - metric: bleu
    aggregation: bleu
    higher_is_better: true
"""


@pytest.mark.parametrize("words, named", [(2, True), (6, False)])
def test_corpus_bleu_over_references_under_four_words_is_named(words, named, tmp_path, capsys, monkeypatch):
    """Red team 12 (148, 151): lm-eval's corpus BLEU over two-word references is 0 whatever the answers (no
    4-gram); six-word references can match."""
    monkeypatch.chdir(tmp_path)
    rows = [{"src": f"Satz {i}", "tgt": " ".join(f"w{i}{k}" for k in range(words))} for i in range(6)]
    files = {"lm.yaml": LM_BLEU.replace("DATA", str(tmp_path / "d.jsonl")), "d.jsonl": jsonl_text(rows)}
    found = [x for x in audit_lines(tmp_path, files, capsys, [str(tmp_path / "lm.yaml")]) if "bleu multiplies" in x]
    assert bool(found) is named, found
    if named:
        assert "[metrics.mismatch]" in found[0] and "field 'metrics'" in found[0] and "6 of 6 rows" in found[0]
