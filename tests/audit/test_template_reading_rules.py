"""Rules that read what a task's templates write out, through ``proctor validate``'s entry point, each with a
right twin that stays silent: a letter map typed out of order (``labels.permuted-map``), a prompt that shows the
first part of a text whose rest the choices continue (``prompt.drops-part``), a lettered listing that prints one
option twice (``prompt.options-listed-wrong``), a generate task's system text that prints the answer under another
field's name (``prompt.shows-target``), and few-shot examples without their questions or re-spaced copies of the
evaluated rows (``fewshot.settings``, ``fewshot.leak``)."""

from __future__ import annotations

import pytest
import yaml

from tests.support.validate_lines import audit_lines, jsonl_text

pytestmark = pytest.mark.fast
TWICE = "prompt.field-twice"
SHOWS_ROW = "prompt.shows-evaluated-row"
OVER_MAX = "prompt.over-max-length"
DOUBLED, BY_HAND, PREFIXED = "prompt.doubled-cue", "chat.written-by-hand", "choices.letter-prefixed"
INVERTED = "prompt.inverted-condition"
PERMUTED, DROPS_PART, LISTED = "labels.permuted-map", "prompt.drops-part", "prompt.options-listed-wrong"

LETTERS = "ABCDE"
CSQA = [
    {
        "id": f"q{i}",
        "stem": f"Where would you keep item number {i}?",
        "choices": [{"label": c, "text": f"place {c.lower()}{i}"} for c in LETTERS],
        "answerKey": LETTERS[i % 5],
    }
    for i in range(10)
]


def _task(**fields) -> str:
    task = {"name": "quiz", "kind": "multiple_choice", "data": {"path": "data.jsonl", "id": "id"}}
    task.update(fields)
    return yaml.safe_dump(task, sort_keys=False)


def _lines(folder, capsys, rows, **fields) -> list[str]:
    return audit_lines(folder, {"t.yaml": _task(**fields), "data.jsonl": jsonl_text(rows)}, capsys)


# ---------------------------------------------------------------- labels.permuted-map


@pytest.mark.parametrize(
    ("target", "shown"),
    [
        ("{{ {'A': 0, 'B': 1, 'C': 2, 'D': 4, 'E': 3}[answerKey] }}", "'D', 'E'"),
        ("{{ ['A', 'B', 'D', 'C', 'E'].index(answerKey) }}", "'C', 'D'"),
        ("{{ 'ABCED'.find(answerKey) }}", "'D', 'E'"),
    ],
)
def test_a_letter_map_typed_out_of_order_is_named(target, shown, tmp_path, capsys):
    lines = _lines(
        tmp_path,
        capsys,
        CSQA,
        prompt="{{ stem }}\nAnswer:",
        choices="{{ choices | map(attribute='text') | list }}",
        target=target,
    )
    (line,) = [x for x in lines if f"[{PERMUTED}]" in x]
    assert "t.yaml:" in line and "field 'target'" in line and f"and {shown} are out of order" in line, line


@pytest.mark.parametrize(
    "target",
    [
        "{{ {'A': 0, 'B': 1, 'C': 2, 'D': 3, 'E': 4}[answerKey] }}",
        "{{ 'ABCDE'.index(answerKey) }}",
        "{{ {'A': 1, 'B': 2, 'C': 3, 'D': 4, 'E': 5}[answerKey] - 1 }}",  # counted from 1, moved back: in order
        "{{ {'A': 0, 'B': 1, 'C': 2, 'D': 3, 'E': 4, '1': 0, '2': 1, '3': 2, '4': 3, '5': 4}[answerKey] }}",
    ],
)
def test_letter_maps_in_order_are_silent(target, tmp_path, capsys):
    lines = _lines(
        tmp_path,
        capsys,
        CSQA,
        prompt="{{ stem }}\nAnswer:",
        choices="{{ choices | map(attribute='text') | list }}",
        target=target,
    )
    assert lines == []


def test_a_computed_field_with_a_swapped_map_is_named_by_its_field(tmp_path, capsys):
    data = {"path": "data.jsonl", "id": "id", "fields": {"gold": "{{ {'A': 1, 'B': 0, 'C': 2}[answerKey] }}"}}
    rows = [{**r, "answerKey": LETTERS[i % 3], "choices": r["choices"][:3]} for i, r in enumerate(CSQA)]
    lines = _lines(
        tmp_path,
        capsys,
        rows,
        data=data,
        prompt="{{ stem }}\nAnswer:",
        choices="{{ choices | map(attribute='text') | list }}",
        target="{{ gold }}",
    )
    (line,) = [x for x in lines if f"[{PERMUTED}]" in x]
    assert "field 'fields.gold'" in line and "'A', 'B' are out of order" in line, line


def test_a_permuted_map_in_lm_eval_doc_to_target_is_named(tmp_path, capsys):
    pytest.importorskip("lm_eval")
    task = {
        "task": "quiz",
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(tmp_path / "test.jsonl")}},
        "output_type": "multiple_choice",
        "test_split": "test",
        "doc_to_text": "{{ stem }}\nAnswer:",
        "doc_to_choice": "{{ choices | map(attribute='text') | list }}",
        "doc_to_target": "{{ ['A', 'C', 'B', 'D', 'E'].index(answerKey) }}",
    }
    files = {"quiz.yaml": yaml.safe_dump(task, sort_keys=False), "test.jsonl": jsonl_text(CSQA)}
    lines = audit_lines(tmp_path, files, capsys, [str(tmp_path / "quiz.yaml")])
    (line,) = [x for x in lines if f"[{PERMUTED}]" in x]
    assert "quiz.yaml" in line and "field 'doc_to_target'" in line and "'B', 'C' are out of order" in line, line


# ---------------------------------------------------------------- prompt.drops-part

HELLASWAG = [
    {
        "id": f"h{i}",
        "ctx_a": f"A man number {i} climbs a ladder to the roof.",
        "ctx_b": "he" if i % 3 else "the man",
        "endings": ["starts pulling up shingles.", "eats a sandwich.", "swims away.", "reads a book."],
        "label": str(i % 4),
    }
    for i in range(9)
]
for _row in HELLASWAG:
    _row["ctx"] = f"{_row['ctx_a']} {_row['ctx_b']}"


@pytest.mark.parametrize(
    ("prompt", "named"),
    [("{{ ctx_a }}", True), ("{{ ctx }}", False), ("{{ ctx_a }} {{ ctx_b|capitalize }}", False)],
)
def test_a_prompt_showing_only_the_first_part_of_the_context_is_named(prompt, named, tmp_path, capsys):
    lines = _lines(tmp_path, capsys, HELLASWAG, prompt=prompt, choices="{{ endings }}", target="{{ label | int }}")
    found = [x for x in lines if f"[{DROPS_PART}]" in x]
    assert bool(found) is named, lines
    if named:
        assert "data.jsonl, row 1" in found[0] and "field 'ctx_a'" in found[0] and "first part of 'ctx'" in found[0]
        assert "cut in 9 of the 9 rows read" in found[0], found[0]


# ---------------------------------------------------------------- prompt.options-listed-wrong

MMLU = [
    {"id": f"m{i}", "question": f"Question {i}?", "A": f"a{i}", "B": f"b{i}", "C": f"c{i}", "D": f"d{i}"}
    for i in range(8)
]
for _i, _row in enumerate(MMLU):
    _row["answer"] = "ABCD"[_i % 4]


@pytest.mark.parametrize(
    ("listing", "message"),
    [
        ("A. {{ A }}\nB. {{ B }}\nC. {{ B }}\nD. {{ D }}", "prints {{ B }} under both B and C"),
        ("A. {{ A }}\nB. {{ B }}\nC. {{ C }}\nD. {{ D }}", None),
    ],
)
def test_a_lettered_listing_that_prints_an_option_twice_is_named(listing, message, tmp_path, capsys):
    lines = _lines(
        tmp_path,
        capsys,
        MMLU,
        prompt="{{ question }}\n" + listing + "\nAnswer:",
        choices=[" A", " B", " C", " D"],
        target="{{ 'ABCD'.index(answer) }}",
    )
    found = [x for x in lines if f"[{LISTED}]" in x]
    assert [message in x for x in found] == ([True] if message else []), lines
    assert all("field 'prompt'" in x and "t.yaml:" in x for x in found)


def test_a_listing_indexed_out_of_order_is_named(tmp_path, capsys):
    rows = [
        {"id": r["id"], "question": r["question"], "options": [r[c] for c in "ABCD"], "label": i % 4}
        for i, r in enumerate(MMLU)
    ]
    listing = "A. {{ options[0] }}\nB. {{ options[2] }}\nC. {{ options[1] }}\nD. {{ options[3] }}"
    lines = _lines(
        tmp_path,
        capsys,
        rows,
        prompt="{{ question }}\n" + listing + "\nAnswer:",
        choices=[" A", " B", " C", " D"],
        target="{{ label }}",
    )
    (line,) = [x for x in lines if f"[{LISTED}]" in x]
    assert "B -> [2], C -> [1]" in line, line


# ---------------------------------------------------------------- prompt.shows-target through chat.system

TRIVIA = [
    {
        "id": f"t{i}",
        "question": f"Which vegetable is number {i}?",
        "answer": f"Onion{i}",
        "aliases": [f"Onion{i}", f"Allium{i}"],
    }
    for i in range(6)
]


@pytest.mark.parametrize(("system", "named"), [("Hint: the answer is {{ answer }}.", True), ("Answer briefly.", False)])
def test_a_system_text_that_prints_the_answer_field_is_named(system, named, tmp_path, capsys):
    lines = _lines(
        tmp_path,
        capsys,
        TRIVIA,
        kind="generate",
        prompt="Question: {{ question }}\nAnswer:",
        target="{{ aliases }}",
        generation={"stop": ["\n"]},
        chat={"system": system},
    )
    found = [x for x in lines if "[prompt.shows-target]" in x]
    assert bool(found) is named, lines
    if named:
        assert "field 'chat.system'" in found[0] and "shows 'answer'" in found[0] and "in 6 of the 6 rows" in found[0]


# ---------------------------------------------------------------- few-shot examples


QUIZ = [
    {
        "id": f"q{i}",
        "query": f"Which statement best explains fact number {i} about photosynthesis?",
        "choices": [f"right {i}", f"wrong {i}", f"other {i}", f"none {i}"],
        "gold": 0,
    }
    for i in range(12)
]
DEV = [
    {**r, "id": f"d{i}", "query": f"Which colour is thing number {i} in this example?"} for i, r in enumerate(QUIZ[:4])
]


def test_examples_shown_without_their_questions_are_named(tmp_path, capsys):
    files = {"dev.jsonl": jsonl_text(DEV), "data.jsonl": jsonl_text(QUIZ)}
    for template, named in [("Answer: {{ choices[gold] }}", True), ("{{ query }}\nAnswer: {{ choices[gold] }}", False)]:
        fields = {
            "prompt": "{{ query }}\nAnswer:",
            "choices": "{{ choices }}",
            "target": "{{ gold }}",
            "fewshot": {"count": 2, "source": {"path": "dev.jsonl"}, "template": template},
        }
        lines = audit_lines(tmp_path / str(named), {**files, "t.yaml": _task(**fields)}, capsys)
        found = [x for x in lines if "[fewshot.settings]" in x]
        assert bool(found) is named, lines
        if named:
            assert "answers without their questions" in found[0] and "field 'fewshot.template'" in found[0]


def test_a_pool_that_copies_evaluated_rows_re_spaced_is_named(tmp_path, capsys):
    copies = [{**r, "id": f"c{i}", "query": r["query"].replace("?", " ?")} for i, r in enumerate(QUIZ[:4])]
    fields = {
        "prompt": "{{ query }}\nAnswer:",
        "choices": "{{ choices }}",
        "target": "{{ gold }}",
        "fewshot": {"count": 2, "source": {"path": "dev.jsonl"}},
    }
    for pool, named in [(copies, True), (DEV, False)]:
        files = {"dev.jsonl": jsonl_text(pool), "data.jsonl": jsonl_text(QUIZ), "t.yaml": _task(**fields)}
        lines = [x for x in audit_lines(tmp_path / str(named), files, capsys) if "[fewshot.leak]" in x]
        assert bool(lines) is named, lines
        if named:
            assert "4 of 12 evaluated rows are also in the few-shot pool" in lines[0], lines[0]


# ---------------------------------------------------------------- prompt.inverted-condition

COPA = [
    {
        "id": f"c{i}",
        "premise": f"The man number {i} turned on the faucet.",
        "question": "cause" if i % 2 else "effect",
        "choice1": "The toilet filled with water.",
        "choice2": "Water flowed from the spout.",
        "label": 1,
    }
    for i in range(8)
]


@pytest.mark.parametrize(
    ("connective", "named"),
    [
        ("{{ 'because' if question == 'effect' else 'therefore' }}", "'because' for the rows that ask for the effect"),
        ("{{ {'cause': 'so', 'effect': 'because'}[question] }}", "'so' for the rows that ask for the cause"),
        ("{{ 'quindi' if question != 'effect' else 'perché' }}", "'quindi' for the rows that ask for the cause"),
        ("{{ 'because' if question == 'cause' else 'therefore' }}", None),
        ("{{ {'cause': 'perché', 'effect': 'quindi'}[question] }}", None),
    ],
)
def test_a_connective_chosen_the_wrong_way_round_is_named(connective, named, tmp_path, capsys):
    lines = _lines(
        tmp_path,
        capsys,
        COPA,
        prompt="{{ premise[:-1] }} " + connective,
        choices=["{{ choice1 }}", "{{ choice2 }}"],
        target="{{ label }}",
    )
    found = [x for x in lines if f"[{INVERTED}]" in x]
    assert [named in x for x in found] == ([True] if named else []), lines
    assert all("t.yaml:" in x and "field 'prompt'" in x for x in found)


# ---------------------------------------------------------------- prompt.doubled-cue, chat.written-by-hand,
# choices.letter-prefixed: what the prompt's text shows twice, or in a form the scoring does not expect


@pytest.mark.parametrize(("held", "named"), [("Question: {q}\nAnswer:", True), ("{q}", False)])
def test_a_cue_the_rows_already_hold_is_named_when_the_template_adds_it_again(held, named, tmp_path, capsys):
    rows = [{**r, "question": held.format(q=r["question"])} for r in TRIVIA]
    lines = _lines(
        tmp_path,
        capsys,
        rows,
        kind="generate",
        prompt="Question: {{ question }}\nAnswer:",
        target="{{ aliases }}",
        generation={"stop": ["\n"]},
    )
    found = [x for x in lines if f"[{DOUBLED}]" in x]
    assert bool(found) is named, lines
    if named:
        assert "says 'Question' twice in a row" in found[0] and "in 6 of the 6 rows" in found[0], found[0]
        assert "data.jsonl, row 1" in found[0] and "field 'prompt'" in found[0]


@pytest.mark.parametrize(
    ("prompt", "chat", "named"),
    [
        ("<|im_start|>user\n{{ query }}<|im_end|>\n<|im_start|>assistant\n", {"system": "Answer."}, True),
        ("<|im_start|>user\n{{ query }}<|im_end|>\n<|im_start|>assistant\n", None, False),
        ("{{ query }}\nAnswer:", {"system": "Answer."}, False),
    ],
)
def test_a_chat_turn_written_by_hand_under_a_chat_template_is_named(prompt, chat, named, tmp_path, capsys):
    fields = {"prompt": prompt, "choices": "{{ choices }}", "target": "{{ gold }}"}
    lines = _lines(tmp_path, capsys, QUIZ, **fields, **({"chat": chat} if chat else {}))
    found = [x for x in lines if f"[{BY_HAND}]" in x]
    assert bool(found) is named, lines
    if named:
        assert "'<|im_start|>' in every row" in found[0] and "t.yaml:" in found[0], found[0]


@pytest.mark.parametrize(
    ("prompt", "lettered", "named"),
    [
        ("{{ query }}\nAnswer:", True, True),
        ("{{ query }}\nAnswer:", False, False),
        ("{{ query }}\n{{ choices | join('\\n') }}\nAnswer:", True, False),  # the prompt lists them
    ],
)
def test_choices_carrying_their_own_letter_are_named(prompt, lettered, named, tmp_path, capsys):
    rows = [
        {**r, "choices": [f"{'ABCD'[k]}) {c}" if lettered else c for k, c in enumerate(r["choices"])]} for r in QUIZ
    ]
    lines = _lines(tmp_path, capsys, rows, prompt=prompt, choices="{{ choices }}", target="{{ gold }}")
    found = [x for x in lines if f"[{PREFIXED}]" in x]
    assert bool(found) is named, lines
    if named:
        assert "'A) right 0'" in found[0] and "in 12 of the 12 rows" in found[0] and "field 'choices'" in found[0]


# ---------------------------------------------------------------- data.filter-biased: a substring test


@pytest.mark.parametrize(
    ("data_filter", "named"),
    [
        ("subject in 'abstract_algebra_and_anatomy'", True),
        ("subject in ['abstract_algebra', 'anatomy']", False),
        ("letter in 'AB'", False),
    ],
)
def test_a_filter_that_tests_a_piece_of_a_text_is_named(data_filter, named, tmp_path, capsys):
    subjects = ["abstract_algebra", "algebra", "anatomy", "marketing"]
    rows = [{**r, "subject": subjects[i % 4], "letter": "ABCD"[i % 4]} for i, r in enumerate(QUIZ)]
    data = {"path": "data.jsonl", "id": "id", "filter": "{{ " + data_filter + " }}"}
    lines = _lines(
        tmp_path, capsys, rows, data=data, prompt="{{ query }}\nAnswer:", choices="{{ choices }}", target="{{ gold }}"
    )
    found = [x for x in lines if "[data.filter-biased]" in x]
    assert bool(found) is named, lines
    if named:
        assert "'algebra' is kept" in found[0] and "field 'data.filter'" in found[0] and "t.yaml:" in found[0]


# ---------------------------------------------------------------- prompt.over-max-length


@pytest.mark.parametrize(("limit", "named"), [(16, True), (512, False)])
def test_a_context_limit_below_the_prompts_word_count_is_named(limit, named, tmp_path, capsys):
    rows = [{**r, "passage": " ".join(f"word{k}" for k in range(40))} for r in QUIZ]
    fields = {"prompt": "{{ passage }}\n{{ query }}\nAnswer:", "choices": "{{ choices }}", "target": "{{ gold }}"}
    lines = _lines(tmp_path, capsys, rows, **fields, max_length=limit)
    found = [x for x in lines if f"[{OVER_MAX}]" in x]
    assert bool(found) is named, lines
    if named:
        assert "max_length is 16 tokens" in found[0] and "in 12 of 12 rows" in found[0], found[0]
        assert "data.jsonl, row 1" in found[0] and "field 'max_length'" in found[0]


# ---------------------------------------------------------------- prompt.contains-gold: a label in the row's own
# text; prompt.shows-evaluated-row: the shared worked examples hold an evaluated row

LABELS = ["positive", "negative", "neutral"]
REVIEWS = [
    {"id": f"s{i}", "text": f"Review number {i} of the hotel by the river.", "label": LABELS[i % 3]} for i in range(9)
]
PREAMBLE = "Answer with positive, negative or neutral.\n\n"


@pytest.mark.parametrize(("tagged", "named"), [(True, True), (False, False)])
def test_a_row_text_that_names_its_own_label_is_named(tagged, named, tmp_path, capsys):
    rows = [{**r, "text": f"{r['text']} (Sentiment: {r['label']})" if tagged else r["text"]} for r in REVIEWS]
    lines = _lines(
        tmp_path,
        capsys,
        rows,
        kind="generate",
        prompt=PREAMBLE + "Text: {{ text }}\nSentiment:",
        target="{{ label }}",
        generation={"stop": ["\n"]},
    )
    found = [x for x in lines if "[prompt.contains-gold]" in x]
    assert bool(found) is named, lines
    if named:
        assert "names its label ('positive') and no other in 9 of the 9 rows" in found[0], found[0]


@pytest.mark.parametrize(("demo", "named"), [(REVIEWS[1]["text"], True), ("A quiet room with a view.", False)])
def test_worked_examples_that_hold_an_evaluated_row_are_named(demo, named, tmp_path, capsys):
    shots = f"Text:\n{demo}\nSentiment: negative\n\n"
    lines = _lines(
        tmp_path,
        capsys,
        REVIEWS,
        kind="generate",
        prompt=PREAMBLE + shots + "Text:\n{{ text }}\nSentiment:",
        target="{{ label }}",
        generation={"stop": ["\n"]},
    )
    found = [x for x in lines if f"[{SHOWS_ROW}]" in x]
    assert bool(found) is named, lines
    if named:
        assert "data.jsonl, row 2" in found[0] and "in 1 of 9 rows" in found[0] and "field 'prompt'" in found[0]


# ---------------------------------------------------------------- prompt.field-twice; text.damaged: a BOM inside a
# prompt, carriage returns in a printed field


@pytest.mark.parametrize(
    ("prompt", "named"), [("{{ query }}\n{{ query }}\nAnswer:", True), ("{{ query }}\nAnswer:", False)]
)
def test_a_question_printed_twice_is_named(prompt, named, tmp_path, capsys):
    lines = _lines(tmp_path, capsys, QUIZ, prompt=prompt, choices="{{ choices }}", target="{{ gold }}")
    found = [x for x in lines if f"[{TWICE}]" in x]
    assert bool(found) is named, lines
    if named:
        assert "prints {{ query }} twice" in found[0] and "field 'prompt'" in found[0], found[0]


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda i, q: "\ufeff" + q if i == 4 else q, "row 5, field 'prompt'"),
        (lambda i, q: f"Read this.\n\ufeff{q}" if i == 2 else q, "row 3, field 'prompt'"),  # after a line break
        (lambda i, q: q + "\r", "row 1, field 'query'"),
        (lambda i, q: q, None),
        # mid-line U+FEFF is a zero-width no-break space, as in BoolQ row 821's coordinates (fp14 FP-006)
        (lambda i, q: q.replace(" ", " \ufeff/\ufeff ", 1) if i == 4 else q, None),
    ],
)
def test_a_byte_order_mark_or_carriage_returns_in_prompts_are_named(change, where, tmp_path, capsys):
    rows = [{**r, "query": change(i, r["query"])} for i, r in enumerate(QUIZ)]
    lines = _lines(tmp_path, capsys, rows, prompt="{{ query }}\nAnswer:", choices="{{ choices }}", target="{{ gold }}")
    found = [x for x in lines if "[text.damaged]" in x]
    assert [where in x for x in found] == ([True] if where else []), lines


def test_a_byte_order_mark_opening_a_field_mid_prompt_is_named(tmp_path, capsys):
    """The row's field opens with U+FEFF (the joined file's first row): named though the prompt prints it mid-line."""
    rows = [{**r, "query": "\ufeff" + r["query"]} if i == 3 else r for i, r in enumerate(QUIZ)]
    lines = _lines(
        tmp_path, capsys, rows, prompt="Q: {{ query }}\nAnswer:", choices="{{ choices }}", target="{{ gold }}"
    )
    found = [x for x in lines if "[text.damaged]" in x]
    assert len(found) == 1 and "row 4, field 'prompt'" in found[0], lines


def test_the_readers_own_file_fields_are_not_a_dropped_part(tmp_path, capsys):
    """A glob's rows carry '_file' (the file's stem) and '_source' (its path below the glob), so '_file' is always
    the first part of '_source': a prompt naming the subject by its file (MMLU's local copy) drops nothing."""
    task = (
        "name: quiz\nkind: multiple_choice\ndata: {path: 'parts/*_test.csv', columns: [q, a, b, answer]}\n"
        "prompt: \"About {{ _file | replace('_test', '') }}: {{ q }}\\nAnswer:\"\n"
        'choices: "{{ [a, b] }}"\ntarget: "{{ \'AB\'.index(answer) }}"\n'
    )
    files = {"t.yaml": task}
    for subject in ("algebra", "biology"):
        files[f"parts/{subject}_test.csv"] = "".join(
            f"Question {i} of {subject}?,yes,no,{'AB'[i % 2]}\n" for i in range(6)
        )
    assert not [x for x in audit_lines(tmp_path, files, capsys) if f"[{DROPS_PART}]" in x]
