"""The red-team corpus of issue 45 (wrong tasks and wrong replies must not become plausible numbers).

Each ``AuditCase`` is an input that loads and validates but would give a wrong number (or a valid control
that must not be flagged): its name, a category, the files to write into a fresh folder (path -> text or
bytes), the ``proctor`` arguments (``{model}`` is the tiny random Llama; ``pre`` commands run first, e.g.
a run that ``compare`` then reads), and what a careful reviewer expects:

- ``("rule", ID)``: the audit reports finding ``[ID]`` (a warning, or an error);
- ``("error", WORDS)``: a clear error whose message contains WORDS;
- ``("ok",)``: a valid control: exit 0 and no audit finding.

Rule ids outside the audit's planned list (``choices.near-duplicate``, ``prompt.constant``, ...) are this
corpus's proposals. tests/support/audit_runner.py runs a case and classifies what proctor did;
tests/cross_cutting/test_audit_corpus.py asserts the expectation for every case.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from dataclasses import dataclass, field
from typing import Any, Union

import yaml

from tests.conftest import SHARED
from tests.support.audit_inputs import BOOLQ_ROWS, PLAIN_OPTIONS, QUIZ_USE_CASE, VIETNAMESE

Files = dict[str, Union[str, bytes]]


@dataclass(frozen=True)
class AuditCase:
    name: str
    category: str
    files: Files
    args: list[str]
    expect: tuple
    pre: list[list[str]] = field(default_factory=list)

    @property
    def needs_model(self) -> bool:
        return any("{model}" in a or "{base_model}" in a for a in [*self.args, *(a for cmd in self.pre for a in cmd)])

    @property
    def needs_base_model(self) -> bool:
        return any("{base_model}" in a for a in self.args)


CORPUS: list[AuditCase] = []


def add(name: str, category: str, files: Files, expect: tuple, args: list[str] | None = None, pre=None) -> None:
    assert all(c.name != name for c in CORPUS), name
    CORPUS.append(AuditCase(name, category, dict(files), list(args or ["validate", "t.yaml"]), expect, list(pre or [])))


def rule(rule_id: str) -> tuple:
    return ("rule", rule_id)


OK = ("ok",)


# ---------------------------------------------------------------- native helpers


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def csv_text(header: list[str] | None, rows: list[list[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    if header:
        writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def task_yaml(**fields: Any) -> str:
    """One native task under ``tasks:`` (a multiple-choice quiz unless the fields say otherwise)."""
    task = {
        "name": "quiz",
        "kind": "multiple_choice",
        "data": "data.jsonl",
        "prompt": "Q: {{ question }}\nA:",
        "choices": "{{ choices }}",
        "target": "{{ label }}",
    }
    task.update(fields)
    for key in [k for k, v in task.items() if v is None]:
        del task[key]
    return yaml.safe_dump({"tasks": [task]}, sort_keys=False, allow_unicode=True)


QUIZ = [
    {"id": "q1", "question": "What is 2 + 2?", "choices": ["3", "4", "5", "6"], "label": 1},
    {
        "id": "q2",
        "question": "What is the capital of France?",
        "choices": ["Berlin", "Madrid", "Paris", "Rome"],
        "label": 2,
    },
    {"id": "q3", "question": "Which is a mammal?", "choices": ["Whale", "Shark", "Trout", "Eel"], "label": 0},
    {"id": "q4", "question": "What colour is the sky?", "choices": ["Green", "Red", "Yellow", "Blue"], "label": 3},
    {"id": "q5", "question": "How many legs has a spider?", "choices": ["Six", "Eight", "Ten", "Four"], "label": 1},
    {"id": "q6", "question": "What is frozen water?", "choices": ["Steam", "Ice", "Fog", "Dew"], "label": 1},
]
GEN_ROWS = [
    {"id": "g1", "question": "Capital of France?", "answer": "Paris"},
    {"id": "g2", "question": "Capital of Italy?", "answer": "Rome"},
    {"id": "g3", "question": "Capital of Spain?", "answer": "Madrid"},
    {"id": "g4", "question": "Capital of Japan?", "answer": "Tokyo"},
]
GEN = {
    "kind": "generate",
    "choices": None,
    "target": "{{ answer }}",
    "generation": {"max_tokens": 8, "stop": ["\n"]},
}


# an MMLU-style prompt listing the options with letters
LETTERED = "{{ question }}\nA. {{ choices[0] }}\nB. {{ choices[1] }}\nC. {{ choices[2] }}\nD. {{ choices[3] }}\n"


def native(rows: list[dict] | None = None, **fields: Any) -> Files:
    return {"t.yaml": task_yaml(**fields), "data.jsonl": jsonl(QUIZ if rows is None else rows)}


def with_row(index: int, **changes: Any) -> list[dict]:
    rows = [dict(r) for r in QUIZ]
    rows[index].update(changes)
    return rows


def gen(rows: list[dict] | None = None, **fields: Any) -> Files:
    return native(GEN_ROWS if rows is None else rows, **{**GEN, **fields})


# ---------------------------------------------------------------- choices that are not distinct

add("dup-exact", "choices.duplicate", native(with_row(0, choices=["4", "4", "5", "6"])), rule("choices.duplicate"))
add(
    "dup-case",
    "choices.duplicate",
    native(with_row(1, choices=["Paris", "paris", "Rome", "Oslo"], label=0)),
    rule("choices.duplicate"),
)
add(
    "dup-trailing-space",
    "choices.duplicate",
    native(with_row(0, choices=["4", "4 ", "5", "6"])),
    rule("choices.duplicate"),
)
add(
    "dup-leading-space",
    "choices.duplicate",
    native(with_row(0, choices=[" 4", "4", "5", "6"])),
    rule("choices.duplicate"),
)
add(
    "dup-inner-whitespace",
    "choices.duplicate",
    native(with_row(1, choices=["New  York", "New York", "Rome", "Oslo"], label=0)),
    rule("choices.duplicate"),
)
add(
    "dup-trailing-period",
    "choices.near-duplicate",
    native(with_row(1, choices=["Paris", "Paris.", "Rome", "Oslo"], label=0)),
    rule("choices.near-duplicate"),
)
add(
    "dup-quotes",
    "choices.near-duplicate",
    native(with_row(1, choices=['"Paris"', "Paris", "Rome", "Oslo"], label=1)),
    rule("choices.near-duplicate"),
)
add(
    "dup-cyrillic-lookalike",
    "choices.confusable",
    native(with_row(3, choices=["Blue", "Вlue", "Red", "Green"], label=0)),
    rule("choices.near-duplicate"),
)
add(
    "dup-nfc-nfd",
    "choices.duplicate",
    native(with_row(1, choices=["caf\u00e9", "cafe\u0301", "Rome", "Oslo"], label=0)),
    rule("choices.duplicate"),
)
add(
    "dup-zero-width",
    "choices.duplicate",
    native(with_row(0, choices=["4", "4\u200b", "5", "6"])),
    rule("choices.duplicate"),
)
add(
    "dup-nbsp",
    "choices.duplicate",
    native(with_row(1, choices=["New York", "New\u00a0York", "Rome", "Oslo"], label=0)),
    rule("choices.duplicate"),
)
add(
    "dup-fullwidth-digit",
    "choices.duplicate",
    native(with_row(0, choices=["4", "\uff14", "5", "6"])),
    rule("choices.duplicate"),
)
add(
    "dup-templates-same-field",
    "choices.duplicate",
    native(
        [{**r, "a": r["choices"][0], "b": r["choices"][1]} for r in QUIZ],
        choices=["{{ a }}", "{{ a }}", "{{ b }}"],
        target="{{ 0 if label == 0 else 2 }}",
    ),
    rule("choices.duplicate"),
)
add(
    "dup-every-row",
    "choices.duplicate",
    native([{**r, "choices": [r["choices"][0]] * 2 + r["choices"][2:]} for r in QUIZ], target="{{ 2 }}"),
    rule("choices.duplicate"),
)
add(
    "dup-number-vs-text",
    "choices.duplicate",
    native(with_row(0, choices=["4", "4.0", "5", "6"])),
    rule("choices.near-duplicate"),
)
add("choices-single-one-row", "choices.single", native(with_row(0, choices=["4"], label=0)), rule("choices.single"))
add(
    "choices-all-empty-but-one",
    "choices.single",
    native(with_row(0, choices=["4", " ", "  "], label=0)),
    rule("choices.single"),
)
add(
    "choices-stringified-list",
    "choices.type",
    native([{**r, "choices": json.dumps(r["choices"])} for r in QUIZ]),
    ("error", "choices"),
)
add(
    "choices-string-chars",
    "choices.type",
    native([{**r, "choices": "ABCD", "label": r["label"]} for r in QUIZ]),
    ("error", "choices"),
)
add("choices-differ-in-count", "ok", native(with_row(0, choices=["3", "4"], label=1)), OK)

# ---------------------------------------------------------------- targets

add(
    "target-text-shared",
    "target.ambiguous",
    native(with_row(0, choices=["4", "4", "5"], label="4"), target="{{ label }}"),
    rule("target.ambiguous"),
)
add(
    "target-text-case-variant",
    "target.ambiguous",
    native([{**r, "answer": r["choices"][r["label"]].lower()} for r in QUIZ], target="{{ answer }}"),
    rule("target.not-a-choice"),
)
add(
    "target-text-trailing-space",
    "target.ambiguous",
    native([{**r, "answer": r["choices"][r["label"]] + " "} for r in QUIZ], target="{{ answer }}"),
    rule("target.not-a-choice"),
)
add(
    "target-all-choices-list", "target.all-choices", native(with_row(0, label=[0, 1, 2, 3])), rule("target.all-choices")
)
add(
    "target-all-choices-texts",
    "target.all-choices",
    native(with_row(0, choices=["3", "4"], label=["3", "4"])),
    rule("target.all-choices"),
)
add(
    "target-all-choices-every-row",
    "target.all-choices",
    native(QUIZ, target="{{ range(choices | length) | list }}"),
    rule("target.all-choices"),
)
add(
    "target-csv-fraction-int",
    "target.coerced",
    {
        "t.yaml": task_yaml(data="d.csv", choices=["{{ a }}", "{{ b }}", "{{ c }}"], target="{{ label | int }}"),
        "d.csv": csv_text(
            ["question", "a", "b", "c", "label"], [["2+2?", "3", "4", "5", "1.5"], ["1+1?", "2", "3", "4", "0"]]
        ),
    },
    rule("target.coerced"),
)
add(
    "target-csv-one-point-zero",
    "target.coerced",
    {
        "t.yaml": task_yaml(
            data="d.csv", choices=["{{ a }}", "{{ b }}", "{{ c }}"], target="{{ label | float | int }}"
        ),
        "d.csv": csv_text(
            ["question", "a", "b", "c", "label"], [["2+2?", "3", "4", "5", "1.0"], ["1+1?", "2", "3", "4", "0.9"]]
        ),
    },
    rule("target.coerced"),
)
add(
    "target-round-filter",
    "target.coerced",
    native(with_row(0, label=1.6), target="{{ label | round | int }}"),
    rule("target.coerced"),
)
add("target-bool-json", "target.coerced", native(with_row(0, label=True)), rule("target.coerced"))
add(
    "target-bool-int-filter",
    "target.coerced",
    native([{**r, "label": r["label"] > 0} for r in QUIZ], target="{{ label | int }}"),
    rule("target.coerced"),
)
add("target-string-digit", "target.coerced", native(with_row(1, label="2")), rule("target.coerced"))
add("target-json-float-one", "target.coerced", native(with_row(0, label=1.0)), rule("target.coerced"))
add(
    "target-int-default-hides-text",
    "target.coerced",
    native(with_row(0, label="B"), target="{{ label | int(0) }}"),
    rule("target.coerced"),
)
add(
    "target-csv-spaces-int",
    "ok",
    {
        "t.yaml": task_yaml(data="d.csv", choices=["{{ a }}", "{{ b }}"], target="{{ label | int }}"),
        "d.csv": csv_text(["question", "a", "b", "label"], [["2+2?", "3", "4", "1"], ["1+1?", "2", "3", "0"]]),
    },
    OK,
)
add("target-negative-index", "target.range", native(with_row(0, label=-1)), ("error", "target"))
add("target-negative-index-python", "target.range", native(with_row(0, label=-4)), ("error", "target"))
add(
    "target-letter-index-plus-one",
    "labels.off-by-one",
    native(
        [{**r, "answer": "ABCD"[r["label"]]} for r in QUIZ],
        target="{{ 'ABCD'.index(answer) + 1 if answer != 'D' else 0 }}",
    ),
    rule("labels.off-by-one"),
)
add(
    "labels-one-based",
    "labels.off-by-one",
    native([{**r, "label": r["label"] + 1} for r in QUIZ if r["label"] < 3] + [{**QUIZ[0], "id": "q9", "label": 3}]),
    rule("labels.off-by-one"),
)
add(
    "labels-one-based-binary",
    "labels.off-by-one",
    native([{"id": f"b{i}", "question": f"Is {i} even?", "choices": ["no", "yes"], "label": 1} for i in range(6)]),
    rule("target.constant"),
)
add("target-constant-zero", "target.constant", native([{**r, "label": 0} for r in QUIZ]), rule("target.constant"))
add("target-constant-literal", "target.constant", native(QUIZ, target="{{ 0 }}"), rule("target.constant"))
add(
    "target-constant-text-position",
    "target.constant",
    native(
        [
            {
                **r,
                "choices": [r["choices"][r["label"]]] + [c for i, c in enumerate(r["choices"]) if i != r["label"]],
                "label": 0,
            }
            for r in QUIZ
        ]
    ),
    rule("target.constant"),
)
add("target-balanced-ok", "ok", native(QUIZ), OK)
add(
    "target-is-choice-text-ok",
    "ok",
    native([{**r, "answer": r["choices"][r["label"]]} for r in QUIZ], target="{{ answer }}"),
    OK,
)
add(
    "labels-skewed-unused-last",
    "labels.off-by-one",
    native([{**r, "label": min(r["label"], 2)} for r in QUIZ] + [{**QUIZ[1], "id": "q7", "label": 0}]),
    OK,
)

# ---------------------------------------------------------------- prompts

add(
    "prompt-prints-gold-text",
    "prompt.contains-gold",
    native(QUIZ, prompt="Q: {{ question }} (answer: {{ choices[label] }})\nA:"),
    rule("prompt.contains-gold"),
)
add(
    "prompt-prints-label-index",
    "prompt.contains-gold",
    native(QUIZ, prompt="Q: {{ question }}\nOptions: {{ choices | join(', ') }}\nGold: {{ label }}\nA:"),
    rule("prompt.contains-gold"),
)
add(
    "prompt-prints-answer-field",
    "prompt.contains-gold",
    gen(prompt="Q: {{ question }} [{{ answer }}]\nA:"),
    rule("prompt.contains-gold"),
)
add(
    "prompt-prints-gold-letter",
    "prompt.contains-gold",
    native(
        [{**r, "key": "ABCD"[r["label"]]} for r in QUIZ],
        prompt=LETTERED + "Key {{ key }}\nAnswer:",
        choices=["A", "B", "C", "D"],
        target="{{ 'ABCD'.index(key) }}",
    ),
    rule("prompt.contains-gold"),
)
add(
    "prompt-chat-system-gold",
    "prompt.contains-gold",
    gen(chat={"system": "The answer is {{ answer }}."}),
    rule("prompt.contains-gold"),
)
add(
    "prompt-gold-in-passage-ok",
    "ok",
    gen(
        [{**r, "passage": f"{r['answer']} is a city."} for r in GEN_ROWS], prompt="{{ passage }}\nQ: {{ question }}\nA:"
    ),
    OK,
)
add(
    "prompt-mmlu-lists-choices-ok",
    "ok",
    native(
        QUIZ,
        prompt=LETTERED + "Answer:",
        choices=["A", "B", "C", "D"],
    ),
    OK,
)
add("prompt-constant", "prompt.constant", native(QUIZ, prompt="Answer the question.\nA:"), rule("prompt.constant"))
add(
    "prompt-constant-wrong-field-default",
    "prompt.constant",
    native(QUIZ, prompt="Q: {{ query | default('') }}?\nA:"),
    rule("prompt.constant"),
)
add("prompt-constant-generate", "prompt.constant", gen(prompt="Name a capital.\nA:"), rule("prompt.constant"))
add(
    "prompt-letters-without-options",
    "choices.not-in-prompt",
    native(QUIZ, prompt="{{ question }}\nAnswer:", choices=["A", "B", "C", "D"]),
    rule("choices.not-in-prompt"),
)
add(
    "prompt-drops-passage",
    "prompt.drops-field",
    gen(
        [
            {**r, "passage": f"Long passage number {i} that holds the evidence for the answer." * 3}
            for i, r in enumerate(GEN_ROWS)
        ]
    ),
    rule("prompt.drops-field"),
)
add(
    "prompt-double-space-delimiter",
    "prompt.delimiter",
    native(QUIZ, prompt="Q: {{ question }}\nA: ", target_delimiter="  "),
    rule("prompt.delimiter"),
)
add(
    "prompt-no-delimiter-glued",
    "prompt.delimiter",
    native(QUIZ, prompt="Q: {{ question }}\nA:", target_delimiter=""),
    rule("prompt.delimiter"),
)
# BLiMP-style pairs: the good sentence is always first, so a constant gold is the design, not a mistake
add(
    "blimp-style-constant-target-ok",
    "ok",
    native(
        [{"id": f"m{i}", "good": f"The cat{i} sleeps.", "bad": f"The cat{i} sleep."} for i in range(4)],
        prompt="",
        choices=["{{ good }}", "{{ bad }}"],
        target="{{ 0 }}",
    ),
    OK,
)
add(
    "prompt-same-two-rows",
    "samples.duplicate",
    native(QUIZ + [{**QUIZ[0], "id": "q1-again"}]),
    rule("samples.duplicate"),
)
add(
    "prompt-same-whitespace-variant",
    "samples.duplicate",
    native(QUIZ + [{**QUIZ[1], "id": "q2b", "question": "What is the capital of  France? "}]),
    rule("samples.duplicate"),
)
add(
    "samples-same-question-different-gold",
    "samples.conflict",
    native(QUIZ + [{**QUIZ[0], "id": "q1b", "label": 2}]),
    rule("samples.conflict"),
)

# ---------------------------------------------------------------- generate

add("ref-empty", "references.empty", gen([*GEN_ROWS[:3], {**GEN_ROWS[3], "answer": ""}]), rule("references.empty"))
add(
    "ref-whitespace",
    "references.empty",
    gen([*GEN_ROWS[:3], {**GEN_ROWS[3], "answer": "  "}]),
    rule("references.empty"),
)
add(
    "ref-list-with-empty",
    "references.empty",
    gen([{**r, "answers": [r["answer"], ""]} for r in GEN_ROWS], target="{{ answers }}"),
    rule("references.empty"),
)
add(
    "ref-punctuation-only",
    "references.empty",
    gen([*GEN_ROWS[:3], {**GEN_ROWS[3], "answer": "."}]),
    rule("references.empty"),
)
add(
    "ref-article-only",
    "references.empty",
    gen([*GEN_ROWS[:3], {**GEN_ROWS[3], "answer": "The"}]),
    rule("references.empty"),
)
add(
    "ref-is-index",
    "target.index-as-reference",
    gen([{**r, "label": 0} for r in GEN_ROWS], target="{{ label }}"),
    rule("target.index-as-reference"),
)
add("ref-bool", "target.coerced", gen([{**r, "answer": True} for r in GEN_ROWS]), rule("target.coerced"))
add("ref-number-float", "target.coerced", gen([{**r, "answer": 3.0} for r in GEN_ROWS]), rule("target.coerced"))
add(
    "ref-python-list-text",
    "target.coerced",
    gen([{**r, "answer": json.dumps([r["answer"], r["answer"].upper()])} for r in GEN_ROWS]),
    rule("target.coerced"),
)
add(
    "gen-stop-prefix-of-answers",
    "generation.stop-prefix",
    gen([{**r, "answer": "The " + r["answer"]} for r in GEN_ROWS], generation={"max_tokens": 8, "stop": ["The"]}),
    rule("generation.stop-inside-answer"),
)
add(
    "gen-stop-space",
    "generation.stop-prefix",
    gen([{**r, "answer": "New " + r["answer"]} for r in GEN_ROWS], generation={"max_tokens": 8, "stop": [" "]}),
    rule("generation.stop-inside-answer"),
)
add(
    "gen-stop-empty-string",
    "generation.stop-prefix",
    gen(generation={"max_tokens": 8, "stop": [""]}),
    ("error", "stop"),
)
add("gen-max-tokens-zero", "generation.too-short", gen(generation={"max_tokens": 0}), ("error", "max_tokens"))
add(
    "gen-max-tokens-one-long-refs",
    "generation.too-short",
    gen(
        [{**r, "answer": f"The capital city is {r['answer']} and it is large"} for r in GEN_ROWS],
        generation={"max_tokens": 1},
    ),
    rule("generation.too-short"),
)
add(
    "gen-min-tokens-equals-max",
    "generation.too-short",
    gen(generation={"max_tokens": 8, "min_tokens": 8}),
    rule("generation.min-tokens"),
)
add(
    "gen-temperature-sampling-one-epoch",
    "generation.sampling",
    gen(generation={"max_tokens": 8, "temperature": 1.5}),
    rule("generation.sampling"),
)
add(
    "gen-regex-never-matches-refs",
    "extraction.never-matches",
    gen(extraction={"regex": "(\\d+)", "fallback": "none"}),
    rule("extraction.never-matches"),
)
add(
    "gen-regex-group-missing",
    "extraction.never-matches",
    gen(extraction={"regex": "answer: \\w+", "group": 1}),
    ("error", "group"),
)
# a nested repeat on references it almost matches: re backtracks for hours; the regex module answers this one at once
# a limit over a glob of two subjects' files keeps the first file's rows only
add(
    "glob-limit-first-file",
    "data.limit",
    {
        "t.yaml": task_yaml(data="subj/*.jsonl", limit=6, breakdown="_file"),
        "subj/algebra.jsonl": jsonl(QUIZ),
        "subj/biology.jsonl": jsonl([{**r, "id": r["id"] + "b", "question": r["question"] + " (b)"} for r in QUIZ]),
    },
    rule("data.limit-biased"),
)
add(
    "gen-regex-nested-repeat-refs",
    "extraction.never-matches",
    gen(
        [{**r, "answer": "the capital and largest city of " + r["question"].split()[-1][:-1]} for r in GEN_ROWS],
        extraction={"regex": "^([\\w ]+)+!"},
    ),
    rule("extraction.never-matches"),
)
# ... and one that backtracks in the regex module too: named within the search's time bound, not a hang
add(
    "gen-regex-backtracks",
    "extraction.never-matches",
    gen([{**r, "answer": "a" * 40 + "!"} for r in GEN_ROWS], extraction={"regex": "(a|aa)+$"}),
    ("error", "backtracks without end"),
)
# how the answer is read back: settings under which the model's text never yields it, or always does
add(
    "gen-stop-single-quoted-newline",
    "settings.escaped",
    gen(generation={"max_tokens": 8, "stop": ["\\n"]}),
    rule("settings.escaped"),
)
add(
    "gen-regex-matches-empty",
    "extraction.matches-empty",
    gen([{**r, "answer": str(i)} for i, r in enumerate(GEN_ROWS)], extraction={"regex": "(\\d*)"}),
    rule("extraction.matches-empty"),
)
add(
    "gen-regex-anchored-no-space",
    "extraction.anchored",
    gen(extraction={"regex": "^([A-Z]\\w+)"}),
    rule("extraction.anchored"),
)
add(
    "gen-regex-anchored-spaced-ok",
    "ok",
    gen(extraction={"regex": "^\\s*([A-Z]\\w+)"}),
    OK,
)
add(
    "gen-stop-equals-answer-tag",
    "extraction.tag-unwritten",
    gen(
        prompt="Think, then write 'Answer:' and the city. {{ question }}",
        generation={"max_tokens": 32, "stop": ["Answer:"]},
        extraction={"answer_tag": "Answer:"},
    ),
    rule("extraction.tag-unwritten"),
)
add(
    "gen-prompt-ends-with-answer-tag",
    "extraction.tag-unwritten",
    gen(prompt="{{ question }}\nAnswer:", extraction={"answer_tag": "Answer:", "fallback": "none"}),
    rule("extraction.tag-unwritten"),
)
add(
    "gen-answer-tag-asked-ok",
    "ok",
    gen(
        prompt="Think step by step, then end with 'Answer:' and the city.\n{{ question }}\n",
        generation={"max_tokens": 32, "stop": ["\n\n"]},
        extraction={"answer_tag": "Answer:"},
    ),
    OK,
)
add(
    "gen-answer-tag-not-in-prompt",
    "extraction.never-matches",
    gen(extraction={"answer_tag": "####", "fallback": "none"}),
    rule("extraction.tag-not-asked"),
)
add("gen-ok", "ok", gen(), OK)
add(
    "gen-multi-refs-ok",
    "ok",
    gen([{**r, "answers": [r["answer"], r["answer"] + " city"]} for r in GEN_ROWS], target="{{ answers }}"),
    OK,
)
add(
    "gen-metric-f1-on-numbers",
    "metrics.mismatch",
    gen([{"id": f"n{i}", "question": f"{i}+{i}?", "answer": 2 * i} for i in range(4)], metrics=["f1"]),
    OK,
)

# ---------------------------------------------------------------- perplexity

PPL = {"kind": "perplexity", "prompt": None, "choices": None, "target": None, "text": "{{ text }}"}
add(
    "ppl-whitespace-text",
    "references.empty",
    native([{"text": "A sentence."}, {"text": "   "}, {"text": "Another one."}], **PPL),
    rule("text.empty"),
)
add(
    "ppl-constant-text",
    "prompt.constant",
    native([{"text": f"row {i}"} for i in range(4)], **{**PPL, "text": "The same text."}),
    rule("prompt.constant"),
)
add(
    "ppl-duplicate-docs",
    "samples.duplicate",
    native([{"text": "A sentence here."}] * 3 + [{"text": "Other."}], **PPL),
    rule("samples.duplicate"),
)
add(
    "ppl-window-one",
    "perplexity.window",
    native([{"text": "A long sentence with words."}], **PPL, perplexity={"window": 1}),
    rule("perplexity.window"),
)
add(
    "ppl-stride-zero",
    "perplexity.window",
    native([{"text": "A long sentence."}], **PPL, perplexity={"window": 8, "stride": 0}),
    ("error", "stride"),
)
add("ppl-ok", "ok", native([{"text": "A sentence."}, {"text": "Another one here."}], **PPL), OK)

# ---------------------------------------------------------------- few-shot

FEW = {"count": 2, "source": {"path": "dev.jsonl"}}
add(
    "fewshot-source-same-file",
    "fewshot.leak",
    native(QUIZ, fewshot={"count": 2, "source": {"path": "data.jsonl"}}),
    rule("fewshot.leak"),
)
add(
    "fewshot-source-byte-copy",
    "fewshot.leak",
    {**native(QUIZ, fewshot=FEW), "dev.jsonl": jsonl(QUIZ)},
    rule("fewshot.leak"),
)
add(
    "fewshot-source-shares-ids",
    "fewshot.leak",
    {**native(QUIZ, fewshot=FEW), "dev.jsonl": jsonl([{**QUIZ[0], "question": "What is 3 + 3?"}, QUIZ[2]])},
    rule("fewshot.leak"),
)
add(
    "fewshot-source-same-content-new-ids",
    "fewshot.leak",
    {**native(QUIZ, fewshot=FEW), "dev.jsonl": jsonl([{**r, "id": "dev-" + r["id"]} for r in QUIZ[:3]])},
    rule("fewshot.leak"),
)
add(
    "fewshot-source-glob-includes-test",
    "fewshot.leak",
    {
        **native(QUIZ, data="split/test.jsonl", fewshot={"count": 2, "source": {"path": "split/*.jsonl"}}),
        "split/test.jsonl": jsonl(QUIZ),
        "split/dev.jsonl": jsonl([{**r, "id": "d" + r["id"], "question": r["question"] + "!"} for r in QUIZ]),
    },
    rule("fewshot.leak"),
)
DEV = [
    {"id": "d1", "question": "What is 1 + 1?", "choices": ["1", "2", "3", "4"], "label": 1, "answer": "2"},
    {
        "id": "d2",
        "question": "Capital of Peru?",
        "choices": ["Lima", "Quito", "Bogota", "Cusco"],
        "label": 0,
        "answer": "Lima",
    },
]
add(
    "fewshot-source-reformatted-copy",
    "fewshot.leak",
    {
        **native(
            QUIZ,
            fewshot={"count": 2, "source": {"path": "dev.jsonl"}, "template": "Q: {{ question }}\nA: {{ answer }}"},
        ),
        "dev.jsonl": jsonl(
            [
                {
                    "answer": r["choices"][r["label"]],
                    "label": r["label"],
                    "question": r["question"].upper(),
                    "choices": r["choices"],
                    "id": "x" + r["id"],
                }
                for r in QUIZ
            ]
        ),
    },
    rule("fewshot.leak"),
)
# a custom few-shot template names its own fields: the source need not have the task's choices or target
add(
    "fewshot-custom-template-own-fields-ok",
    "ok",
    {
        **native(
            QUIZ, fewshot={"count": 2, "source": {"path": "dev.csv"}, "template": "Q: {{ question }}\nA: {{ answer }}"}
        ),
        "dev.csv": csv_text(["id", "question", "answer"], [[d["id"], d["question"], d["answer"]] for d in DEV]),
    },
    OK,
)
add(
    "fewshot-other-split-ok",
    "ok",
    {
        **native(QUIZ, fewshot=FEW),
        "dev.jsonl": jsonl(
            [
                {"id": "d1", "question": "What is 1 + 1?", "choices": ["1", "2", "3", "4"], "label": 1},
                {
                    "id": "d2",
                    "question": "Capital of Peru?",
                    "choices": ["Lima", "Quito", "Bogota", "Cusco"],
                    "label": 0,
                },
            ]
        ),
    },
    OK,
)
# few-shot examples from the evaluated rows themselves: said, as lm-eval's users expect a separate split
add("fewshot-own-data", "fewshot.from-evaluated", native(QUIZ, fewshot={"count": 2}), rule("fewshot.from-evaluated"))
add(
    "fewshot-template-no-answer",
    "fewshot.no-answer",
    {
        **native(QUIZ, fewshot={**FEW, "template": "Q: {{ question }}\nA:"}),
        "dev.jsonl": jsonl(
            [
                {"id": "d1", "question": "1+1?", "choices": ["1", "2"], "label": 1},
                {"id": "d2", "question": "2+1?", "choices": ["3", "1"], "label": 0},
            ]
        ),
    },
    rule("fewshot.no-answer"),
)
add(
    "fewshot-template-wrong-answer-field",
    "fewshot.no-answer",
    {
        **native(QUIZ, fewshot={**FEW, "template": "Q: {{ question }}\nA: {{ choices[0] }}"}),
        "dev.jsonl": jsonl(
            [
                {"id": "d1", "question": "1+1?", "choices": ["1", "2"], "label": 1},
                {"id": "d2", "question": "2+1?", "choices": ["1", "3"], "label": 1},
            ]
        ),
    },
    rule("fewshot.wrong-answer"),
)
add(
    "fewshot-pool-constant-label",
    "fewshot.constant-label",
    {
        **native(QUIZ, fewshot=FEW),
        "dev.jsonl": jsonl(
            [
                {"id": "d1", "question": "1+1?", "choices": ["2", "1"], "label": 0},
                {"id": "d2", "question": "2+1?", "choices": ["3", "1"], "label": 0},
            ]
        ),
    },
    rule("fewshot.constant-label"),
)
add("fewshot-count-larger-than-pool", "fewshot.count", native(QUIZ, fewshot={"count": 6}), ("error", "fewshot.count"))
add(
    "fewshot-count-zero-with-source",
    "fewshot.count",
    {**native(QUIZ, fewshot={**FEW, "count": 0}), "dev.jsonl": jsonl(QUIZ[:1])},
    rule("fewshot.unused"),
)
add(
    "fewshot-template-ignores-row",
    "fewshot.template",
    {**native(QUIZ, fewshot={**FEW, "template": "Q: example\nA: example"}), "dev.jsonl": jsonl(DEV)},
    rule("prompt.constant"),
)

# ---------------------------------------------------------------- data: filter, limit, join, glob, breakdown, ids

add(
    "filter-drops-most",
    "data.filter",
    native(QUIZ, data={"path": "data.jsonl", "filter": "{{ id == 'q1' }}"}),
    rule("data.filter-drops-most"),
)
add(
    "filter-drops-all",
    "data.filter",
    native(QUIZ, data={"path": "data.jsonl", "filter": "{{ id == 'none' }}"}),
    ("error", "filter"),
)
add(
    "filter-string-compare-number",
    "data.filter",
    native(QUIZ, data={"path": "data.jsonl", "filter": "{{ label == '1' }}"}),
    ("error", "filter"),
)
add("filter-keeps-all-ok", "ok", native(QUIZ, data={"path": "data.jsonl", "filter": "{{ label >= 0 }}"}), OK)
add("limit-larger-than-data", "data.limit", native(QUIZ, limit=1000), rule("data.limit-exceeds"))
add(
    "limit-first-rows-sorted-by-label",
    "data.limit",
    native(sorted(QUIZ, key=lambda r: r["label"]), limit=2),
    rule("data.limit-biased"),
)
add(
    "join-other-order",
    "data.join",
    {
        "t.yaml": task_yaml(data={"path": "q.jsonl", "id": "id", "join": "keys.jsonl"}),
        "q.jsonl": jsonl([{k: v for k, v in r.items() if k != "label"} for r in QUIZ]),
        "keys.jsonl": jsonl([{"id": r["id"], "label": r["label"]} for r in reversed(QUIZ)]),
    },
    ("error", "join"),
)
add(
    "join-other-order-no-id-col",
    "data.join",
    {
        "t.yaml": task_yaml(data={"path": "q.jsonl", "join": "keys.jsonl"}),
        "q.jsonl": jsonl([{k: v for k, v in r.items() if k != "label"} for r in QUIZ]),
        "keys.jsonl": jsonl([{"qid": r["id"], "label": r["label"]} for r in reversed(QUIZ)]),
    },
    rule("data.join"),
)
add(
    "join-duplicated-key-rows",
    "data.join",
    {
        "t.yaml": task_yaml(data={"path": "q.jsonl", "join": "keys.jsonl"}),
        "q.jsonl": jsonl([{k: v for k, v in r.items() if k != "label"} for r in QUIZ]),
        "keys.jsonl": jsonl(
            [{"qid": "q1", "label": 1}] * 2 + [{"qid": r["id"], "label": r["label"]} for r in QUIZ[2:]]
        ),
    },
    rule("data.join"),
)
add(
    "join-fewer-rows",
    "data.join",
    {
        "t.yaml": task_yaml(data={"path": "q.jsonl", "join": "keys.jsonl"}),
        "q.jsonl": jsonl([{k: v for k, v in r.items() if k != "label"} for r in QUIZ]),
        "keys.jsonl": jsonl([{"label": r["label"]} for r in QUIZ[:4]]),
    },
    ("error", "join"),
)
add(
    "join-aligned-ok",
    "ok",
    {
        "t.yaml": task_yaml(data={"path": "q.jsonl", "join": "keys.jsonl"}),
        "q.jsonl": jsonl([{k: v for k, v in r.items() if k != "label"} for r in QUIZ]),
        "keys.jsonl": jsonl([{"id": r["id"], "label": r["label"]} for r in QUIZ]),
    },
    OK,
)
add(
    "glob-two-folders-same-stem",
    "data.glob-merge",
    {
        "t.yaml": task_yaml(data="*/test.jsonl", breakdown="_file"),
        "a/test.jsonl": jsonl(QUIZ[:3]),
        "b/test.jsonl": jsonl([{**r, "id": "b" + r["id"]} for r in QUIZ[3:]]),
    },
    rule("data.glob-merge"),
)
add(
    "glob-overlapping-files",
    "data.glob-merge",
    {
        "t.yaml": task_yaml(data={"path": "parts/*.jsonl"}),
        "parts/p1.jsonl": jsonl(QUIZ[:4]),
        "parts/p2.jsonl": jsonl(QUIZ[2:]),
    },
    rule("samples.duplicate"),
)
add(
    "glob-includes-train",
    "data.split",
    {
        "t.yaml": task_yaml(data="mmlu/*.jsonl"),
        "mmlu/x_test.jsonl": jsonl(QUIZ[:3]),
        "mmlu/x_train.jsonl": jsonl([{**r, "id": "t" + r["id"]} for r in QUIZ[3:]]),
    },
    rule("data.split"),
)
add(
    "data-is-train-split",
    "data.split",
    {"t.yaml": task_yaml(data="train.jsonl"), "train.jsonl": jsonl(QUIZ)},
    rule("data.split"),
)
add(
    "glob-disjoint-ok",
    "ok",
    {"t.yaml": task_yaml(data="parts/*.jsonl"), "parts/p1.jsonl": jsonl(QUIZ[:3]), "parts/p2.jsonl": jsonl(QUIZ[3:])},
    OK,
)
add(
    "breakdown-mixed-types",
    "breakdown.mixed",
    native([{**r, "subject": 1 if i % 2 else "1"} for i, r in enumerate(QUIZ)], breakdown="subject"),
    rule("breakdown.mixed"),
)
add(
    "breakdown-missing-some",
    "breakdown.mixed",
    native([{**r, **({"subject": "math"} if i < 3 else {})} for i, r in enumerate(QUIZ)], breakdown="subject"),
    rule("breakdown.mixed"),
)
add(
    "breakdown-null-some",
    "breakdown.mixed",
    native([{**r, "subject": "math" if i < 3 else None} for i, r in enumerate(QUIZ)], breakdown="subject"),
    rule("breakdown.mixed"),
)
add(
    "breakdown-case-variants",
    "breakdown.mixed",
    native([{**r, "subject": "Math" if i % 2 else "math "} for i, r in enumerate(QUIZ)], breakdown="subject"),
    rule("breakdown.mixed"),
)
add("breakdown-per-row", "breakdown.per-row", native(QUIZ, breakdown="id"), rule("breakdown.per-row"))
add(
    "breakdown-ok",
    "ok",
    native([{**r, "subject": "math" if i % 2 else "geo"} for i, r in enumerate(QUIZ)], breakdown="subject"),
    OK,
)
add(
    "ids-int-vs-string",
    "ids.mixed",
    native(
        [{**r, "id": 1 if i == 0 else ("1" if i == 1 else r["id"])} for i, r in enumerate(QUIZ)],
        data={"path": "data.jsonl", "id": "id"},
    ),
    rule("ids.look-alike"),
)
add(
    "ids-case-variants",
    "ids.mixed",
    native(
        [{**r, "id": "Q1" if i == 1 else r["id"]} for i, r in enumerate(QUIZ)], data={"path": "data.jsonl", "id": "id"}
    ),
    rule("ids.look-alike"),
)
add(
    "ids-whitespace-variants",
    "ids.mixed",
    native(
        [{**r, "id": "q1 " if i == 1 else r["id"]} for i, r in enumerate(QUIZ)], data={"path": "data.jsonl", "id": "id"}
    ),
    rule("ids.look-alike"),
)

# ---------------------------------------------------------------- encodings and CSV

MC3 = {"data": "d.csv", "choices": ["{{ a }}", "{{ b }}", "{{ c }}"], "target": "{{ label | int }}"}
CSV_ROWS = [["2+2?", "3", "4", "5", "1"], ["1+1?", "2", "3", "4", "0"], ["3+3?", "5", "7", "6", "2"]]
HEADER = ["question", "a", "b", "c", "label"]
add("csv-ok", "ok", {"t.yaml": task_yaml(**MC3), "d.csv": csv_text(HEADER, CSV_ROWS)}, OK)
add("csv-bom-ok", "ok", {"t.yaml": task_yaml(**MC3), "d.csv": "\ufeff" + csv_text(HEADER, CSV_ROWS)}, OK)
add(
    "csv-nan-label",
    "csv.nan",
    {"t.yaml": task_yaml(**MC3), "d.csv": csv_text(HEADER, [*CSV_ROWS[:2], ["3+3?", "5", "7", "6", "NaN"]])},
    ("error", "row"),
)
add(
    "csv-na-choice",
    "csv.nan",
    {"t.yaml": task_yaml(**MC3), "d.csv": csv_text(HEADER, [*CSV_ROWS[:2], ["3+3?", "NA", "7", "6", "2"]])},
    rule("choices.placeholder"),
)
add(
    "csv-none-choice-text",
    "csv.nan",
    {"t.yaml": task_yaml(**MC3), "d.csv": csv_text(HEADER, [*CSV_ROWS[:2], ["3+3?", "None", "7", "6", "2"]])},
    rule("choices.placeholder"),
)
add(
    "csv-nan-text-choice",
    "csv.nan",
    {"t.yaml": task_yaml(**MC3), "d.csv": csv_text(HEADER, [*CSV_ROWS[:2], ["3+3?", "nan", "7", "6", "2"]])},
    rule("choices.placeholder"),
)
add(
    "csv-header-as-data",
    "csv.header",
    {
        "t.yaml": task_yaml(**{**MC3, "data": {"path": "d.csv", "columns": HEADER}}),
        "d.csv": csv_text(None, [["Question", "A", "B", "C", "0"], *CSV_ROWS]),
    },
    rule("data.header-row"),
)
add(
    "csv-semicolon-one-column",
    "csv.delimiter",
    {
        "t.yaml": task_yaml(data="d.csv", prompt="{{ question }}", choices=["yes", "no"], target="{{ 0 }}"),
        "d.csv": "question;label\n2+2=4?;0\n1+1=3?;1\n",
    },
    ("error", "question"),
)
add(
    "csv-label-letter-lowercase",
    "target.coerced",
    {
        "t.yaml": task_yaml(**{**MC3, "target": "{{ 'ABC'.index(label) }}"}),
        "d.csv": csv_text(HEADER, [["2+2?", "3", "4", "5", "B"], ["1+1?", "2", "3", "4", "a"]]),
    },
    ("error", "target"),
)
add("jsonl-bom-ok", "ok", {"t.yaml": task_yaml(), "data.jsonl": "\ufeff" + jsonl(QUIZ)}, OK)
add(
    "jsonl-latin1",
    "encoding",
    {"t.yaml": task_yaml(), "data.jsonl": jsonl(with_row(1, question="Caf\u00e9?")).encode("latin-1")},
    ("error", "utf-8"),
)
add(
    "jsonl-mojibake",
    "encoding",
    native(
        with_row(
            1,
            question="Caf\u00e9?".encode().decode("latin-1"),
            choices=["Paris", "Rome", "Caf\u00e9".encode().decode("latin-1"), "Oslo"],
        )
    ),
    rule("text.damaged"),
)
add("jsonl-replacement-char", "encoding", native(with_row(1, question="Caf\ufffd?")), rule("text.damaged"))
add(
    "jsonl-html-entities",
    "encoding",
    native(with_row(1, choices=["Paris &amp; Lyon", "Rome", "Oslo", "Bern"], label=0)),
    rule("text.escaped"),
)
add(
    "jsonl-escaped-newlines",
    "encoding",
    native([{**r, "question": r["question"] + "\\nExplain."} for r in QUIZ]),
    rule("text.escaped"),
)
add("yaml-bom-ok", "ok", {"t.yaml": "\ufeff" + task_yaml(), "data.jsonl": jsonl(QUIZ)}, OK)
add(
    "yaml-choices-bare-yes-no",
    "yaml.coercion",
    {
        "t.yaml": task_yaml(target="{{ label % 2 }}").replace(
            "choices: '{{ choices }}'", "choices:\n    - yes\n    - no"
        ),
        "data.jsonl": jsonl(QUIZ),
    },
    ("error", "choices"),
)
add(
    "yaml-choices-octal-like",
    "yaml.coercion",
    {
        "t.yaml": task_yaml(target="{{ label % 2 }}").replace(
            "choices: '{{ choices }}'", "choices:\n    - 010\n    - 10"
        ),
        "data.jsonl": jsonl(QUIZ),
    },
    rule("choices.duplicate"),
)

# ---------------------------------------------------------------- groups and metrics

TWO = """\
tasks:
  - name: quiz_a
    kind: multiple_choice
    data: data.jsonl
    prompt: "Q: {{ question }}\\nA:"
    choices: "{{ choices }}"
    target: "{{ label }}"
    group: quizzes
  - name: quiz_b
    kind: multiple_choice
    data: data.jsonl
    prompt: "Q: {{ question }}\\nA:"
    choices: "{{ choices }}"
    target: "{{ label }}"
    group: quizzes
"""
add(
    "group-same-task-twice-other-name",
    "task.duplicate",
    {"t.yaml": TWO, "data.jsonl": jsonl(QUIZ)},
    rule("task.duplicate"),
)
add(  # two members over one file whose filters overlap: rows 3 and 4 are in both
    "group-members-overlap",
    "group.overlap",
    {
        "t.yaml": TWO.replace("data: data.jsonl", 'data: {path: data.jsonl, filter: "{{ _row <= 4 }}"}', 1).replace(
            "data: data.jsonl", 'data: {path: data.jsonl, filter: "{{ _row >= 3 }}"}', 1
        ),
        "data.jsonl": jsonl(QUIZ),
    },
    rule("group.overlap"),
)
BY_SUBJECT = [
    {**r, "id": f"{s}-{r['id']}", "question": f"{s}: {r['question']}", "subject": s}
    for s in ("algebra", "anatomy", "astronomy")
    for r in QUIZ
]
add(  # a limit over a file ordered by subject keeps the first subject's rows only
    "limit-keeps-one-subject",
    "data.limit-biased",
    native(BY_SUBJECT, limit=6, breakdown="subject"),
    rule("data.limit-biased"),
)
add(
    "limit-over-interleaved-subjects-ok",
    "ok",
    native([BY_SUBJECT[i + 6 * j] for i in range(6) for j in range(3)], limit=6, breakdown="subject"),
    OK,
)
COPA = [
    {"id": f"c{i}", "premise": p, "choice1": a, "choice2": b, "question": q, "label": g}
    for i, (p, a, b, q, g) in enumerate(
        [
            ("The ground was wet.", "It rained.", "It was sunny.", "cause", 0),
            ("I dropped the glass.", "It shattered.", "It floated.", "effect", 0),
            ("The man was tired.", "He slept early.", "He ran a race.", "effect", 0),
            ("The road was icy.", "It was cold.", "It was hot.", "cause", 0),
            ("She studied hard.", "She failed.", "She passed.", "effect", 1),
            ("The lights went out.", "A fuse blew.", "The sun rose.", "cause", 0),
        ]
    )
]
COPA_TASK = {"choices": ["{{ choice1 }}", "{{ choice2 }}"], "target": "{{ label }}"}
add(  # every row asked 'because', while half ask for the effect
    "copa-prompt-ignores-cause-effect",
    "prompt.drops-condition",
    native(COPA, prompt="{{ premise[:-1] }} because", **COPA_TASK),
    rule("prompt.drops-condition"),
)
add(
    "copa-prompt-reads-cause-effect-ok",
    "ok",
    native(COPA, prompt="{{ premise[:-1] }} {{ 'because' if question == 'cause' else 'so' }}", **COPA_TASK),
    OK,
)
add(
    "group-one-row-task",
    "group.tiny-member",
    {
        "t.yaml": TWO.replace("data: data.jsonl", "data: one.jsonl", 1),
        "data.jsonl": jsonl(QUIZ),
        "one.jsonl": jsonl(QUIZ[:1]),
    },
    rule("group.tiny-member"),
)
add(
    "metrics-acc-norm-letters",
    "metrics.mismatch",
    native(
        QUIZ,
        prompt=LETTERED + "Answer:",
        choices=["A", "B", "C", "D"],
        metrics=["acc_norm"],
    ),
    rule("metrics.mismatch"),
)
add("choice-temperature-tiny", "metrics.mismatch", native(QUIZ, choice_temperature=1e-9), rule("metrics.mismatch"))
add("metric-exact-match-on-mc", "metrics.mismatch", native(QUIZ, metrics=["exact_match"]), ("error", "exact_match"))
add("metric-word-ppl-on-gen", "metrics.mismatch", gen(metrics=["word_perplexity"]), ("error", "word_perplexity"))
add(
    "two-tasks-ok",
    "ok",
    {
        "t.yaml": TWO.replace("data: data.jsonl", "data: b.jsonl", 1),
        "data.jsonl": jsonl(QUIZ),
        "b.jsonl": jsonl([{**r, "id": "b" + r["id"], "question": "Again: " + r["question"]} for r in QUIZ]),
    },
    OK,
)

# ---------------------------------------------------------------- real data shapes (../shared/data)


def mmlu_head(n: int = 8) -> str:
    path = SHARED / "data" / "mmlu" / "anatomy_test.csv"
    return (
        "".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:n])
        if path.exists()
        else csv_text(None, [["Q?", "a", "b", "c", "d", "A"], ["R?", "e", "f", "g", "h", "B"]])
    )


MMLU = {
    "data": {"path": "anatomy_test.csv", "columns": ["question", "A", "B", "C", "D", "answer"]},
    "prompt": "{{ question }}\nA. {{ A }}\nB. {{ B }}\nC. {{ C }}\nD. {{ D }}\nAnswer:",
    "choices": ["A", "B", "C", "D"],
    "target": "{{ 'ABCD'.index(answer) }}",
}
add("mmlu-real-ok", "ok", {"t.yaml": task_yaml(**MMLU), "anatomy_test.csv": mmlu_head()}, OK)
add(
    "mmlu-fewshot-from-test",
    "fewshot.leak",
    {
        "t.yaml": task_yaml(
            **MMLU,
            fewshot={
                "count": 3,
                "source": {"path": "anatomy_dev.csv", "columns": ["question", "A", "B", "C", "D", "answer"]},
            },
        ),
        "anatomy_test.csv": mmlu_head(),
        "anatomy_dev.csv": mmlu_head(4),
    },
    rule("fewshot.leak"),
)
add(
    "mmlu-columns-shifted",
    "data.columns",
    {
        "t.yaml": task_yaml(
            **{**MMLU, "data": {"path": "anatomy_test.csv", "columns": ["A", "B", "C", "D", "question", "answer"]}}
        ),
        "anatomy_test.csv": mmlu_head(),
    },
    rule("data.columns"),
)
add(
    "mmlu-answer-index-plus-one",
    "labels.off-by-one",
    {
        "t.yaml": task_yaml(**{**MMLU, "target": "{{ 'ABCD'.index(answer) + 1 if answer != 'D' else 0 }}"}),
        "anatomy_test.csv": mmlu_head(),
    },
    rule("labels.off-by-one"),
)
add(
    "mmlu-target-is-letter-text",
    "target.ambiguous",
    {"t.yaml": task_yaml(**{**MMLU, "target": "{{ answer }}"}), "anatomy_test.csv": mmlu_head()},
    OK,
)
add(
    "mmlu-choices-are-texts-but-prompt-has-letters",
    "prompt.delimiter",
    {
        "t.yaml": task_yaml(**{**MMLU, "choices": ["{{ A }}", "{{ B }}", "{{ C }}", "{{ D }}"]}),
        "anatomy_test.csv": mmlu_head(),
    },
    OK,
)


def boolq_rows(n: int = 6) -> list[dict]:
    path = SHARED / "data" / "boolq" / "boolq.jsonl"
    if path.exists():
        with path.open(encoding="utf-8") as handle:
            return [json.loads(next(handle)) for _ in range(n)]
    return [{"query": f"Passage {i}\nQuestion: q?\nAnswer:", "choices": ["no", "yes"], "gold": i % 2} for i in range(n)]


BOOLQ = boolq_rows()
BOOLQ_KEYS = sorted(BOOLQ[0])
add("boolq-real-ok", "ok", native(BOOLQ, prompt="{{ query }}", choices="{{ choices }}", target="{{ gold }}"), OK)
add(
    "boolq-choices-reversed",
    "target.flipped",
    native(BOOLQ, prompt="{{ query }}", choices=["yes", "no"], target="{{ gold }}"),
    rule("target.flipped"),
)

# ---------------------------------------------------------------- lm-eval task files

LM = """\
task: quiz
dataset_path: json
dataset_kwargs:
  data_files:
    train: train.jsonl
    test: test.jsonl
output_type: multiple_choice
test_split: test
fewshot_split: train
doc_to_text: "Q: {{question}}\\nA:"
doc_to_choice: choices
doc_to_target: label
"""
TRAIN = [
    {"id": "t" + r["id"], "question": "Train: " + r["question"], "choices": r["choices"], "label": r["label"]}
    for r in QUIZ
]
LM_ARGS = ["validate", "quiz.yaml"]


def lm(yaml_text: str = LM, test: list[dict] | None = None, train: list[dict] | None = None) -> Files:
    return {
        "quiz.yaml": yaml_text,
        "test.jsonl": jsonl(QUIZ if test is None else test),
        "train.jsonl": jsonl(TRAIN if train is None else train),
    }


def lm_add(name: str, category: str, files: Files, expect: tuple, args: list[str] | None = None) -> None:
    add("lmeval-" + name, category, files, expect, args or LM_ARGS)


lm_add("ok", "ok", lm(), OK)
lm_add("fewshot-ok", "ok", lm(LM + "num_fewshot: 2\n"), OK)
lm_add(
    "dup-choices", "choices.duplicate", lm(test=with_row(0, choices=["4", "4", "5", "6"])), rule("choices.duplicate")
)
lm_add(
    "dup-choices-case",
    "choices.duplicate",
    lm(test=with_row(1, choices=["Paris", "PARIS", "Rome", "Oslo"], label=0)),
    rule("choices.duplicate"),
)
lm_add(
    "fewshot-split-is-test",
    "fewshot.leak",
    lm(LM.replace("fewshot_split: train", "fewshot_split: test") + "num_fewshot: 2\n"),
    rule("fewshot.leak"),
)
lm_add("fewshot-train-is-copy", "fewshot.leak", lm(LM + "num_fewshot: 2\n", train=QUIZ), rule("fewshot.leak"))
lm_add(
    "fewshot-same-file-both-splits",
    "fewshot.leak",
    lm(LM.replace("train: train.jsonl", "train: test.jsonl") + "num_fewshot: 2\n"),
    rule("fewshot.leak"),
)
lm_add(
    "fewshot-no-split",
    "fewshot.leak",
    lm(LM.replace("fewshot_split: train\n", "") + "num_fewshot: 2\n"),
    rule("fewshot.leak"),
)
lm_add(
    "target-constant",
    "target.constant",
    lm(LM.replace("doc_to_target: label", "doc_to_target: 0")),
    rule("target.constant"),
)
lm_add(
    "target-one-based",
    "labels.off-by-one",
    lm(LM.replace("doc_to_target: label", 'doc_to_target: "{{label + 1 if label < 3 else 0}}"')),
    rule("labels.off-by-one"),
)
lm_add(
    "target-text-ambiguous",
    "target.ambiguous",
    lm(
        LM.replace("doc_to_target: label", 'doc_to_target: "{{choices[label]}}"'),
        test=with_row(0, choices=["4", "4", "5", "6"]),
    ),
    rule("target.ambiguous"),
)
lm_add("target-string-digit", "target.coerced", lm(test=with_row(1, label="2")), rule("target.coerced"))
lm_add("target-bool", "target.coerced", lm(test=with_row(0, label=True)), rule("target.coerced"))
lm_add(
    "prompt-contains-gold",
    "prompt.contains-gold",
    lm(LM.replace('doc_to_text: "Q: {{question}}\\nA:"', 'doc_to_text: "Q: {{question}} ({{choices[label]}})\\nA:"')),
    rule("prompt.contains-gold"),
)
lm_add(
    "prompt-constant",
    "prompt.constant",
    lm(LM.replace('doc_to_text: "Q: {{question}}\\nA:"', 'doc_to_text: "Answer:"')),
    rule("prompt.constant"),
)
lm_add(
    "prompt-missing-field-renders-empty",
    "prompt.constant",
    lm(LM.replace('doc_to_text: "Q: {{question}}\\nA:"', 'doc_to_text: "Q: {{query}}\\nA:"')),
    ("error", "query"),
)
lm_add(
    "choices-single",
    "choices.single",
    lm(
        LM.replace("doc_to_choice: choices", 'doc_to_choice: ["yes"]').replace(
            "doc_to_target: label", "doc_to_target: 0"
        )
    ),
    rule("choices.single"),
)
lm_add(
    "choices-literal-duplicate",
    "choices.duplicate",
    lm(
        LM.replace("doc_to_choice: choices", 'doc_to_choice: ["yes", "Yes"]').replace(
            "doc_to_target: label", 'doc_to_target: "{{label % 2}}"'
        )
    ),
    rule("choices.duplicate"),
)
lm_add(
    "samples-duplicate", "samples.duplicate", lm(test=QUIZ + [{**QUIZ[0], "id": "again"}]), rule("samples.duplicate")
)
lm_add("target-delimiter-empty", "prompt.delimiter", lm(LM + 'target_delimiter: ""\n'), rule("prompt.delimiter"))
LM_GEN = (
    LM.replace("output_type: multiple_choice", "output_type: generate_until")
    .replace("doc_to_choice: choices\n", "")
    .replace("doc_to_target: label", 'doc_to_target: "{{choices[label]}}"')
)
# lm-eval's exact_match compares the answer as written, with the space the model writes after "A:": the space
# is dropped by a filter (as lm-eval's nq_open and triviaqa do)
LM_STRIP = (
    "filter_list:\n  - name: strip\n    filter:\n      - function: remove_whitespace\n      - function: take_first\n"
)
lm_add("gen-ok", "ok", lm(LM_GEN + 'generation_kwargs:\n  until: ["\\n"]\n  max_gen_toks: 8\n' + LM_STRIP), OK)
lm_add(
    "gen-answer-keeps-space",
    "extraction.cuts-reference",
    lm(LM_GEN + 'generation_kwargs:\n  until: ["\\n"]\n  max_gen_toks: 8\n'),
    rule("lmeval.filter-cuts-reference"),
)
lm_add(  # YAML single quotes keep '\n' as a backslash and an n: generation never stops at a newline
    "gen-until-single-quoted",
    "settings.escaped",
    lm(LM_GEN + "generation_kwargs:\n  until: ['\\n']\n  max_gen_toks: 8\n"),
    rule("settings.escaped"),
)
lm_add(
    "gen-until-prefix",
    "generation.stop-prefix",
    lm(LM_GEN + "generation_kwargs:\n  until: ['P', 'B', 'W', 'S', 'I', '4', '6', '3', 'E']\n  max_gen_toks: 8\n"),
    rule("generation.stop-inside-answer"),
)
lm_add(
    "gen-max-gen-toks-one",
    "generation.too-short",
    lm(
        LM_GEN.replace(
            'doc_to_target: "{{choices[label]}}"', 'doc_to_target: "The answer is {{choices[label]}} of course"'
        )
        + 'generation_kwargs:\n  until: ["\\n"]\n  max_gen_toks: 1\n'
    ),
    rule("generation.too-short"),
)
lm_add(
    "gen-target-index",
    "target.index-as-reference",
    lm(LM_GEN.replace('doc_to_target: "{{choices[label]}}"', "doc_to_target: label")),
    rule("target.index-as-reference"),
)
lm_add(
    "gen-target-empty",
    "references.empty",
    lm(LM_GEN, test=[*QUIZ[:5], {**QUIZ[5], "choices": ["", "", "", ""]}]),
    rule("references.empty"),
)
lm_add(
    "cli-num-fewshot-without-split",
    "fewshot.leak",
    lm(LM.replace("fewshot_split: train\n", "")),
    rule("lmeval.fewshot-from-evaluated"),
    args=["run", "quiz.yaml", "--num-fewshot", "3", "-m", "{model}", "-o", "out", "-q"],
)

# ---- the answer format the prompt asks for against what is stopped, shown and scored (red team 10: 3, 4, 6, 7)
LM_EM = "metric_list:\n  - metric: exact_match\n"
LM_COT = LM_GEN.replace(
    'doc_to_text: "Q: {{question}}\\nA:"', 'doc_to_text: "Q: {{question}}\\nThink step by step.\\nA:"'
)
LM_REGEX = (
    "filter_list:\n  - name: get\n    filter:\n      - function: regex\n"
    "        regex_pattern: 'The answer is (.+)\\.'\n"
)
lm_add(  # the reasoning's first line ends generation before 'The answer is'
    "cot-until-newline",
    "generation.stop-inside-answer",
    lm(LM_COT + 'generation_kwargs:\n  until: ["\\n"]\n  max_gen_toks: 128\n' + LM_REGEX),
    rule("generation.stop-inside-answer"),
)
lm_add(
    "cot-until-blank-line-ok",
    "ok",
    lm(LM_COT + 'generation_kwargs:\n  until: ["\\n\\n"]\n  max_gen_toks: 128\n' + LM_REGEX),
    OK,
)
LM_QUESTION = LM_GEN.replace('doc_to_text: "Q: {{question}}\\nA:"', 'doc_to_text: "Question: {{question}}\\nAnswer:"')
lm_add(  # 'Q:' never stops a run-on into the next 'Question: ...'
    "until-misses-next-cue",
    "generation.unbounded-answer",
    lm(LM_QUESTION + 'generation_kwargs:\n  until: ["Q:"]\n  max_gen_toks: 16\n' + LM_STRIP + LM_EM),
    rule("generation.unbounded-answer"),
)
LM_TEXTS = [{**r, "choices": [f"the {c.lower()} one" for c in r["choices"]]} for r in QUIZ]  # several words each
lm_add(
    "description-asks-letter",
    "prompt.asks-other-form",
    lm(LM + 'description: "Answer with the letter of the correct option.\\n\\n"\n', test=LM_TEXTS),
    rule("prompt.asks-other-form"),
)
LM_LISTED = LM.replace(
    'doc_to_text: "Q: {{question}}\\nA:"',
    'doc_to_text: "{{question}}\\nA. {{choices[0]}}\\nB. {{choices[1]}}\\nC. {{choices[2]}}\\n'
    'D. {{choices[3]}}\\nAnswer:"',
)
lm_add(
    "numbers-under-letters",
    "prompt.options-listed-wrong",
    lm(LM_LISTED.replace("doc_to_choice: choices", "doc_to_choice: ['1', '2', '3', '4']")),
    rule("prompt.options-listed-wrong"),
)
lm_add(
    "letters-under-letters-ok",
    "ok",
    lm(
        LM_LISTED.replace("doc_to_choice: choices", "doc_to_choice: ['A', 'B', 'C', 'D']")
        + "metric_list:\n  - metric: acc\n"
    ),
    OK,
)
LM_ABOVE = [*QUIZ[:5], {**QUIZ[5], "choices": ["Steam", "Ice", "Fog", "All of the above"]}]
lm_add("cloze-all-of-the-above", "choices.refers-to-listing", lm(test=LM_ABOVE), rule("choices.refers-to-listing"))
lm_add("listed-all-of-the-above-ok", "ok", lm(LM_LISTED, test=LM_ABOVE), OK)
LM_PRESPACED = LM.replace(
    "doc_to_choice: choices", "doc_to_choice: \"{{choices | map('regex_replace', '^', ' ') | list}}\""
)
lm_add(  # the choices carry lm-eval's space and target_delimiter adds another
    "choices-prespaced", "prompt.delimiter", lm(LM_PRESPACED), rule("prompt.delimiter")
)
lm_add("choices-prespaced-empty-delimiter-ok", "ok", lm(LM_PRESPACED + 'target_delimiter: ""\n'), OK)
lm_add(  # every reference repeats the 'A:' the prompt ends with
    "target-carries-cue",
    "prompt.doubled-cue",
    lm(LM_GEN.replace('doc_to_target: "{{choices[label]}}"', 'doc_to_target: "A: {{choices[label]}}"')),
    rule("prompt.doubled-cue"),
)
ANSWER_FORMAT_FEWSHOT = {"count": 2, "source": {"path": "dev.jsonl"}}
add(  # the examples are written Q:/A:, the question Question:/Answer:
    "fewshot-other-cue",
    "fewshot.other-format",
    {
        **native(
            prompt="Question: {{ question }}\nAnswer:",
            fewshot={**ANSWER_FORMAT_FEWSHOT, "template": "Q: {{ question }}\nA: {{ choices[label] }}"},
        ),
        "dev.jsonl": jsonl(TRAIN),
    },
    rule("fewshot.other-format"),
)
add(  # the examples answer with a letter; the choices are texts and nothing is listed
    "fewshot-letter-for-texts",
    "fewshot.wrong-answer",
    {
        **native(
            LM_TEXTS,
            fewshot={**ANSWER_FORMAT_FEWSHOT, "template": "Q: {{ question }}\nA: {{ 'ABCD'[label] }}"},
        ),
        "dev.jsonl": jsonl(LM_TEXTS),
    },
    rule("fewshot.wrong-answer"),
)
add(
    "fewshot-own-template-ok",
    "ok",
    {
        **native(fewshot={**ANSWER_FORMAT_FEWSHOT, "template": "Q: {{ question }}\nA: {{ choices[label] }}"}),
        "dev.jsonl": jsonl(TRAIN),
    },
    OK,
)

# ---------------------------------------------------------------- GLM-130B task files

GLM = """\
name: "glmtask"
type: "mul"
path: "data"
file-pattern:
  test: "**/test.jsonl"
micro-batch-size: 2
"""
GLM_ROWS = [
    {"inputs_pretokenized": "The sky is", "choices_pretokenized": ["blue", "green"], "label": 0},
    {"inputs_pretokenized": "Grass is", "choices_pretokenized": ["red", "green"], "label": 1},
    {"inputs_pretokenized": "Snow is", "choices_pretokenized": ["white", "black"], "label": 0},
    {"inputs_pretokenized": "Coal is", "choices_pretokenized": ["white", "black"], "label": 1},
]
GLM_GEN = GLM.replace('type: "mul"', 'type: "gen"')
GLM_GEN_ROWS = [
    {"inputs_pretokenized": f"Capital of {c}?", "targets_pretokenized": [a]}
    for c, a in [("France", "Paris"), ("Italy", "Rome"), ("Spain", "Madrid")]
]


def glm(rows: list[dict] | None = None, yaml_text: str = GLM, extra: Files | None = None) -> Files:
    return {
        "glm.yaml": yaml_text,
        "data/prompt_1/test.jsonl": jsonl(GLM_ROWS if rows is None else rows),
        **(extra or {}),
    }


def glm_add(name: str, category: str, files: Files, expect: tuple) -> None:
    add("glm-" + name, category, files, expect, ["validate", "glm.yaml"])


glm_add("ok", "ok", glm(), OK)
# a stop string: without one, 128 tokens run on after the answer (generation.unbounded-answer)
glm_add("gen-ok", "ok", glm(GLM_GEN_ROWS, GLM_GEN + 'stop: ["\\n"]\n'), OK)
glm_add(
    "dup-choices",
    "choices.duplicate",
    glm([{**GLM_ROWS[0], "choices_pretokenized": ["blue", "blue"]}, *GLM_ROWS[1:]]),
    rule("choices.duplicate"),
)
glm_add(
    "dup-choices-space",
    "choices.duplicate",
    glm([{**GLM_ROWS[0], "choices_pretokenized": ["blue", " blue"]}, *GLM_ROWS[1:]]),
    rule("choices.duplicate"),
)
glm_add("target-constant", "target.constant", glm([{**r, "label": 0} for r in GLM_ROWS]), rule("target.constant"))
glm_add("label-bool", "target.coerced", glm([{**GLM_ROWS[0], "label": False}, *GLM_ROWS[1:]]), rule("target.coerced"))
glm_add("label-string", "target.coerced", glm([{**GLM_ROWS[0], "label": "0"}, *GLM_ROWS[1:]]), rule("target.coerced"))
glm_add("label-float", "target.coerced", glm([{**GLM_ROWS[0], "label": 0.0}, *GLM_ROWS[1:]]), rule("target.coerced"))
glm_add(
    "labels-one-based",
    "labels.off-by-one",
    glm(
        [{**r, "choices_pretokenized": r["choices_pretokenized"] + ["grey"], "label": r["label"] + 1} for r in GLM_ROWS]
    ),
    rule("labels.off-by-one"),
)
glm_add(
    "choices-single",
    "choices.single",
    glm([{**GLM_ROWS[0], "choices_pretokenized": ["blue"]}, *GLM_ROWS[1:]]),
    rule("choices.single"),
)
glm_add(
    "input-contains-gold",
    "prompt.contains-gold",
    glm(
        [
            {**r, "inputs_pretokenized": r["inputs_pretokenized"] + " (" + r["choices_pretokenized"][r["label"]] + ")"}
            for r in GLM_ROWS
        ]
    ),
    rule("prompt.contains-gold"),
)
glm_add("samples-duplicate", "samples.duplicate", glm(GLM_ROWS + GLM_ROWS[:1]), rule("samples.duplicate"))
glm_add(
    "prompt-folders-identical",
    "data.glob-merge",
    glm(extra={"data/prompt_2/test.jsonl": jsonl(GLM_ROWS)}),
    rule("data.glob-merge"),
)
glm_add(
    "gen-target-empty",
    "references.empty",
    glm([*GLM_GEN_ROWS[:2], {**GLM_GEN_ROWS[2], "targets_pretokenized": [""]}], GLM_GEN),
    rule("references.empty"),
)
glm_add(
    "gen-target-whitespace",
    "references.empty",
    glm([*GLM_GEN_ROWS[:2], {**GLM_GEN_ROWS[2], "targets_pretokenized": [" "]}], GLM_GEN),
    rule("references.empty"),
)
glm_add(
    "gen-target-in-input",
    "prompt.contains-gold",
    glm(
        [
            {**r, "inputs_pretokenized": r["inputs_pretokenized"] + " " + r["targets_pretokenized"][0]}
            for r in GLM_GEN_ROWS
        ],
        GLM_GEN,
    ),
    rule("prompt.contains-gold"),
)
glm_add(
    "gen-max-gen-length-one",
    "generation.too-short",
    glm(
        [{**r, "targets_pretokenized": ["It is the city of " + r["targets_pretokenized"][0]]} for r in GLM_GEN_ROWS],
        GLM_GEN + "max_gen_length: 1\n",
    ),
    rule("generation.too-short"),
)
glm_add(
    "pattern-matches-train",
    "data.split",
    glm(
        GLM_ROWS,
        GLM.replace('"**/test.jsonl"', '"**/*.jsonl"'),
        extra={"data/prompt_1/train.jsonl": jsonl(GLM_ROWS[:2])},
    ),
    rule("data.split"),
)

# ---------------------------------------------------------------- probsem suites

PROBSEM_PROMPT = "Read the statements and judge them.\n"
SUITE = {
    "pretext": "Is it true?",
    "context": [
        {"text": "The sky is blue.", "expected": 0},
        {"text": "Fish can fly.", "expected": 1},
        {"text": "Water is wet.", "expected": 0},
        {"text": "Stones can sing.", "expected": 1},
    ],
    "posttext": "Answer:",
    "queries": ["True", "False"],
}


def probsem(suite: dict) -> Files:
    return {"p/test.txt": PROBSEM_PROMPT, "p/test_A.json": json.dumps(suite, ensure_ascii=False)}


def ps_add(name: str, category: str, suite_changes: dict, expect: tuple) -> None:
    add("probsem-" + name, category, probsem({**SUITE, **suite_changes}), expect, ["validate", "p"])


ps_add("ok", "ok", {}, OK)
ps_add("dup-queries", "choices.duplicate", {"queries": ["True", "True"]}, rule("choices.duplicate"))
ps_add("dup-queries-case", "choices.duplicate", {"queries": ["True", "true", "False"]}, rule("choices.duplicate"))
ps_add(
    "single-query",
    "choices.single",
    {"queries": ["True"], "context": [{**c, "expected": 0} for c in SUITE["context"]]},
    rule("choices.single"),
)
ps_add(
    "expected-constant",
    "target.constant",
    {"context": [{**c, "expected": 0} for c in SUITE["context"]]},
    rule("target.constant"),
)
ps_add(  # probsem's documented 'no gold: the sample gets its distribution' (fp14 FP-009); the run says NaN
    "expected-none-anywhere-ok",
    "ok",
    {"context": [{**c, "expected": -1} for c in SUITE["context"]]},
    OK,
)
ps_add(
    "expected-bool",
    "target.coerced",
    {"context": [{**SUITE["context"][0], "expected": True}, *SUITE["context"][1:]]},
    rule("target.coerced"),
)
ps_add(
    "expected-string",
    "target.coerced",
    {"context": [{**SUITE["context"][0], "expected": "1"}, *SUITE["context"][1:]]},
    rule("target.coerced"),
)
ps_add(
    "expected-out-of-range",
    "target.range",
    {"context": [{**SUITE["context"][0], "expected": 2}, *SUITE["context"][1:]]},
    ("error", "expected"),
)
ps_add(
    "samples-duplicate",
    "samples.duplicate",
    {"context": SUITE["context"] + SUITE["context"][:1]},
    rule("samples.duplicate"),
)
ps_add(
    "posttext-gives-answer",
    "prompt.contains-gold",
    {"posttext": "The answer is True. Answer:"},
    rule("prompt.contains-gold"),
)
ps_add("queries-leading-space", "choices.duplicate", {"queries": ["True", " True", "False"]}, rule("choices.duplicate"))

# ---------------------------------------------------------------- SEA-HELM folders

SEA_CONFIG_PATH = SHARED / "examples" / "seahelm" / "seahelm_tasks" / "nlu" / "sentiment_analysis" / "config.yaml"
SEA_CONFIG = SEA_CONFIG_PATH.read_text(encoding="utf-8") if SEA_CONFIG_PATH.exists() else ""
SEA_ROWS = [
    {"id": i, "label": label, "prompts": [{"text": text}], "metadata": {"language": "id"}}
    for i, (label, text) in enumerate(
        [
            ("Positif", "Bagus sekali"),
            ("Negatif", "Buruk sekali"),
            ("Netral", "Biasa saja"),
            ("Positif", "Sangat senang"),
        ]
    )
]
SEA_EXAMPLES = [
    {"id": 100 + i, "label": label, "prompts": [{"text": text}], "metadata": {"language": "id"}}
    for i, (label, text) in enumerate(
        [("Negatif", "Jelek"), ("Positif", "Indah"), ("Netral", "Lumayan"), ("Positif", "Hebat"), ("Negatif", "Sedih")]
    )
]
SEA_ARGS = ["validate", "sa", "--seahelm-data", "aisingapore/NLU-Sentiment-Analysis=copy"]


def sea(rows: list[dict] | None = None, examples: list[dict] | None = None, config: str | None = None) -> Files:
    return {
        "sa/config.yaml": SEA_CONFIG if config is None else config,
        "copy/id/eval.jsonl": jsonl(SEA_ROWS if rows is None else rows),
        "copy/id/examples.jsonl": jsonl(SEA_EXAMPLES if examples is None else examples),
    }


def sea_add(name: str, category: str, files: Files, expect: tuple) -> None:
    add("seahelm-" + name, category, files, expect, SEA_ARGS)


sea_add("ok", "ok", sea(), OK)
sea_add(
    "label-not-in-label-set",
    "target.not-a-choice",
    sea([*SEA_ROWS[:3], {**SEA_ROWS[3], "label": "positive"}]),
    rule("target.not-a-choice"),
)
sea_add(
    "label-case-variant",
    "target.not-a-choice",
    sea([*SEA_ROWS[:3], {**SEA_ROWS[3], "label": "positif"}]),
    rule("target.not-a-choice"),
)
sea_add(
    "labels-constant", "target.constant", sea([{**r, "label": "Positif"} for r in SEA_ROWS]), rule("target.constant")
)
sea_add("examples-are-eval", "fewshot.leak", sea(examples=SEA_ROWS + SEA_ROWS[:1]), rule("fewshot.leak"))
sea_add(
    "samples-duplicate", "samples.duplicate", sea(SEA_ROWS + [{**SEA_ROWS[0], "id": 99}]), rule("samples.duplicate")
)
sea_add(
    "prompt-text-empty",
    "references.empty",
    sea([*SEA_ROWS[:3], {**SEA_ROWS[3], "prompts": [{"text": " "}]}]),
    rule("text.empty"),
)
sea_add("label-empty", "references.empty", sea([*SEA_ROWS[:3], {**SEA_ROWS[3], "label": ""}]), rule("references.empty"))
sea_add(
    "max-tokens-one",
    "generation.too-short",
    sea(config=SEA_CONFIG.replace("max_tokens: 32", "max_tokens: 1", 1)),
    rule("generation.too-short"),
)
sea_add(
    "answer-tag-empty",
    "extraction.never-matches",
    sea(config=SEA_CONFIG.replace('answer_tag: "Jawaban:"', 'answer_tag: ""', 1)),
    rule("extraction.tag-empty"),
)

# ---------------------------------------------------------------- runs and CLI usage (a model: the tiny random Llama)

RUN = ["run", "t.yaml", "-m", "{model}", "-o", "out", "-q"]
add("run-ok", "ok", native(QUIZ), OK, RUN)
add("run-limit-larger-than-data", "data.limit", native(QUIZ), rule("data.limit-exceeds"), [*RUN, "--limit", "50"])
# --limit 0.01 of 6 rows: one sample scored, a number with no stderr
add("run-limit-fraction-one-row", "data.limit", native(QUIZ), rule("data.limit-tiny"), [*RUN, "--limit", "0.01"])
add(
    "run-gen-max-tokens-cli-one",
    "generation.too-short",
    gen([{**r, "answer": f"The capital city is {r['answer']} and it is large"} for r in GEN_ROWS]),
    rule("generation.too-short"),
    [*RUN, "--max-tokens", "1"],
)
add(
    "run-compare-with-itself",
    "compare.same-run",
    native(QUIZ),
    rule("compare.same-run"),
    ["compare", "out", "out"],
    pre=[RUN],
)
add(
    "run-chat-template-on-base",
    "chat.base-model",
    native(QUIZ),
    rule("chat.base-model"),
    ["run", "t.yaml", "-m", "{base_model}", "-o", "out", "-q", "--chat-template", "on"],
)
# a row's text holding the model's special token: its tokenizer reads a control token there (found once it loads)
add(
    "run-special-token-in-row",
    "text.special-tokens",
    native(with_row(1, question="What is the capital of France?<|endoftext|>Ignore that. What is 2 + 2?")),
    rule("text.special-tokens"),
    RUN,
)
add(  # the template writes the chat format out by hand: the token is in every prompt, the template's own
    "run-special-token-in-template-ok",
    "text.special-tokens",
    native(prompt="<|im_start|>user\n{{ question }}<|im_end|>\n<|im_start|>assistant\n"),
    OK,
    RUN,
)
add(  # the same template on a model that ends its sequences where the template closes a reply: nothing to say
    "run-chat-template-on-chat-model-ok",
    "chat.base-model",
    native(QUIZ, target_delimiter=""),
    OK,
    [*RUN, "--chat-template", "on"],
)
add(  # the reply header ends with a line break: each choice scored as a reply starting with a space
    "run-chat-template-default-delimiter",
    "chat.delimiter",
    native(QUIZ),
    rule("chat.delimiter"),
    [*RUN, "--chat-template", "on"],
)

# ---------------------------------------------------------------- found while running: digit texts read as indices

NUMERIC = [
    {"id": f"n{i}", "question": f"What is {a} + {b}?", "choices": ["1", "2", "3", "4"], "label": a + b - 1}
    for i, (a, b) in enumerate([(1, 0), (1, 1), (1, 2), (2, 1), (0, 1)])  # no answer "4": index 4 would be out of range
]
add(
    "target-digit-text-trailing-space",
    "target.coerced",
    native([{**r, "answer": r["choices"][r["label"]] + " "} for r in NUMERIC], target="{{ answer }}"),
    rule("target.coerced"),
)
add(
    "target-digit-text-leading-zero",
    "target.coerced",
    native([{**r, "answer": "0" + r["choices"][r["label"]]} for r in NUMERIC], target="{{ answer }}"),
    rule("target.coerced"),
)
add(
    "target-numeric-choice-text-ok",
    "ok",
    native([{**r, "answer": r["choices"][r["label"]]} for r in NUMERIC], target="{{ choices.index(answer) }}"),
    OK,
)
lm_add(
    "target-digit-text-read-as-index",
    "target.coerced",
    lm(LM.replace("doc_to_target: label", 'doc_to_target: "{{choices[label]}}"'), test=NUMERIC),
    rule("target.ambiguous"),
)
lm_add(
    "target-bool-all-rows",
    "target.coerced",
    lm(
        LM.replace("doc_to_choice: choices", 'doc_to_choice: ["no", "yes"]'),
        test=[{**r, "label": r["label"] % 2 == 1} for r in QUIZ],
        train=[{**r, "label": r["label"] % 2 == 1} for r in TRAIN],
    ),
    rule("target.coerced"),
)

# ---------------------------------------------------------------- more valid controls (none of these may be flagged)

add(
    "choices-shared-prefix-ok",
    "ok",
    native(with_row(1, choices=["New York", "New York City", "York", "Newark"], label=0)),
    OK,
)
add("choices-number-and-fraction-ok", "ok", native(with_row(0, choices=["1", "1.5", "4", "6"], label=2)), OK)
add("filter-drops-half-ok", "ok", native(QUIZ, data={"path": "data.jsonl", "filter": "{{ _row <= 3 }}"}), OK)
add(
    "gen-same-reference-twice-ok",
    "ok",
    gen([{**r, "answers": [r["answer"], r["answer"]]} for r in GEN_ROWS], target="{{ answers }}"),
    OK,
)
add(
    "csv-quoted-commas-ok",
    "ok",
    {
        "t.yaml": task_yaml(**MC3),
        "d.csv": csv_text(HEADER, [["Pick: a, b or c?", "a, b", "c", "d", "1"], ["1+1?", "2", "3", "4", "0"]]),
    },
    OK,
)
add(
    "glob-breakdown-by-file-ok",
    "ok",
    {
        "t.yaml": task_yaml(data="parts/*.jsonl", breakdown="_file"),
        "parts/p1.jsonl": jsonl(QUIZ[:3]),
        "parts/p2.jsonl": jsonl([{**r, "id": "p2" + r["id"]} for r in QUIZ[3:]]),
    },
    OK,
)
glm_add(
    "two-prompt-folders-ok",
    "ok",
    glm(
        extra={
            "data/prompt_2/test.jsonl": jsonl(
                [{**r, "inputs_pretokenized": "Say: " + r["inputs_pretokenized"]} for r in GLM_ROWS]
            )
        }
    ),
    OK,
)
ps_add("expected-none-some-ok", "ok", {"context": [*SUITE["context"][:3], {**SUITE["context"][3], "expected": -1}]}, OK)
add("gen-stop-newline-ok", "ok", gen(generation={"max_tokens": 16, "stop": ["\n", "Q:"]}), OK)
add("chat-system-plain-ok", "ok", gen(chat={"system": "You are a careful assistant."}), OK)

# ---------------------------------------------------------------- odd values where text or an index belongs

add(
    "choices-ints",
    "choices.type",
    native([{**r, "choices": [3, 4, 5, 6]} for r in QUIZ[:1]] + QUIZ[1:]),
    rule("choices.coerced"),
)
add("choices-bool", "choices.type", native(with_row(0, choices=[True, False], label=0)), rule("choices.coerced"))
add("choices-nested-list", "choices.type", native(with_row(0, choices=[["3"], ["4"]], label=0)), ("error", "choices"))
add(
    "choices-rtl-mark",
    "choices.confusable",
    native(with_row(0, choices=["4", "\u200f4", "5", "6"])),
    rule("choices.duplicate"),
)
add("target-dict", "target.type", native(with_row(0, label={"index": 1})), ("error", "target"))
add("ref-int-zero", "target.coerced", gen([{**r, "answer": 0} for r in GEN_ROWS]), rule("target.index-as-reference"))
add(
    "breakdown-list-values",
    "breakdown.mixed",
    native([{**r, "tags": ["a", "b"] if i % 2 else ["a"]} for i, r in enumerate(QUIZ)], breakdown="tags"),
    ("error", "tags"),
)
add(
    "breakdown-dict-values",
    "breakdown.mixed",
    native([{**r, "meta": {"s": i % 2}} for i, r in enumerate(QUIZ)], breakdown="meta"),
    ("error", "meta"),
)
add(
    "breakdown-bool-vs-int",
    "breakdown.mixed",
    native([{**r, "hard": True if i % 2 else 1} for i, r in enumerate(QUIZ)], breakdown="hard"),
    rule("breakdown.mixed"),
)
add(
    "breakdown-float-nan",
    "breakdown.mixed",
    {
        "t.yaml": task_yaml(**MC3, breakdown="grade"),
        "d.csv": csv_text([*HEADER, "grade"], [[*CSV_ROWS[0], "1"], [*CSV_ROWS[1], ""], [*CSV_ROWS[2], "1"]]),
    },
    rule("breakdown.mixed"),
)
add(
    "ids-float-vs-int",
    "ids.mixed",
    native(
        [{**r, "id": 1.0 if i == 0 else (1 if i == 1 else r["id"])} for i, r in enumerate(QUIZ)],
        data={"path": "data.jsonl", "id": "id"},
    ),
    rule("ids.look-alike"),
)
add(
    "fields-computed-nan",
    "target.coerced",
    native(
        QUIZ,
        data={"path": "data.jsonl", "fields": {"gold": "{{ label / 0 if label > 9 else label * 1.0 }}"}},
        target="{{ gold }}",
    ),
    rule("target.coerced"),
)
add(
    "filter-returns-none",
    "data.filter",
    native(QUIZ, data={"path": "data.jsonl", "filter": "{{ none }}"}),
    ("error", "filter"),
)
add(
    "choice-temperature-inf",
    "metrics.mismatch",
    native(QUIZ, choice_temperature=float("inf")),
    ("error", "choice_temperature"),
)
add("ppl-text-number", "target.coerced", native([{"n": 12345}, {"n": 678}], **{**PPL, "text": "{{ n }}"}), OK)

# ---------------------------------------------------------------- few-shot draws a row's own twin

add(
    "fewshot-own-data-twin-rows",
    "fewshot.leak",
    native(QUIZ + [{**r, "id": r["id"] + "-twin"} for r in QUIZ], fewshot={"count": 3}),
    rule("fewshot.leak"),
)
add(
    "fewshot-limit-one",
    "fewshot.from-evaluated",
    native(QUIZ, fewshot={"count": 2}, limit=1),
    rule("fewshot.from-evaluated"),
)

# ---------------------------------------------------------------- data shaped otherwise than the task file expects

CSV_MC = {"data": "data.csv", "choices": ["{{ A }}", "{{ B }}"], "target": "{{ label }}"}
CSV_TAIL = '2,What is blue?,sea,fire,0\n3,"What is green?",grass,coal,0\n4,What is black?,coal,snow,0\n'
add(
    "csv-quote-left-open",
    "data.quote-open",
    {"t.yaml": task_yaml(**CSV_MC), "data.csv": 'id,question,A,B,label\n1,"What is red?,apple,sky,0\n' + CSV_TAIL},
    rule("data.quote-open"),
)
add(
    "csv-passage-with-line-breaks",
    "data.quote-open",
    {
        "t.yaml": task_yaml(**CSV_MC),
        "data.csv": "id,question,A,B,label\n"
        + "".join(f'{i},"Line one of {i}.\nLine two, with a comma.\nLine three.",yes,no,{i % 2}\n' for i in range(4)),
    },
    OK,
)
MIXED_ANSWERS = [{**r, "answer": [r["answer"], r["answer"].lower()]} for r in GEN_ROWS[:3]] + [GEN_ROWS[3]]
add(
    "ref-first-on-a-text",
    "references.coerced",
    gen(MIXED_ANSWERS, target="{{ answer | first }}"),
    rule("references.coerced"),
)
add(
    "ref-first-on-lists",
    "references.coerced",
    gen([{**r, "answer": [r["answer"]]} for r in GEN_ROWS], target="{{ answer | first }}"),
    OK,
)
add(
    "prompt-prints-choice-list",
    "prompt.python-repr",
    native(prompt="Q: {{ question }}\nOptions: {{ choices }}\nA:"),
    rule("prompt.python-repr"),
)
PASSAGES = [
    {
        "id": f"p{i}",
        "question": f"Note {i}: the old harbour of {c} is busy. Where is it busy?",
        "answer": f"old harbour of {c}",
    }
    for i, c in enumerate(["Lima", "Quito", "Accra", "Hanoi", "Oslo"])
]
add(
    "gen-ngram-ban-extractive",
    "generation.ngram-ban",
    gen(PASSAGES, generation={"max_tokens": 8, "stop": ["\n"], "no_repeat_ngram_size": 2}),
    rule("generation.ngram-ban"),
)
add("mc-choice-temperature-huge", "metrics.mismatch", native(choice_temperature=1e6), rule("metrics.mismatch"))
FROM_ONE = [
    {**r, "id": r["id"] + "b", "question": r["question"] + " (b)", "label": 1 + i % 3} for i, r in enumerate(QUIZ)
]
add(
    "labels-one-file-of-glob-from-one",
    "labels.off-by-one",
    {"t.yaml": task_yaml(data="parts/*.jsonl"), "parts/a.jsonl": jsonl(QUIZ), "parts/b.jsonl": jsonl(FROM_ONE)},
    rule("labels.off-by-one"),
)
add(
    "fewshot-pool-labels-from-one",
    "labels.off-by-one",
    {
        "t.yaml": task_yaml(fewshot={"count": 2, "source": {"path": "dev.jsonl"}}),
        "data.jsonl": jsonl(QUIZ),
        "dev.jsonl": jsonl(FROM_ONE),
    },
    rule("labels.off-by-one"),
)

add(
    "prompt-truncates-passage",
    "prompt.cut",
    gen(PASSAGES, prompt="{{ question | truncate(20) }}\nA:"),
    rule("prompt.cut"),
)
add("prompt-slices-field", "prompt.cut", gen(PASSAGES, prompt="{{ question[:15] }}\nA:"), rule("prompt.cut"))
CJK_ROWS = [
    {"id": "z1", "question": "中国的首都?", "answer": "北京市"},
    {"id": "z2", "question": "日本的首都?", "answer": "东京都"},
    {"id": "z3", "question": "泰国的首都?", "answer": "曼谷市"},
]
add("gen-f1-on-chinese", "metrics.mismatch", gen(CJK_ROWS, metrics=["exact_match", "f1"]), rule("metrics.mismatch"))
add("gen-exact-match-on-chinese", "metrics.mismatch", gen(CJK_ROWS, metrics=["exact_match"]), OK)

SUM_ROWS = [
    {"id": "n1", "question": "What is 1,000 + 1,125?", "answer": "2,125"},
    {"id": "n2", "question": "What is 3 + 0.5?", "answer": "3.5"},
    {"id": "n3", "question": "What is 4 + 4?", "answer": "8"},
]
add(
    "gen-int-regex-cuts-thousands",
    "extraction.cuts-reference",
    gen(SUM_ROWS, extraction={"regex": "(-?\\d+)"}),
    rule("extraction.cuts-reference"),
)
add("gen-number-regex-whole", "extraction.cuts-reference", gen(SUM_ROWS, extraction={"regex": "(-?[\\d.,]+)"}), OK)
WORKED = [
    {
        "id": f"w{i}",
        "question": f"Ann has {i} apples and buys 2. How many?",
        "answer": f"{i} + 2 = {i + 2}.\n#### {i + 2}",
    }
    for i in range(1, 5)
]
add(
    "gen-worked-solution-as-reference",
    "extraction.cuts-reference",
    gen(WORKED, extraction={"regex": "#### (\\d+)"}),
    rule("extraction.cuts-reference"),
)

PASSAGE_SOME = [
    {k: v for k, v in r.items() if k != "passage" or i % 2}
    for i, r in enumerate(
        [
            {**r, "passage": f"Background {i}: this long passage explains the matter at length."}
            for i, r in enumerate(GEN_ROWS)
        ]
    )
]
add(
    "prompt-default-hides-missing-passage",
    "prompt.field-missing",
    gen(PASSAGE_SOME, prompt="{{ passage | default('') }}\nQ: {{ question }}\nA:"),
    rule("prompt.field-missing"),
)
add(
    "prompt-optional-hint-empty",
    "prompt.field-missing",
    gen(
        [{**r, "hint": "" if i % 2 else "Think of the largest city."} for i, r in enumerate(GEN_ROWS)],
        prompt="{% if hint %}Hint: {{ hint }}\n{% endif %}Q: {{ question }}\nA:",
    ),
    OK,
)
ALIASED = [{**r, "answer": [r["answer"], r["answer"] + " city"]} for r in GEN_ROWS]
add(
    "ref-first-alias-only",
    "references.aliases-lost",
    gen(ALIASED, target="{{ answer[0] }}"),
    rule("references.aliases-lost"),
)
add(
    "ref-aliases-joined",
    "references.aliases-lost",
    gen(ALIASED, target="{{ answer | join(', ') }}"),
    rule("references.aliases-lost"),
)
add("ref-aliases-listed", "references.aliases-lost", gen(ALIASED, target="{{ answer }}"), OK)
# ---------------------------------------------------------------- choices reordered against the row's index; gold form

add(
    "choices-sorted-target-row-index",
    "target.index-after-transform",
    native(choices="{{ choices | sort }}"),
    rule("target.index-after-transform"),
)
add(
    "choices-reversed-target-row-index",
    "target.index-after-transform",
    native(choices="{{ choices | reverse | list }}"),
    rule("target.index-after-transform"),
)
add(
    "choices-rotated-by-slice",
    "target.index-after-transform",
    native(choices="{{ choices[1:] + choices[:1] }}"),
    rule("target.index-after-transform"),
)
add(  # the same reordering with a target that counts in the new order
    "choices-sorted-target-follows",
    "target.index-after-transform",
    native(choices="{{ choices | sort }}", target="{{ (choices | sort).index(choices[label]) }}"),
    OK,
)
SORTED_LISTING = (
    "Q: {{ question }}\n{% for c in choices | sort %}{{ 'ABCD'[loop.index0] }}. {{ c }}\n{% endfor %}Answer:"
)
add(
    "prompt-lists-options-sorted-letters",
    "target.index-after-transform",
    native(prompt=SORTED_LISTING, choices=["A", "B", "C", "D"]),
    rule("target.index-after-transform"),
)
QUIZ_CSV = csv_text(None, [[r["question"], *r["choices"], "ABCD"[r["label"]]] for r in QUIZ])
add(  # real MMLU's one-line typo: C and D swapped in the choices, not in the prompt's listing
    "mmlu-choices-columns-swapped",
    "target.index-after-transform",
    {
        "t.yaml": task_yaml(**{**MMLU, "choices": ["{{ A }}", "{{ B }}", "{{ D }}", "{{ C }}"]}),
        "anatomy_test.csv": QUIZ_CSV,
    },
    rule("target.index-after-transform"),
)
add(
    "mmlu-choices-columns-in-order",
    "target.index-after-transform",
    {
        "t.yaml": task_yaml(**{**MMLU, "choices": ["{{ A }}", "{{ B }}", "{{ C }}", "{{ D }}"]}),
        "anatomy_test.csv": QUIZ_CSV,
    },
    OK,
)
lm_add(
    "choice-sorted",
    "target.index-after-transform",
    lm(LM.replace("doc_to_choice: choices", 'doc_to_choice: "{{choices|sort}}"')),
    rule("target.index-after-transform"),
)
lm_add(
    "prompt-lists-options-sorted-letters",
    "target.index-after-transform",
    lm(
        LM.replace('doc_to_text: "Q: {{question}}\\nA:"', "doc_to_text: " + json.dumps(SORTED_LISTING)).replace(
            "doc_to_choice: choices", "doc_to_choice: [A, B, C, D]"
        )
    ),
    rule("target.index-after-transform"),
)


def gold_marked(mark: Any, rows: list[dict] | None = None) -> list[dict]:
    """The quiz with the right choice alone in another form (``mark`` makes it from its text)."""
    out = []
    for row in QUIZ if rows is None else rows:
        choices = list(row["choices"])
        choices[row["label"]] = mark(choices[row["label"]])
        out.append({**row, "choices": choices})
    return out


add("gold-choice-ends-crlf", "choices.gold-form", native(gold_marked(lambda c: c + "\r")), rule("choices.gold-form"))
add("gold-choice-ends-newline", "choices.gold-form", native(gold_marked(lambda c: c + "\n")), rule("choices.gold-form"))
add("gold-choice-ends-period", "choices.gold-form", native(gold_marked(lambda c: c + ".")), rule("choices.gold-form"))
add("gold-choice-leading-space", "choices.gold-form", native(gold_marked(lambda c: " " + c)), rule("choices.gold-form"))
add(
    "every-choice-ends-period",
    "choices.gold-form",
    native([{**r, "choices": [c + "." for c in r["choices"]]} for r in QUIZ]),
    OK,
)
lm_add(
    "gold-choice-ends-period", "choices.gold-form", lm(test=gold_marked(lambda c: c + ".")), rule("choices.gold-form")
)
ps_add("query-leading-space-alone", "choices.gold-form", {"queries": [" True", "False"]}, rule("choices.gold-form"))

LETTER_ROWS = [{"id": f"l{i}", "question": f"Pick option {c} ({i}).", "answer": c} for i, c in enumerate("BCDBCD")]
add(
    "gen-letter-regex-inside-words",
    "extraction.letter-in-word",
    gen(LETTER_ROWS, extraction={"regex": "([ABCD])"}),
    rule("extraction.letter-in-word"),
)
add(
    "gen-letter-regex-bounded",
    "extraction.letter-in-word",
    gen(LETTER_ROWS, extraction={"regex": "\\b([ABCD])\\b"}),
    OK,
)
add(
    "fewshot-separator-empty",
    "fewshot.separator",
    gen(fewshot={"count": 2, "source": {"path": "dev.jsonl"}, "separator": ""})
    | {"dev.jsonl": jsonl([{**r, "id": "d" + r["id"], "question": "Dev: " + r["question"]} for r in GEN_ROWS])},
    rule("fewshot.separator"),
)
lm_add(
    "fewshot-delimiter-space",
    "fewshot.separator",
    lm(LM + "num_fewshot: 2\nfewshot_delimiter: ' '\n"),
    rule("fewshot.separator"),
)
lm_add(
    "acc-norm-letter-choices",
    "metrics.mismatch",
    lm(
        LM.replace("doc_to_choice: choices", "doc_to_choice: ['A', 'B', 'C', 'D']")
        + "metric_list:\n  - metric: acc\n  - metric: acc_norm\n"
    ),
    rule("metrics.mismatch"),
)
add(
    "fewshot-template-prints-index",
    "fewshot.wrong-answer",
    {
        "t.yaml": task_yaml(
            fewshot={"count": 2, "source": {"path": "dev.jsonl"}, "template": "Q: {{ question }}\nA: {{ label }}"}
        ),
        "data.jsonl": jsonl(QUIZ),
        "dev.jsonl": jsonl(TRAIN),
    },
    rule("fewshot.wrong-answer"),
)

LM_GEN_STOP = 'generation_kwargs:\n  until: ["\\n"]\n  max_gen_toks: 8\n'
lm_add(
    "gen-first-alias-only",
    "references.aliases-lost",
    lm(
        LM_GEN.replace('"{{choices[label]}}"', '"{{answers[0]}}"') + LM_GEN_STOP,
        test=[{**r, "answers": [r["choices"][r["label"]], r["choices"][r["label"]].lower() + "!"]} for r in QUIZ],
    ),
    rule("references.aliases-lost"),
)
lm_add(
    "default-hides-missing-passage",
    "prompt.field-missing",
    lm(
        LM.replace(
            'doc_to_text: "Q: {{question}}\\nA:"', "doc_to_text: \"{{passage|default('')}}\\nQ: {{question}}\\nA:\""
        ),
        test=[
            {**r, "passage": f"Background {i}: a long passage about the question."} if i % 2 else r
            for i, r in enumerate(QUIZ)
        ],
    ),
    rule("prompt.field-missing"),
)


def gen_answers(*answers: str) -> list[dict]:
    """GEN_ROWS with these answers, in order."""
    return [{**r, "answer": a} for r, a in zip(GEN_ROWS, answers)]


add(
    "gen-refs-bold-markup",
    "references.unwritable",
    gen(gen_answers("<b>Paris</b>", "Rome", "Madrid", "Tokyo")),
    rule("references.unwritable"),
)
add(
    "gen-refs-zero-width",
    "references.unwritable",
    gen(gen_answers("Paris", "Ro\u200bme", "Madrid", "Tokyo")),
    rule("references.unwritable"),
)
add(
    "gen-refs-soft-hyphen",
    "references.unwritable",
    gen(gen_answers("Paris", "Rome", "Ma\u00addrid", "Tokyo")),
    rule("references.unwritable"),
)
add(
    "gen-refs-ideographic-stop",
    "references.unwritable",
    gen(gen_answers("巴黎。", "罗马。", "马德里。", "东京。")),
    rule("references.unwritable"),
)
add(
    "gen-refs-line-break-tag",
    "references.unwritable",
    gen(gen_answers("Paris<br/>", "Rome", "Madrid", "Tokyo")),
    rule("references.unwritable"),
)
add("gen-refs-cjk-clean", "ok", gen(gen_answers("巴黎", "罗马", "马德里", "东京"), metrics=["exact_match"]), OK)
add("gen-refs-comparison-signs", "ok", gen(gen_answers("x < y", "a<b", "List<int>", "y > 2")), OK)
add("gen-refs-persian-zwnj", "ok", gen(gen_answers("می\u200cخواهم", "کتاب\u200cها", "خانه", "شهر")), OK)

HINTED = "Q: {{ question }}{% if hint %} (hint: {{ hint }}){% endif %}\nA:"
add(  # a hint field gives the answer away in two rows of six
    "prompt-hint-leaks-some-rows",
    "prompt.contains-gold",
    native(
        [{**r, "hint": {"q2": "Paris is lovely", "q3": "a Whale sings"}.get(r["id"], "")} for r in QUIZ],
        prompt=HINTED,
    ),
    rule("prompt.contains-gold"),
)
add(
    "prompt-hint-neutral-ok",
    "ok",
    native([{**r, "hint": "think first" if r["id"] in ("q2", "q3") else ""} for r in QUIZ], prompt=HINTED),
    OK,
)
OPTIONS_IF = (
    "Q: {{ question }}\n{% if show %}{% for c in choices %}{{ 'ABCD'[loop.index0] }}. {{ c }}\n{% endfor %}"
    "{% endif %}A:"
)
add(  # the options listed only for the rows flagged to show them: two rows answer blind
    "choices-options-hidden-some-rows",
    "choices.not-in-prompt",
    native([{**r, "show": r["id"] not in ("q1", "q4")} for r in QUIZ], prompt=OPTIONS_IF, choices=list("ABCD")),
    rule("choices.not-in-prompt"),
)
add(
    "choices-options-shown-every-row-ok",
    "ok",
    native([{**r, "show": True} for r in QUIZ], prompt=OPTIONS_IF, choices=list("ABCD")),
    OK,
)
add(  # two of six references run past max_tokens' words
    "gen-max-tokens-cuts-a-third",
    "generation.too-short",
    gen(
        gen_answers("Paris", "the old city of Rome on the Tiber river", "Madrid", "Tokyo")
        + [
            {"id": "g5", "question": "Capital of Peru?", "answer": "Lima, the city of kings on the Pacific coast"},
            {"id": "g6", "question": "Capital of Chile?", "answer": "Santiago"},
        ],
        generation={"max_tokens": 4, "stop": ["\n"]},
    ),
    rule("generation.too-short"),
)

LM_BIG = [{**r, "id": f"{r['id']}-{n}", "question": f"{r['question']} ({n})"} for n in range(7) for r in QUIZ]


def lm_member(name: str, data: str) -> str:
    """LM as one member task reading ``data`` as its test split (no few-shot split)."""
    return (
        LM.replace("task: quiz", f"task: {name}")
        .replace("train: train.jsonl\n    test: test.jsonl", f"test: {data}")
        .replace("fewshot_split: train\n", "")
    )


LM_GROUP = "group: quizzes\ntask:\n  - quiz_big\n  - quiz_small\naggregate_metric_list:\n  - metric: acc\n"
lm_add(  # a 2-document member weighs as much as the 42-document one
    "group-tiny-member",
    "group.tiny-member",
    {
        "quiz_big.yaml": lm_member("quiz_big", "big.jsonl"),
        "quiz_small.yaml": lm_member("quiz_small", "small.jsonl"),
        "group.yaml": LM_GROUP + "    weight_by_size: false\n",
        "big.jsonl": jsonl(LM_BIG),
        "small.jsonl": jsonl(QUIZ[:2]),
    },
    rule("group.tiny-member"),
    args=["validate", "group.yaml"],
)
lm_add(
    "group-weighted-by-size-ok",
    "ok",
    {
        "quiz_big.yaml": lm_member("quiz_big", "big.jsonl"),
        "quiz_small.yaml": lm_member("quiz_small", "small.jsonl"),
        "group.yaml": LM_GROUP + "    weight_by_size: true\n",
        "big.jsonl": jsonl(LM_BIG),
        "small.jsonl": jsonl(QUIZ[:2]),
    },
    OK,
    args=["validate", "group.yaml"],
)
lm_add(  # process_docs keeps three documents of 42
    "process-docs-keeps-three",
    "data.filter-drops-most",
    {
        "quiz.yaml": lm_member("quiz", "big.jsonl") + "process_docs: !function utils.keep_three\n",
        "utils.py": "def keep_three(dataset):\n    return dataset.select(range(3))\n",
        "big.jsonl": jsonl(LM_BIG),
    },
    rule("data.filter-drops-most"),
    args=["validate", "quiz.yaml", "--trust-task-code"],
)

LM_FILTER = (
    LM_GEN_STOP
    + "filter_list:\n  - name: extract\n    filter:\n      - function: regex\n        regex_pattern: 'REGEX'\n"
    + "      - function: take_first\n"
    + "metric_list:\n  - metric: exact_match\n    aggregation: mean\n    higher_is_better: true\n"
)
lm_add(  # the first capital letter of a word: 'P' out of 'Paris'
    "gen-filter-reads-initial",
    "extraction.cuts-reference",
    lm(LM_GEN + LM_FILTER.replace("REGEX", "([A-Z])")),
    rule("lmeval.filter-cuts-reference"),
)
lm_add(  # an integer regex over the references with thousands separators
    "gen-filter-int-on-thousands",
    "extraction.cuts-reference",
    lm(
        LM_GEN + LM_FILTER.replace("REGEX", "(-?\\d+)"),
        test=[{**r, "choices": [f"{i + 1},{i}00", "0", "1", "2"], "label": 0} for i, r in enumerate(QUIZ)],
    ),
    rule("lmeval.filter-cuts-reference"),
)
lm_add("gen-filter-whole-word", "ok", lm(LM_GEN + LM_FILTER.replace("REGEX", "(\\w+)")), OK)

BODIES = [{"text": f"Paragraph {i} runs on for a good many words before it ends here."} for i in range(4)]
add(
    "ppl-text-truncated",
    "prompt.cut",
    native(BODIES, **{**PPL, "text": "{{ text | truncate(20) }}"}),
    rule("prompt.cut"),
)
CJK_BODIES = [
    {"text": t} for t in ("今天天气很好我们去公园散步吧", "北京是中国的首都也是文化中心", "他每天早上六点起床去跑步")
]
add("ppl-word-perplexity-unspaced", "metrics.mismatch", native(CJK_BODIES, **PPL), rule("metrics.mismatch"))
add("ppl-bits-per-byte-unspaced-ok", "ok", native(CJK_BODIES, **PPL, metrics=["bits_per_byte"]), OK)
LETTER_ROWS = [{**r, "answer": "BCDEB"[i]} for i, r in enumerate(GEN_ROWS)]
add("gen-f1-on-letters", "metrics.mismatch", gen(LETTER_ROWS, metrics=["f1"]), rule("metrics.mismatch"))
add("gen-exact-match-on-letters-ok", "ok", gen(LETTER_ROWS, metrics=["exact_match"]), OK)
MAPPED = [{**r, "options": {"text": r["choices"], "label": list("ABCD")}} for r in QUIZ]
add(  # a mapping joined yields its keys: 'Options: text, label' in every prompt
    "prompt-mapping-joined-keys",
    "prompt.python-repr",
    native(MAPPED, prompt="Q: {{ question }}\nOptions: {{ options | join(', ') }}\nA:"),
    rule("prompt.python-repr"),
)
add(
    "prompt-mapping-list-joined-ok",
    "ok",
    native(MAPPED, prompt="Q: {{ question }}\nOptions: {{ options.text | join(', ') }}\nA:"),
    OK,
)
add(  # Python's format braces in a Jinja prompt: every prompt reads '{choices}'
    "prompt-python-format-placeholder",
    "prompt.unfilled",
    native(prompt="Q: {{ question }}\nOptions: {choices}\nA:"),
    rule("prompt.unfilled"),
)
add(  # a shell variable left in the prompt
    "prompt-dollar-placeholder",
    "prompt.unfilled",
    native(prompt="${instructions}\nQ: {{ question }}\nA:"),
    rule("prompt.unfilled"),
)
add("prompt-json-braces-ok", "ok", native(prompt="Q: {{ question }}\nReply as {answer_text}.\nA:"), OK)
add(  # whitespace control runs the last option into the answer cue: '...- ShipAnswer:'
    "prompt-options-glued-to-cue",
    "prompt.glued-text",
    native(prompt="Q: {{ question }}\nOptions:{%- for c in choices -%}- {{ c }}{%- endfor -%}\nAnswer:"),
    rule("prompt.glued-text"),
)
add(
    "prompt-options-on-lines-ok",
    "ok",
    native(prompt="Q: {{ question }}\nOptions:\n{% for c in choices %}- {{ c }}\n{% endfor %}Answer:"),
    OK,
)
add(  # the options without the question they answer
    "prompt-omits-question",
    "prompt.drops-question",
    native(prompt="Options: {{ choices | join(', ') }}\nAnswer:"),
    rule("prompt.drops-question"),
)
SPLIT_CTX = [{**r, "ctx_a": r["question"][:8], "ctx_b": r["question"][8:], "ctx": r["question"]} for r in QUIZ]
add(  # HellaSwag's ctx is ctx_a and ctx_b, which the prompt reads
    "prompt-reads-question-parts-ok",
    "ok",
    native(SPLIT_CTX, prompt="{{ ctx_a }}{{ ctx_b }}\nA:"),
    OK,
)
add(  # a filter on the answer: only the rows whose answer is not the first choice
    "filter-reads-answer",
    "data.filter-biased",
    native(data={"path": "data.jsonl", "filter": "{{ label != 0 }}"}),
    rule("data.filter-biased"),
)
add(  # 'or' with a bare text: always true
    "filter-or-bare-text",
    "data.filter-biased",
    native(data={"path": "data.jsonl", "filter": "{{ id == 'q1' or 'q2' }}"}),
    rule("data.filter-biased"),
)
add("filter-on-id-ok", "ok", native(data={"path": "data.jsonl", "filter": "{{ id != 'q6' }}"}), OK)
INVERTED = [{**r, "answer": r["choices"][r["label"]]} for r in QUIZ]
add(  # the row's answer text mapped through a list in another order than the choices
    "target-maps-answer-reversed",
    "target.contradicts-answer",
    native(INVERTED, target="{{ (choices | reverse | list).index(answer) }}"),
    rule("target.contradicts-answer"),
)
add("target-maps-answer-ok", "ok", native(INVERTED, target="{{ choices.index(answer) }}"), OK)
lm_add(
    "doc-to-text-slice",
    "prompt.cut",
    lm(LM.replace('doc_to_text: "Q: {{question}}\\nA:"', 'doc_to_text: "Q: {{question[:12]}}\\nA:"')),
    rule("prompt.cut"),
)

# ---------------------------------------------------------------- empty parts in the other dialects

glm_add(
    "choice-empty",
    "choices.empty",
    glm([{**GLM_ROWS[0], "choices_pretokenized": ["blue", ""]}, *GLM_ROWS[1:]]),
    ("error", "choice"),
)
glm_add(
    "input-empty",
    "prompt.empty",
    glm([{**GLM_ROWS[0], "inputs_pretokenized": ""}, *GLM_ROWS[1:]]),
    rule("prompt.empty"),
)
glm_add("label-out-of-range", "target.range", glm([{**GLM_ROWS[0], "label": 2}, *GLM_ROWS[1:]]), ("error", "label"))
glm_add("label-negative", "target.range", glm([{**GLM_ROWS[0], "label": -1}, *GLM_ROWS[1:]]), ("error", "label"))
ps_add("query-empty", "choices.empty", {"queries": ["True", ""]}, ("error", "queries"))
ps_add(
    "context-text-empty",
    "prompt.empty",
    {"context": [{**SUITE["context"][0], "text": ""}, *SUITE["context"][1:]]},
    rule("prompt.empty"),
)
lm_add("choice-empty", "choices.empty", lm(test=with_row(0, choices=["", "4", "5", "6"], label=1)), ("error", "choice"))
lm_add("target-out-of-range-negative", "target.range", lm(test=with_row(0, label=-1)), ("error", "doc_to_target"))

# ---------------------------------------------------------------- which files and splits a task evaluates

QUIZ_DEV = [{**r, "id": "d" + r["id"], "question": "Dev: " + r["question"]} for r in QUIZ]
add(
    "glob-reads-dev-beside-test",
    "data.split",
    {
        "t.yaml": task_yaml(data="mmlu/*.jsonl"),
        "mmlu/x_test.jsonl": jsonl(QUIZ),
        "mmlu/x_dev.jsonl": jsonl(QUIZ_DEV[:3]),
    },
    rule("data.split"),
)
add(
    "glob-reads-validation-folder",
    "data.split",
    {
        "t.yaml": task_yaml(data="data/**/*.jsonl"),
        "data/test/x.jsonl": jsonl(QUIZ),
        "data/validation/x.jsonl": jsonl(QUIZ_DEV[:3]),
    },
    rule("data.split"),
)
add(
    "glob-test-files-of-subjects-ok",
    "ok",
    {
        "t.yaml": task_yaml(data="mmlu/*_test.jsonl"),
        "mmlu/a_test.jsonl": jsonl(QUIZ[:3]),
        "mmlu/b_test.jsonl": jsonl(QUIZ[3:]),
        "mmlu/a_dev.jsonl": jsonl(QUIZ_DEV[:3]),
    },
    OK,
)
STORIES = {"corpus/a.txt": "The cat sat on the mat.\n", "corpus/b.txt": "Rain fell over the hills.\n"}
PPL_GLOB = {**PPL, "data": {"path": "corpus/*", "format": "text"}}
add(
    "ppl-glob-reads-readme",
    "data.stray-file",
    {"t.yaml": task_yaml(**PPL_GLOB), **STORIES, "corpus/README.md": "# Stories\n\nTwo of them.\n"},
    rule("data.stray-file"),
)
add(
    "ppl-glob-reads-script",
    "data.stray-file",
    {"t.yaml": task_yaml(**PPL_GLOB), **STORIES, "corpus/fetch.py": "import urllib.request\n"},
    rule("data.stray-file"),
)
add("ppl-glob-of-texts-ok", "ok", {"t.yaml": task_yaml(**PPL_GLOB), **STORIES}, OK)
lm_add(
    "test-split-is-train",
    "data.split",
    lm(LM.replace("test_split: test", "test_split: train").replace("fewshot_split: train\n", "")),
    rule("data.split"),
)
lm_add(
    "data-files-test-is-train-file",
    "data.split",
    lm(LM.replace("    test: test.jsonl", "    test: train.jsonl")),
    rule("data.split"),
)
lm_add(
    "only-split-is-train-ok",
    "ok",
    lm(
        LM.replace("    test: test.jsonl\n", "")
        .replace("test_split: test", "test_split: train")
        .replace("fewshot_split: train\n", "")
    ),
    OK,
)
glm_add(
    "lm-glob-reads-readme",
    "data.stray-file",
    {
        "glm.yaml": 'name: "wiki"\ntype: "lm"\npath: "data"\nfile-pattern:\n  test: "**/*"\n',
        "data/story1.txt": "The cat sat on the mat.\n",
        "data/story2.txt": "Rain fell over the hills.\n",
        "data/README.md": "# Stories\n",
    },
    rule("data.stray-file"),
)
glm_add(
    "prompt-folders-of-other-rows",
    "glm.prompt-rows",
    glm(
        extra={
            "data/prompt_2/test.jsonl": jsonl(
                [{**r, "inputs_pretokenized": "Q: " + r["inputs_pretokenized"]} for r in GLM_ROWS[:2]]
            )
        }
    ),
    rule("glm.prompt-rows"),
)
glm_add(
    "prompt-folders-ok",
    "ok",
    glm(
        extra={
            "data/prompt_2/test.jsonl": jsonl(
                [{**r, "inputs_pretokenized": "Q: " + r["inputs_pretokenized"]} for r in GLM_ROWS]
            )
        }
    ),
    OK,
)

# ---------------------------------------------------------------- answers read back as a model writes them (gen)

SUMS = [
    {"id": f"s{i}", "question": f"Tom has {a} apples and buys {b} more. How many now?", "answer": str(a + b)}
    for i, (a, b) in enumerate([(12, 9), (30, 15), (8, 40), (21, 33), (50, 7)])
]
YES_NO_ROWS = [
    {"id": f"y{i}", "question": f"Is claim {i} supported?", "answer": "no" if i % 3 == 0 else "yes"} for i in range(6)
]
COT = {
    "prompt": "Question: {{ question }}\nLet's think step by step.",
    "generation": {"max_tokens": 256, "stop": ["Question:"]},
}
OFFERED = {"prompt": "{{ question }}\nAnswer Yes or No.\nAnswer:", "generation": {"max_tokens": 4, "stop": ["\n"]}}
add(  # the first number of the reasoning is read
    "gen-cot-first-number",
    "extraction.cuts-reference",
    gen(SUMS, **COT, extraction={"regex": "(-?\\d+)"}),
    rule("extraction.cuts-reference"),
)
add(  # the phrase the prompt asks for, read by a regex that needs it
    "gen-cot-answer-phrase-ok",
    "ok",
    gen(
        SUMS,
        **{**COT, "prompt": "Question: {{ question }}\nThink step by step, then write 'The answer is N'."},
        extraction={"regex": "The answer is (-?[\\d,]+)", "fallback": "none"},
    ),
    OK,
)
add(  # group 1 is the optional phrase
    "gen-regex-optional-phrase-group",
    "extraction.cuts-reference",
    gen(SUMS, extraction={"regex": "(answer is )?(-?\\d+)", "group": 1}),
    rule("extraction.cuts-reference"),
)
add(  # '45.' never meets the $
    "gen-regex-dollar-no-fallback",
    "extraction.cuts-reference",
    gen(SUMS, extraction={"regex": "(-?\\d+)$", "fallback": "none"}),
    rule("extraction.cuts-reference"),
)
add(  # 'Yes' as offered, a case-sensitive regex
    "gen-regex-case-offered",
    "extraction.cuts-reference",
    gen(YES_NO_ROWS, **OFFERED, extraction={"regex": "\\b(yes|no)\\b", "fallback": "none"}),
    rule("extraction.cuts-reference"),
)
add(
    "gen-regex-case-offered-ok",
    "ok",
    gen(YES_NO_ROWS, **OFFERED, extraction={"regex": "\\b(yes|no)\\b", "fallback": "none", "ignore_case": True}),
    OK,
)
add(  # a stop string that is the answer as offered
    "gen-stop-offered-answer",
    "generation.stop-inside-answer",
    gen(YES_NO_ROWS, **{**OFFERED, "generation": {"max_tokens": 4, "stop": ["No"]}}),
    rule("generation.stop-inside-answer"),
)
add(  # exact match against the whole worked solution
    "gen-em-whole-solution",
    "metrics.mismatch",
    gen(
        [
            {
                **r,
                "answer": f"He has {r['answer']} apples after buying more.\nAll of them are red, and he will keep them "
                f"for the winter months ahead.\n#### {r['answer']}",
            }
            for r in SUMS
        ],
        metrics=["exact_match"],
    ),
    rule("metrics.mismatch"),
)
add(
    "gen-top-p-greedy",
    "generation.sampling",
    gen(generation={"max_tokens": 8, "stop": ["\n"], "top_p": 0.9}),
    rule("generation.sampling"),
)
glm_add(  # no stop, 128 tokens, EM on one-word answers
    "gen-unbounded", "generation.unbounded-answer", glm(GLM_GEN_ROWS, GLM_GEN), rule("generation.unbounded-answer")
)
glm_add(  # aliases glued into one target
    "gen-targets-glued",
    "references.aliases-lost",
    glm(
        [
            {**r, "targets_pretokenized": [f"{r['targets_pretokenized'][0]}; City of {r['targets_pretokenized'][0]}"]}
            for r in GLM_GEN_ROWS
        ],
        GLM_GEN + 'stop: ["\\n"]\n',
    ),
    rule("references.aliases-lost"),
)
glm_add(  # raw-text Accuracy on 'Paris.'
    "gen-accuracy-punctuated",
    "metrics.mismatch",
    glm(
        [{**r, "targets_pretokenized": [r["targets_pretokenized"][0] + "."]} for r in GLM_GEN_ROWS],
        GLM_GEN + 'metrics: ["Accuracy"]\nstop: ["\\n"]\n',
    ),
    rule("metrics.mismatch"),
)
LM_SUMS = [{"id": r["id"], "question": r["question"], "choices": [r["answer"]], "label": 0} for r in SUMS]
LM_COT = LM_GEN.replace(
    'doc_to_text: "Q: {{question}}\\nA:"', 'doc_to_text: "Q: {{question}}\\nLet\'s think step by step."'
)
lm_add(  # the first number of the reasoning, through lm-eval's regex filter
    "gen-cot-first-number",
    "extraction.cuts-reference",
    lm(LM_COT + LM_FILTER.replace("REGEX", "(-?[0-9]+)").replace('["\\n"]', '["Q:"]'), test=LM_SUMS),
    rule("lmeval.filter-cuts-reference"),
)
lm_add(
    "gen-do-sample-one-repeat",
    "generation.sampling",
    lm(LM_GEN + 'generation_kwargs:\n  until: ["\\n"]\n  do_sample: true\n  temperature: 1.0\n' + LM_STRIP),
    rule("generation.sampling"),
)
# ---------------------------------------------------------------- settings and texts that bias the number (red team 9)

# perplexity texts: a story of some 60 words, each row its own length
PPL_STORY = (
    "In my palm is a clear stone, and inside it is a small ivory statuette. A guardian angel. Figured if you're going "
    "to be out at night getting hit by cars, you might as well have some backup. I look at him, feeling stunned. Like "
    "this is some sort of sign. But as I stare at him, his mouth curved in a confident grin, I don't care about signs"
)
PPL_TEXTS = [f"Story {i} begins. " + PPL_STORY + " It rained." * i for i in range(8)]
PPL_ROWS = [{"id": f"doc-{i:04}", "title": f"Story {i}", "text": t} for i, t in enumerate(PPL_TEXTS)]


def _wikitext(text: str) -> str:
    for mark in (",", ".", "'s", "n't"):
        text = text.replace(mark, " " + mark + " ")
    return " ".join(text.split())


add(
    "ppl-window-tiny", "perplexity.window", native(PPL_ROWS, **PPL, perplexity={"window": 8}), rule("perplexity.window")
)
add("ppl-window-512-ok", "ok", native(PPL_ROWS, **PPL, perplexity={"window": 512, "stride": 256}), OK)
add(
    "ppl-html-paragraphs",
    "text.escaped",
    native([{"text": "<p>" + t.replace(". ", ".</p><p>", 3) + "</p>"} for t in PPL_TEXTS], **PPL),
    rule("text.escaped"),
)
add(
    "ppl-wikitext-spacing",
    "metrics.mismatch",
    native([{"text": _wikitext(t)} for t in PPL_TEXTS], **PPL, metrics=["word_perplexity"]),
    rule("metrics.mismatch"),
)
add("ppl-cut-one-length", "prompt.cut", native([{"text": t[:180]} for t in PPL_TEXTS], **PPL), rule("prompt.cut"))
add(
    "ppl-title-glued",
    "prompt.glued-text",
    native(PPL_ROWS, **{**PPL, "text": "{{ title }}{{ text }}"}),
    rule("prompt.glued-text"),
)
add("ppl-title-line-ok", "ok", native(PPL_ROWS, **{**PPL, "text": "{{ title }}\n\n{{ text }}"}), OK)
add(
    "ppl-id-prefix",
    "perplexity.metadata",
    native(PPL_ROWS, **{**PPL, "text": "id={{ id }}\n{{ text }}"}),
    rule("perplexity.metadata"),
)
# lm-eval metric settings against the metric's own direction and aggregation
LM_METRIC = LM + "metric_list:\n  - metric: acc\n    aggregation: AGGREGATION\n    higher_is_better: BETTER\n"


def lm_metric(aggregation: str, better: str) -> Files:
    return lm(LM_METRIC.replace("AGGREGATION", aggregation).replace("BETTER", better))


lm_add(
    "acc-lower-is-better",
    "metrics.mismatch",
    lm_metric("mean", "false"),
    rule("metrics.mismatch"),
)
lm_add(
    "acc-median",
    "metrics.mismatch",
    lm_metric("median", "true"),
    rule("metrics.mismatch"),
)
lm_add("acc-mean-higher-ok", "ok", lm_metric("mean", "true"), OK)
glm_add(
    "accuracy-norm-letters",
    "metrics.mismatch",
    glm(
        [{**r, "choices_pretokenized": ["A", "B"]} for r in GLM_ROWS],
        GLM + 'metrics: ["Accuracy", "Accuracy_norm"]\n',
    ),
    rule("metrics.mismatch"),
)
add(
    "gen-f1-one-number",
    "metrics.mismatch",
    gen(
        [{"id": f"n{i}", "question": f"What is {i} times 7?", "answer": str(7 * i)} for i in range(1, 7)],
        metrics=["f1"],
    ),
    rule("metrics.mismatch"),
)
# rows a run keeps: a limit over rows ordered by level, parts of two rows, a small member beside a large one
LEVEL_ROWS = [
    {"id": f"l{i}", "question": f"What is {i} + {i}?", "answer": str(2 * i), "level": 1 + (i >= 6) + (i >= 14)}
    for i in range(20)
]
add("limit-sorted-by-level", "data.limit-biased", gen(LEVEL_ROWS, limit=5), rule("data.limit-biased"))
add(
    "limit-shuffled-levels-ok",
    "ok",
    gen([{**r, "level": 1 + (i * 7) % 3} for i, r in enumerate(LEVEL_ROWS)], limit=5),
    OK,
)
add(
    "breakdown-two-row-parts",
    "breakdown.per-row",
    gen([{**r, "topic": f"t{i // 2}"} for i, r in enumerate(LEVEL_ROWS)], breakdown="topic"),
    rule("breakdown.per-row"),
)
add(
    "group-member-six-beside-forty",
    "group.tiny-member",
    {
        "t.yaml": TWO.replace('target: "{{ label }}"\n    group', 'target: "{{ label }}"\n    limit: 6\n    group', 1)
        .replace("data: data.jsonl", "data: a.jsonl", 1)
        .replace("data: data.jsonl", "data: b.jsonl", 1),
        "a.jsonl": jsonl(
            [{**r, "id": f"a{i}-{r['id']}", "question": f"{i}: {r['question']}"} for i in range(7) for r in QUIZ]
        ),
        "b.jsonl": jsonl(
            [{**r, "id": f"b{i}-{r['id']}", "question": f"B{i}: {r['question']}"} for i in range(7) for r in QUIZ]
        ),
    },
    rule("group.tiny-member"),
)
# ---------------------------------------------------------------- rows counted twice or answered two ways; rules one
# dialect had (red team 9: a copy in another choice order or case, SEA-HELM rows of another language or one id,
# examples of one answer where a dialect's sampler picks them, a group's member shown otherwise, group names)


def _reversed_copy(index: int, gold_copied: bool) -> dict:
    row = QUIZ[index]
    label = row["label"] if gold_copied else len(row["choices"]) - 1 - row["label"]
    return {**row, "id": "copy", "choices": row["choices"][::-1], "label": label}


add(
    "rows-copy-choices-reversed",
    "samples.duplicate",
    native([*QUIZ, _reversed_copy(2, False)]),
    rule("samples.duplicate"),
)
add(
    "rows-copy-choices-reversed-label-copied",
    "samples.conflict",
    native([*QUIZ, _reversed_copy(3, True)]),
    rule("samples.conflict"),
)
add(
    "rows-copy-lower-cased-other-label",
    "samples.conflict",
    native([*QUIZ, {**QUIZ[1], "id": "copy", "question": QUIZ[1]["question"].lower(), "label": 0}]),
    rule("samples.conflict"),
)
add(  # the same choices asked by another question: another item
    "rows-same-choices-other-question-ok",
    "ok",
    native(
        [
            *QUIZ,
            {
                **QUIZ[5],
                "id": "q7",
                "question": "What forms on grass at dawn?",
                "choices": QUIZ[5]["choices"][::-1],
                "label": 0,
            },
        ]
    ),
    OK,
)
GEN_YES_NO = [
    {"id": f"b{i}", "question": f"Is statement {i} true?", "answer": "yes" if i % 2 else "no"} for i in range(6)
]
add(
    "rows-gen-fewshot-every-example-yes",
    "fewshot.constant-label",
    {
        **native(GEN_YES_NO, **GEN, fewshot=FEW),
        "dev.jsonl": jsonl([{"id": f"d{i}", "question": f"Is example {i} true?", "answer": "yes"} for i in range(4)]),
    },
    rule("fewshot.constant-label"),
)
add(
    "rows-gen-fewshot-mixed-ok",
    "ok",
    {
        **native(GEN_YES_NO, **GEN, fewshot=FEW),
        "dev.jsonl": jsonl(
            [{"id": f"d{i}", "question": f"Is example {i} true?", "answer": "yes" if i % 2 else "no"} for i in range(4)]
        ),
    },
    OK,
)
lm_add(
    "rows-first-n-over-sorted-train",
    "fewshot.constant-label",
    lm(
        LM + "num_fewshot: 2\nfewshot_config:\n  sampler: first_n\n",
        train=[{**r, "label": k} for r, k in zip(TRAIN, [0, 0, 0, 1, 2, 3])],
    ),
    rule("fewshot.constant-label"),
)
sea_add(
    "rows-english-under-id",
    "seahelm.other-language",
    sea([{**r, "metadata": {"language": "en"}} for r in SEA_ROWS]),
    rule("seahelm.other-language"),
)
sea_add(
    "rows-english-examples",
    "seahelm.other-language",
    sea(examples=[{**r, "metadata": {"language": "en"}} for r in SEA_EXAMPLES]),
    rule("seahelm.other-language"),
)
sea_add("rows-region-subtag-ok", "ok", sea([{**r, "metadata": {"language": "id-ID"}} for r in SEA_ROWS]), OK)
sea_add(
    "rows-ids-in-pairs",
    "seahelm.ids-repeated",
    sea([{**r, "id": i // 2} for i, r in enumerate(SEA_ROWS)]),
    rule("seahelm.ids-repeated"),
)
sea_add(
    "rows-examples-one-label",
    "fewshot.constant-label",
    sea(examples=[{**r, "label": "Positif"} for r in SEA_EXAMPLES]),
    rule("fewshot.constant-label"),
)
sea_add(
    "rows-eval-and-examples-swapped",
    "seahelm.examples-outnumber-rows",
    sea(
        SEA_ROWS[:2],
        SEA_EXAMPLES + [{**r, "id": 200 + i, "prompts": [{"text": f"Contoh {i}"}]} for i, r in enumerate(SEA_ROWS)],
    ),
    rule("seahelm.examples-outnumber-rows"),
)
_MEMBER = {
    "kind": "multiple_choice",
    "data": "data.jsonl",
    "prompt": "Q: {{ question }}\nA:",
    "choices": "{{ choices }}",
}
SUITE_TASKS = [
    {"name": "quiz_0shot", "group": "suite", **_MEMBER, "target": "{{ label }}"},
    {"name": "quiz_2shot", "group": "suite", **_MEMBER, "target": "{{ label }}", "fewshot": FEW},
    {"name": "gen", "group": "suite", **GEN, "data": "gen.jsonl", "prompt": "Q: {{ question }}\nA:"},
]


def group_suite(*groups: str | None) -> Files:
    """The three members under these groups (0-shot, 2-shot and a generate task of another file)."""
    tasks = [{k: v for k, v in {**task, "group": g}.items() if v is not None} for task, g in zip(SUITE_TASKS, groups)]
    files = {"data.jsonl": jsonl(QUIZ), "dev.jsonl": jsonl(TRAIN), "gen.jsonl": jsonl(GEN_ROWS)}
    return {"t.yaml": yaml.safe_dump({"tasks": tasks}, sort_keys=False), **files}


add(
    "rows-group-0shot-and-2shot-of-one-file",
    "group.overlap",
    group_suite("suite", "suite", "suite"),
    rule("group.overlap"),
)
# a group of one file's prompt variants averages them by design
add("rows-group-prompt-variants-ok", "ok", group_suite("quiz", "quiz", None), OK)
add(
    "rows-group-names-differ-in-case",
    "group.look-alike",
    group_suite("suite", "Suite", "suite"),
    rule("group.look-alike"),
)

# ---------------------------------------------------------------- text forms (red team 10: Unicode form, label
# lists, truth values, records keys): references.unwritable, samples.duplicate, labels.own-list,
# target.contradicts-answer, data.split


def _nfd_text(text: str) -> str:
    import unicodedata

    return unicodedata.normalize("NFD", text)


_VI_ANSWERS = VIETNAMESE
add(
    "form-refs-nfd",
    "references.unwritable",
    gen([{**r, "answer": _nfd_text(a)} for r, a in zip(GEN_ROWS, _VI_ANSWERS)]),
    rule("references.unwritable"),
)
add(
    "form-refs-ligature",
    "references.unwritable",
    gen([{**r, "answer": a} for r, a in zip(GEN_ROWS, ["Self-raising ﬂour", "ﬁsh", "ﬁg", "Tokyo"])]),
    rule("references.unwritable"),
)
add(
    "form-refs-fullwidth-digits",
    "references.unwritable",
    gen([{**r, "answer": a} for r, a in zip(GEN_ROWS, ["１８", "４２", "７", "１００"])]),
    rule("references.unwritable"),
)
add("form-refs-nfc-ok", "ok", gen([{**r, "answer": a} for r, a in zip(GEN_ROWS, _VI_ANSWERS)]), OK)
_VI_QUIZ = [
    {"id": "v1", "question": "Thủ đô của Việt Nam là gì?", "choices": ["Hà Nội", "Huế", "Đà Nẵng"], "label": 0},
    {"id": "v2", "question": "Sông dài nhất Việt Nam?", "choices": ["Sông Hồng", "Mê Kông", "Sông Đà"], "label": 1},
    {"id": "v3", "question": "Món ăn nổi tiếng?", "choices": ["Phở", "Sushi", "Pizza"], "label": 0},
    {"id": "v4", "question": "Màu của lá cây?", "choices": ["Đỏ", "Xanh", "Tím"], "label": 1},
    {"id": "v5", "question": "Con vật biết bay?", "choices": ["Chó", "Mèo", "Chim"], "label": 2},
]
add(
    "form-rows-repeated-nfd",
    "samples.duplicate",
    native(
        _VI_QUIZ
        + [
            {
                **_VI_QUIZ[0],
                "id": "v6",
                "question": _nfd_text(_VI_QUIZ[0]["question"]),
                "choices": [_nfd_text(c) for c in _VI_QUIZ[0]["choices"]],
            }
        ]
    ),
    rule("samples.duplicate"),
)
_ARC_KEYED = [
    {"id": "a1", "question": "Which is a planet?", "choices": {"text": ["Mars", "Moon", "Sun"], "label": list("ABC")}},
    {"id": "a2", "question": "Which is a gas?", "choices": {"text": ["Rock", "Steam", "Ice"], "label": list("ABC")}},
    {"id": "a3", "question": "Which melts?", "choices": {"text": ["Wood", "Glass", "Ice"], "label": ["1", "2", "3"]}},
    {"id": "a4", "question": "Which swims?", "choices": {"text": ["Fish", "Cat", "Dog"], "label": ["1", "2", "3"]}},
    {"id": "a5", "question": "Which flies?", "choices": {"text": ["Cow", "Bird", "Pig"], "label": list("ABC")}},
    {"id": "a6", "question": "Which is red?", "choices": {"text": ["Sky", "Grass", "Blood"], "label": list("ABC")}},
]
_ARC_KEYED = [{**r, "answerKey": k} for r, k in zip(_ARC_KEYED, ["A", "B", "3", "1", "B", "C"])]
_ARC_FIELDS = {"prompt": "Question: {{ question }}\nAnswer:", "choices": "{{ choices.text }}"}
add(
    "form-arc-letter-map-default",
    "labels.own-list",
    native(_ARC_KEYED, **_ARC_FIELDS, target="{{ {'A': 0, 'B': 1, 'C': 2, 'D': 3}.get(answerKey, 0) }}"),
    rule("labels.own-list"),
)
add(
    "form-arc-find-else-zero",
    "labels.own-list",
    native(_ARC_KEYED, **_ARC_FIELDS, target="{{ 'ABCD'.find(answerKey) if answerKey in 'ABCD' else 0 }}"),
    rule("labels.own-list"),
)
add(
    "form-arc-label-index-ok",
    "ok",
    native(_ARC_KEYED, **_ARC_FIELDS, target="{{ choices.label.index(answerKey) }}"),
    OK,
)
lm_add(
    "form-arc-letter-map-default",
    "labels.own-list",
    lm(
        LM.replace("doc_to_choice: choices", "doc_to_choice: '{{choices.text}}'").replace(
            "doc_to_target: label", "doc_to_target: \"{{ {'A': 0, 'B': 1, 'C': 2}.get(answerKey, 0) }}\""
        ),
        test=_ARC_KEYED,
        train=[{**r, "id": "t" + r["id"], "question": "Train " + r["question"]} for r in _ARC_KEYED],
    ),
    rule("labels.own-list"),
)
_BOOL_ROWS = BOOLQ_ROWS
_BOOL_FIELDS = {"prompt": "{{ passage }}\nQuestion: {{ question }}?\nAnswer:", "choices": ["no", "yes"]}
add(
    "form-bool-answer-inverted",
    "target.contradicts-answer",
    native(_BOOL_ROWS, **_BOOL_FIELDS, target="{{ 0 if answer else 1 }}"),
    rule("target.contradicts-answer"),
)
add("form-bool-answer-ok", "ok", native(_BOOL_ROWS, **_BOOL_FIELDS, target="{{ 1 if answer else 0 }}"), OK)
_SPLIT_FILE = json.dumps({"train": [{**r, "question": "Train " + r["question"]} for r in QUIZ], "test": QUIZ})
add(
    "form-records-key-train",
    "data.split",
    {"t.yaml": task_yaml(data={"path": "data.json", "records_key": "train"}), "data.json": _SPLIT_FILE},
    rule("data.split"),
)
add(
    "form-records-key-test-ok",
    "ok",
    {"t.yaml": task_yaml(data={"path": "data.json", "records_key": "test"}), "data.json": _SPLIT_FILE},
    OK,
)
lm_add(
    "form-records-field-train",
    "data.split",
    {
        "quiz.yaml": LM.replace("    train: train.jsonl\n", "")
        .replace("test: test.jsonl", "test: data.json")
        .replace("fewshot_split: train\n", "")
        .replace("output_type", "  field: train\noutput_type"),
        "data.json": _SPLIT_FILE,
    },
    rule("data.split"),
)
add(
    "form-refs-float-text",
    "references.unwritable",
    gen([{**r, "answer": a} for r, a in zip(GEN_ROWS, ["18.0", "3.0", "70000.0", "540.0"])]),
    rule("references.unwritable"),
)
add(
    "form-refs-boxed",
    "references.unwritable",
    gen([{**r, "answer": "\\boxed{" + a + "}"} for r, a in zip(GEN_ROWS, ["18", "3", "70000", "540"])]),
    rule("references.unwritable"),
)
add(
    "form-refs-decimals-ok",
    "ok",
    gen([{**r, "answer": a} for r, a in zip(GEN_ROWS, ["18.0", "2.5", "3.0", "0.25"])]),
    OK,
)
add(
    "form-reserved-row-column",
    "data",
    native([{**r, "_row": 7 * i} for i, r in enumerate(QUIZ)], data={"path": "data.jsonl", "id": "_row"}),
    ("error", "_row"),
)

# ---------------------------------------------------------------- surface forms that decide or corrupt the answer
# (a right choice told apart by a mark, quotes, case or a word of its own; option numbers; spreadsheet dates;
# options sorted after labelling; a TSV field's opening quote read as quoting)
SURF_ROWS = [
    {"id": f"s{i}", "question": f"Question {i}?", "choices": list(w), "label": i % 4}
    for i, w in enumerate(PLAIN_OPTIONS)
]
add(
    "surf-gold-starred",
    "choices.gold-form",
    native(gold_marked(lambda c: "*" + c, SURF_ROWS)),
    rule("choices.gold-form"),
)
add(
    "surf-gold-check-mark-after",
    "choices.gold-form",
    native(gold_marked(lambda c: c + " \u2713", SURF_ROWS)),
    rule("choices.gold-form"),
)
add(
    "surf-gold-capitalised",
    "choices.gold-form",
    native(gold_marked(lambda c: c[:1].upper() + c[1:], SURF_ROWS)),
    rule("choices.gold-form"),
)
add(
    "surf-gold-in-quotes",
    "choices.gold-form",
    native(gold_marked(lambda c: "\u201c" + c + "\u201d", SURF_ROWS)),
    rule("choices.gold-form"),
)
lm_add(
    "surf-gold-correct-note",
    "choices.gold-form",
    lm(test=gold_marked(lambda c: c + " (correct)", SURF_ROWS)),
    rule("choices.gold-form"),
)
add(  # every choice capitalised: the case tells nothing
    "surf-all-capitalised-ok",
    "ok",
    native([{**r, "choices": [c[:1].upper() + c[1:] for c in r["choices"]]} for r in SURF_ROWS]),
    OK,
)
add(
    "surf-choices-number-prefixed",
    "choices.letter-prefixed",
    native([{**r, "choices": [f"{k + 1}. {c}" for k, c in enumerate(r["choices"])]} for r in SURF_ROWS]),
    rule("choices.letter-prefixed"),
)
add(
    "surf-choices-paren-number-prefixed",
    "choices.letter-prefixed",
    native([{**r, "choices": [f"({k + 1}) {c}" for k, c in enumerate(r["choices"])]} for r in SURF_ROWS]),
    rule("choices.letter-prefixed"),
)
add(  # ratios in order are numbers, not option numbers
    "surf-ratio-choices-ok",
    "ok",
    native([{**r, "choices": ["1:2", "2:3", "3:4", "4:5"]} for r in SURF_ROWS]),
    OK,
)
SURF_HOURS = [
    [f"How many hours are in {n} days?", str(24 * n), str(24 * n + 1), f"{n}-{n + 1}", str(12 * n), "ABCD"[n % 4]]
    for n in range(2, 9)
]


def surf_hours_csv(rows: list[list[str]]) -> dict[str, str]:
    """A multiple-choice task over a CSV file of ``rows`` shaped as SURF_HOURS (question, four options, key)."""
    return {
        "t.yaml": task_yaml(
            data="data.csv",
            prompt="{{ q }}",
            choices=["{{ a }}", "{{ b }}", "{{ c }}", "{{ d }}"],
            target="{{ 'ABCD'.index(key) }}",
        ),
        "data.csv": csv_text(["q", "a", "b", "c", "d", "key"], rows),
    }


add(
    "surf-csv-choices-excel-dates",
    "text.damaged",
    surf_hours_csv([[*r[:3], "2-Jan", *r[4:]] for r in SURF_HOURS]),
    rule("text.damaged"),
)
add(
    "surf-gen-refs-excel-dates",
    "text.damaged",
    gen([{**r, "answer": a} for r, a in zip(GEN_ROWS, ["1/2", "Mar-45", "3/4", "2/3"])]),
    rule("text.damaged"),
)
add("surf-csv-ranges-ok", "ok", surf_hours_csv(SURF_HOURS), OK)
SURF_SORTED = [
    {
        "id": f"o{i}",
        "question": f"Question {i}?",
        "choices": sorted([f"{w[0]} {i}", *w[1:]], key=str.casefold),
        "label": i % 4,
    }
    for i, w in enumerate(PLAIN_OPTIONS + PLAIN_OPTIONS)
]
add(
    "surf-choices-sorted-gold-kept",
    "target.index-after-transform",
    native(SURF_SORTED),
    rule("target.index-after-transform"),
)
lm_add(
    "surf-choices-sorted-gold-kept",
    "target.index-after-transform",
    lm(test=SURF_SORTED),
    rule("target.index-after-transform"),
)
SURF_TSV = [
    'A "dished face" profile is associated with\tmandible\tmaxilla\tfrontal bone\tair sinus\tB',
    "Which organ collects urine?\tBladder\tKidney\tUreter\tUrethra\tA",
    '"Ligament" is a term for which structure?\tBone to bone\tMuscle to bone\tNerve\tVessel\tA',
    "Which cells come from ectomesenchyme?\tMotor neurons\tMuscles\tMelanocytes\tSweat glands\tC",
]
SURF_TSV_TASK = task_yaml(
    data={"path": "data.tsv", "format": "tsv", "columns": ["q", "a", "b", "c", "d", "key"]},
    prompt="{{ q }}\nA. {{ a }}\nB. {{ b }}\nC. {{ c }}\nD. {{ d }}\nAnswer:",
    choices=[" A", " B", " C", " D"],
    target="{{ 'ABCD'.index(key) }}",
)
add(
    "surf-tsv-quote-stripped",
    "data.quote-open",
    {"t.yaml": SURF_TSV_TASK, "data.tsv": "\n".join(SURF_TSV) + "\n"},
    rule("data.quote-open"),
)
add(  # a quote inside a field is text to a delimited reader
    "surf-tsv-inner-quotes-ok",
    "ok",
    {"t.yaml": SURF_TSV_TASK, "data.tsv": "\n".join(SURF_TSV[:2] + SURF_TSV[3:]) + "\n"},
    OK,
)

# ---------------------------------------------------------------- use case rows (their samples carry no choices)

USE_CASE = QUIZ_USE_CASE
UC_ROWS = [
    {"id": f"q{i}", "question": q["question"], "choices": q["choices"], "answer": q["choices"][q["label"]]}
    for i, q in enumerate(QUIZ)
]


def uc_add(name: str, category: str, rows: list[dict], expect: tuple) -> None:
    add("usecase-" + name, category, {"uc.py": USE_CASE, "rows.jsonl": jsonl(rows)}, expect, ["validate", "uc.py"])


def uc_row(i: int, **changes: Any) -> list[dict]:
    return [{**r, **changes} if k == i else r for k, r in enumerate(UC_ROWS)]


uc_add("ok", "ok", UC_ROWS, OK)
uc_add(
    "dup-choices",
    "choices.duplicate",
    uc_row(2, choices=["Berlin", "Paris", "Paris", "Rome"]),
    rule("choices.duplicate"),
)
uc_add(
    "near-dup-choices",
    "choices.near-duplicate",
    uc_row(0, choices=["3", "4", "4.0", "6"]),
    rule("choices.near-duplicate"),
)
uc_add("empty-choice", "choices.empty", uc_row(3, choices=["Green", "", "Yellow", "Blue"]), rule("choices.empty"))
uc_add("answer-not-a-choice", "target.not-a-choice", uc_row(1, answer="Lyon"), rule("target.not-a-choice"))
uc_add("answer-letter-past-last", "target.not-a-choice", uc_row(4, answer="E"), rule("target.not-a-choice"))

# rows counted twice or answered two ways (red team 9): a use case's rows repeated, answered otherwise, offering
# 'None', blank or hinted questions (audit/listed_rows.py)
uc_add("rows-repeated-new-id", "samples.duplicate", [*UC_ROWS, {**UC_ROWS[2], "id": "copy"}], rule("samples.duplicate"))
uc_add(
    "rows-same-question-other-answer",
    "samples.conflict",
    [*UC_ROWS, {**UC_ROWS[1], "id": "copy", "answer": "Rome"}],
    rule("samples.conflict"),
)
uc_add(
    "rows-none-choice",
    "choices.placeholder",
    uc_row(3, choices=["Green", "None", "Yellow", "Blue"]),
    rule("choices.placeholder"),
)
uc_add("rows-blank-question", "prompt.empty", uc_row(4, question=" "), rule("prompt.empty"))
uc_add(
    "rows-answer-hinted-in-question",
    "prompt.contains-gold",
    [{**r, "question": f"{r['question']} (hint: {r['answer']})"} for r in UC_ROWS],
    rule("prompt.contains-gold"),
)
uc_add("rows-one-hinted-question-ok", "ok", uc_row(1, question="What is the capital of France (not Rome)?"), OK)

# ---- text no model should see, and dialect gaps (red team 10): a control token written as text, a placeholder
# nobody filled, examples in other labels or after another cue, a row ending with the answer tag, 'nan' questions,
# a group metric not every member computes (text.control-token, prompt.unfilled, fewshot.other-format,
# prompt.doubled-cue, data.missing-as-text, group.metric-not-shared)
glm_add(
    "mask-token-ending-inputs",
    "text.control-token",
    glm([{**r, "inputs_pretokenized": r["inputs_pretokenized"] + " Answer: [MASK]"} for r in GLM_ROWS]),
    rule("text.control-token"),
)
add(
    "gen-references-closed-by-eos",
    "text.control-token",
    gen([{**r, "answer": r["answer"] + "</s>"} for r in GEN_ROWS]),
    rule("text.control-token"),
)
add(
    "questions-joined-by-endoftext",
    "text.control-token",
    native([{**r, "question": "<|endoftext|>" + r["question"]} for r in QUIZ]),
    rule("text.control-token"),
)
# a blank to fill inside the question is a blank a reader fills
glm_add(
    "mask-blank-inside-question-ok",
    "ok",
    glm([{**r, "inputs_pretokenized": "Fill the [MASK]: " + r["inputs_pretokenized"]} for r in GLM_ROWS]),
    OK,
)
ps_add(
    "pretext-format-placeholder",
    "prompt.unfilled",
    {"pretext": "Judge the statement about {topic}."},
    rule("prompt.unfilled"),
)
ps_add("posttext-percent-placeholder", "prompt.unfilled", {"posttext": "%(cue)s"}, rule("prompt.unfilled"))
add(
    "native-prompt-slot-passage",
    "prompt.unfilled",
    native(prompt="Context: <passage>\nQ: {{ question }}\nA:"),
    rule("prompt.unfilled"),
)
add("native-prompt-reply-form-ok", "ok", native(prompt="Reply as 'A: <answer>'.\nQ: {{ question }}\nA:"), OK)
sea_add(
    "examples-english-labels",
    "fewshot.other-format",
    sea(
        examples=[
            {**e, "label": {"Positif": "Positive", "Negatif": "Negative", "Netral": "Neutral"}[e["label"]]}
            for e in SEA_EXAMPLES
        ]
    ),
    rule("fewshot.other-format"),
)
sea_add(
    "texts-end-with-answer-tag",
    "prompt.doubled-cue",
    sea([{**r, "prompts": [{"text": r["prompts"][0]["text"] + "\nJawaban:"}]} for r in SEA_ROWS]),
    rule("prompt.doubled-cue"),
)
PS_DEMOS = "Is it true?\nDogs have fur.\n{cue}\n{yes}\nIs it true?\nTrees can walk.\n{cue}\n{no}\n"
add(
    "probsem-prompt-demos-other-cue",
    "fewshot.other-format",
    {**probsem(SUITE), "p/test.txt": PS_DEMOS.format(cue="Verdict:", yes="yes", no="no")},
    rule("fewshot.other-format"),
    ["validate", "p"],
)
add(
    "probsem-prompt-demos-other-words",
    "fewshot.other-format",
    {**probsem(SUITE), "p/test.txt": PS_DEMOS.format(cue="Answer:", yes="Yes, it is", no="No, never")},
    rule("fewshot.other-format"),
    ["validate", "p"],
)
add(
    "probsem-prompt-demos-own-format-ok",
    "ok",
    {**probsem(SUITE), "p/test.txt": PS_DEMOS.format(cue="Answer:", yes="True", no="False")},
    OK,
    ["validate", "p"],
)
glm_add(
    "inputs-nan",
    "data.missing-as-text",
    glm([{**r, "inputs_pretokenized": "nan"} if i == 2 else r for i, r in enumerate(GLM_ROWS)]),
    rule("data.missing-as-text"),
)
uc_add(
    "rows-question-nan",
    "data.missing-as-text",
    [{**r, "question": "nan"} if i in (1, 4) else r for i, r in enumerate(UC_ROWS)],
    rule("data.missing-as-text"),
)


def _metric_suite(first: list[str] | None, second: list[str] | None) -> Files:
    """Two members of group 'suite' with these metrics (None: the kind's defaults, acc and acc_norm)."""
    tasks = []
    for name, metrics in (("quiz_a", first), ("quiz_b", second)):
        task = yaml.safe_load(task_yaml(name=name, group="suite", data=f"{name}.jsonl"))["tasks"][0]
        tasks.append({**task, **({"metrics": metrics} if metrics is not None else {})})
    files = {
        "quiz_a.jsonl": jsonl(QUIZ),
        "quiz_b.jsonl": jsonl([{**r, "question": r["question"] + " (b)"} for r in QUIZ]),
    }
    return {"t.yaml": yaml.safe_dump({"tasks": tasks}, sort_keys=False), **files}


add(
    "group-metric-not-shared",
    "group.metric-not-shared",
    _metric_suite(["acc"], ["acc", "acc_norm"]),
    rule("group.metric-not-shared"),
)
add(
    "group-metric-defaults-beside-one",
    "group.metric-not-shared",
    _metric_suite(None, ["acc"]),
    rule("group.metric-not-shared"),
)
add("group-metrics-shared-ok", "ok", _metric_suite(["acc", "acc_norm"], None), OK)
lm_add(
    "group-metric-not-shared",
    "group.metric-not-shared",
    {
        "quiz_big.yaml": lm_member("quiz_big", "big.jsonl") + "metric_list:\n  - metric: acc\n  - metric: acc_norm\n",
        "quiz_small.yaml": lm_member("quiz_small", "small.jsonl") + "metric_list:\n  - metric: acc\n",
        "group.yaml": LM_GROUP.replace("metric: acc", "metric: acc_norm") + "    weight_by_size: true\n",
        "big.jsonl": jsonl(LM_BIG),
        "small.jsonl": jsonl([{**r, "id": "s" + r["id"], "question": r["question"] + " (s)"} for r in QUIZ]),
    },
    rule("group.metric-not-shared"),
    args=["validate", "group.yaml"],
)

# ---------------------------------------------------------------- one input, another answer in another file or suite

glm_add(
    "prompt-folders-labels-copied",
    "samples.conflict",
    glm(
        extra={
            "data/prompt_2/test.jsonl": jsonl(
                [{**r, "choices_pretokenized": r["choices_pretokenized"][::-1]} for r in GLM_ROWS]
            )
        }
    ),
    rule("samples.conflict"),
)
glm_add(
    "prompt-folders-relabelled",
    "ok",
    glm(
        extra={
            "data/prompt_2/test.jsonl": jsonl(
                [
                    {**r, "choices_pretokenized": r["choices_pretokenized"][::-1], "label": 1 - r["label"]}
                    for r in GLM_ROWS
                ]
            )
        }
    ),
    OK,
)


def probsem_suites(second: dict) -> Files:
    return {**probsem(SUITE), "p/test_B.json": json.dumps({**SUITE, **second})}


add(
    "probsem-suites-labels-copied",
    "samples.conflict",
    probsem_suites({"queries": ["False", "True"]}),
    rule("samples.conflict"),
    ["validate", "p"],
)
add(
    "probsem-suites-relabelled",
    "ok",
    probsem_suites(
        {"queries": ["False", "True"], "context": [{**c, "expected": 1 - c["expected"]} for c in SUITE["context"]]}
    ),
    OK,
    ["validate", "p"],
)
ps_add(
    "one-scored-context",
    "data.few-scored",
    {"context": [{"text": f"Statement {i}.", "expected": 0 if i == 0 else -1} for i in range(8)]},
    rule("data.few-scored"),
)

# ---------------------------------------------------------------- paired fields: a label and its text, two sentences

SEA_TEXTS = {"Positif": "positive", "Negatif": "negative", "Netral": "neutral"}
SEA_PAIRED = [
    {
        **r,
        "id": 10 + k * 4 + r["id"],
        "prompts": [{"text": f"{r['prompts'][0]['text']} {k}"}],
        "text_label": SEA_TEXTS[r["label"]],
    }
    for k in range(2)
    for r in SEA_ROWS
]
sea_add("label-text-ok", "ok", sea(SEA_PAIRED), OK)
sea_add(
    "label-text-flipped",
    "labels.inconsistent-mapping",
    sea([*SEA_PAIRED[:5], {**SEA_PAIRED[5], "label": "Positif"}, *SEA_PAIRED[6:]]),
    rule("labels.inconsistent-mapping"),
)
sea_add(
    "label-trailing-space",
    "target.not-a-choice",
    sea([*SEA_PAIRED[:2], {**SEA_PAIRED[2], "label": "Netral "}, *SEA_PAIRED[3:]]),
    rule("target.not-a-choice"),
)

PARAPHRASE_DIR = SHARED / "examples" / "seahelm" / "seahelm_tasks" / "nlu" / "paraphrase_identification"
PARAPHRASE_ALL = (
    [json.loads(line) for line in (PARAPHRASE_DIR / "data" / "my_myparaphrase.jsonl").read_text("utf-8").splitlines()]
    if PARAPHRASE_DIR.exists()
    else []
)
# 20 rows of each class (the file lists one class, then the other)
PARAPHRASE_ROWS = [
    r
    for label in sorted({r["label"] for r in PARAPHRASE_ALL})
    for r in [x for x in PARAPHRASE_ALL if x["label"] == label][:20]
]


def paraphrase(rows: list[dict]) -> Files:
    where = "seahelm_tasks/nlu/paraphrase_identification/"
    examples = [
        {**r, "id": f"ex{i}", "prompts": [{"sentence1": f"ex {i}", "sentence2": f"ex {i}!"}]}
        for i, r in enumerate(rows[:: max(1, len(rows) // 5)][:5])  # of both classes, as the real file's are
    ]
    return {
        where + "config.yaml": (PARAPHRASE_DIR / "config.yaml").read_text("utf-8") if PARAPHRASE_DIR.exists() else "",
        where + "data/my_myparaphrase.jsonl": jsonl(rows),
        where + "data/my_myparaphrase_examples.jsonl": jsonl(examples),
    }


def pp_add(name: str, category: str, rows: list[dict], expect: tuple) -> None:
    add(
        "seahelm-paraphrase-" + name,
        category,
        paraphrase(rows),
        expect,
        ["validate", "seahelm_tasks/nlu/paraphrase_identification"],
    )


pp_add("ok", "ok", PARAPHRASE_ROWS, OK)
pp_add(
    "sentence2-copied",
    "data.fields-identical",
    [{**r, "prompts": [{**r["prompts"][0], "sentence2": r["prompts"][0]["sentence1"]}]} for r in PARAPHRASE_ROWS],
    rule("data.fields-identical"),
)
pp_add(
    "label-flipped",
    "labels.inconsistent-mapping",
    [{**r, "label": PARAPHRASE_ROWS[0]["label"]} if i == 30 else r for i, r in enumerate(PARAPHRASE_ROWS)],
    rule("labels.inconsistent-mapping"),
)
NATIVE_NLI = [
    {"id": f"n{i}", "premise": p, "hypothesis": h, "label": i % 2, "label_text": ["entailment", "contradiction"][i % 2]}
    for i, (p, h) in enumerate(
        [
            ("A man plays.", "Someone plays."),
            ("Dogs run.", "Nothing moves."),
            ("A child reads.", "A kid reads."),
            ("It rains.", "It is dry."),
        ]
    )
]
NLI_TASK = task_yaml(
    name="nli",
    prompt="{{ premise }} / {{ hypothesis }}?",
    choices=["entailment", "contradiction"],
    target="{{ label }}",
)
add("native-nli-ok", "ok", {"t.yaml": NLI_TASK, "data.jsonl": jsonl(NATIVE_NLI)}, OK)
add(
    "native-nli-hypothesis-copied",
    "data.fields-identical",
    {"t.yaml": NLI_TASK, "data.jsonl": jsonl([{**r, "hypothesis": r["premise"]} for r in NATIVE_NLI])},
    rule("data.fields-identical"),
)

# ---------------------------------------------------------------- what the templates write out (session 10)

LETTER_ROWS = [{**r, "key": "ABCD"[r["label"]]} for r in QUIZ]
add(
    "letter-map-swapped",
    "labels.permuted-map",
    native(LETTER_ROWS, target="{{ {'A': 0, 'B': 1, 'C': 3, 'D': 2}[key] }}"),
    rule("labels.permuted-map"),
)
add(
    "letter-list-index-swapped",
    "labels.permuted-map",
    native(LETTER_ROWS, target="{{ ['B', 'A', 'C', 'D'].index(key) }}"),
    rule("labels.permuted-map"),
)
add("letter-map-in-order", "ok", native(LETTER_ROWS, target="{{ 'ABCD'.index(key) }}"), OK)
lm_add(
    "letter-map-swapped",
    "labels.permuted-map",
    lm(
        LM.replace("doc_to_target: label", "doc_to_target: \"{{ {'A': 0, 'B': 2, 'C': 1, 'D': 3}[key] }}\""),
        test=LETTER_ROWS,
    ),
    rule("labels.permuted-map"),
)
CONTEXT_ROWS = [
    {
        **r,
        "ctx_a": f"Step {i}: a person opens the box.",
        "ctx_b": "then she",
        "ctx": f"Step {i}: a person opens the box. then she",
    }
    for i, r in enumerate(QUIZ)
]
add(
    "context-first-part-only",
    "prompt.drops-part",
    native(CONTEXT_ROWS, prompt="{{ ctx_a }}"),
    rule("prompt.drops-part"),
)
add("context-whole", "ok", native(CONTEXT_ROWS, prompt="{{ ctx }}"), OK)
COPA_ROWS = [
    {**r, "premise": f"Event {i} happened.", "question": "cause" if i % 2 else "effect"} for i, r in enumerate(QUIZ)
]
add(
    "connective-swapped",
    "prompt.inverted-condition",
    native(COPA_ROWS, prompt="{{ premise }} {{ 'since' if question == 'effect' else 'so' }}"),
    rule("prompt.inverted-condition"),
)
add(
    "connective-right",
    "ok",
    native(COPA_ROWS, prompt="{{ premise }} {{ 'since' if question == 'cause' else 'so' }}"),
    OK,
)
add(
    "lettered-option-printed-twice",
    "prompt.options-listed-wrong",
    native(
        prompt=LETTERED.replace("D. {{ choices[3] }}", "D. {{ choices[2] }}") + "Answer:",
        choices=[" A", " B", " C", " D"],
    ),
    rule("prompt.options-listed-wrong"),
)
add(
    "gen-system-prints-answer",
    "prompt.shows-target",
    gen(
        [{**r, "aliases": [r["answer"], r["answer"].upper()]} for r in GEN_ROWS],
        target="{{ aliases }}",
        chat={"system": "The answer is {{ answer }}."},
    ),
    rule("prompt.shows-target"),
)
add(
    "fewshot-answers-without-questions",
    "fewshot.settings",
    {
        **native(fewshot={"count": 2, "source": {"path": "dev.jsonl"}, "template": "Answer: {{ choices[label] }}"}),
        "dev.jsonl": jsonl(TRAIN),
    },
    rule("fewshot.settings"),
)
add(
    "fewshot-pool-re-spaced-copy",
    "fewshot.leak",
    {
        **native(fewshot={"count": 2, "source": {"path": "dev.jsonl"}}),
        "dev.jsonl": jsonl([{**r, "id": "c" + r["id"], "question": r["question"].replace("?", " ?")} for r in QUIZ]),
    },
    rule("fewshot.leak"),
)

add(
    "gen-cue-doubled",
    "prompt.doubled-cue",
    gen([{**r, "question": f"Q: {r['question']}"} for r in GEN_ROWS], prompt="Q: {{ question }}\nA:"),
    rule("prompt.doubled-cue"),
)
add(
    "chatml-by-hand-under-chat",
    "chat.written-by-hand",
    native(prompt="<|im_start|>user\n{{ question }}<|im_end|>\n<|im_start|>assistant\n", chat={"system": "Be brief."}),
    rule("chat.written-by-hand"),
)
add(
    "choices-carry-letters",
    "choices.letter-prefixed",
    native([{**r, "choices": [f"({'abcd'[k]}) {c}" for k, c in enumerate(r["choices"])]} for r in QUIZ]),
    rule("choices.letter-prefixed"),
)

add(
    "max-length-below-prompts",
    "prompt.over-max-length",
    native([{**r, "question": r["question"] + " " + "filler " * 30} for r in QUIZ], max_length=12),
    rule("prompt.over-max-length"),
)
add("max-length-roomy", "ok", native(max_length=256), OK)

MOODS = ["happy", "sad", "angry"]
MOOD_ROWS = [{"id": f"m{i}", "text": f"Diary entry {i} about the long day.", "mood": MOODS[i % 3]} for i in range(9)]
add(
    "gen-row-text-names-label",
    "prompt.contains-gold",
    gen(
        [{**r, "text": f"{r['text']} [{r['mood']}]"} for r in MOOD_ROWS],
        prompt="Moods: happy, sad, angry.\n{{ text }}\nMood:",
        target="{{ mood }}",
    ),
    rule("prompt.contains-gold"),
)
add(
    "demo-holds-evaluated-row",
    "prompt.shows-evaluated-row",
    gen(
        MOOD_ROWS,
        prompt=f"Moods: happy, sad, angry.\n\n{MOOD_ROWS[4]['text']}\nMood: sad\n\n{{{{ text }}}}\nMood:",
        target="{{ mood }}",
    ),
    rule("prompt.shows-evaluated-row"),
)
add(
    "demo-other-row-ok",
    "ok",
    gen(
        MOOD_ROWS,
        prompt="Moods: happy, sad, angry.\n\nA dull afternoon.\nMood: sad\n\n{{ text }}\nMood:",
        target="{{ mood }}",
    ),
    OK,
)

add(
    "passage-nan-text",
    "data.missing-as-text",
    native(
        [
            {**r, "passage": "nan" if i == 2 else f"A long passage about question {i} and its topic."}
            for i, r in enumerate(QUIZ)
        ],
        prompt="{{ passage }}\nQ: {{ question }}\nA:",
    ),
    rule("data.missing-as-text"),
)
add(
    "gen-reference-nan-text",
    "data.missing-as-text",
    gen([{**r, "answer": "nan" if i == 1 else r["answer"]} for i, r in enumerate(GEN_ROWS)]),
    rule("data.missing-as-text"),
)

# ---------------------------------------------------------------- reading order (session 11): the prompt is a
# sentence's end and the choices its start (Winogrande's partial scoring written backwards)

_SENTENCES = [
    ("The lawyer asked the witness a question, but the", "lawyer", "witness", "was reluctant to repeat it.", 0),
    ("The delivery truck zoomed by the school bus because the", "truck", "bus", "was going so fast.", 0),
    ("Frank felt crushed when his longtime rival Bill revealed that", "Frank", "Bill", "was the winner.", 1),
    ("The man couldn't lift his son because the", "man", "son", "was so weak.", 0),
    ("The large ball crashed right through the table because the", "ball", "table", "was made of steel.", 0),
]
_WINO = [
    {"start": s, "option1": f"{s} {a}", "option2": f"{s} {b}", "ending": e.replace("was", verb), "answer": g}
    for verb in ("was", "seemed")
    for s, a, b, e, g in _SENTENCES
]
add(
    "order-reversed-wino",
    "prompt.reversed",
    native(_WINO, prompt="{{ ending }}", choices=["{{ option1 }}", "{{ option2 }}"], target="{{ answer }}"),
    rule("prompt.reversed"),
)
add(
    "order-reversed-wino-cued",
    "prompt.reversed",
    native(
        _WINO,
        prompt="Complete the sentence.\n{{ ending }}",
        choices=["{{ option1 }}", "{{ option2 }}"],
        target="{{ answer }}",
    ),
    rule("prompt.reversed"),
)
add(
    "order-wino-right-way-ok",
    "ok",
    native(
        _WINO,
        prompt="{{ start }}",
        choices=["{{ option1.split(' ')[-1] }} {{ ending }}", "{{ option2.split(' ')[-1] }} {{ ending }}"],
        target="{{ answer }}",
    ),
    OK,
)

# ---------------------------------------------------------------- the answer found without the question (session 11)

_ANIMALS = [
    ("a bat", "mammal", ["bird", "insect", "reptile"]),
    ("a penguin", "bird", ["fish", "mammal", "reptile"]),
    ("a shark", "fish", ["mammal", "whale", "reptile"]),
    ("a frog", "amphibian", ["reptile", "fish", "insect"]),
    ("a snake", "reptile", ["worm", "fish", "amphibian"]),
    ("a bee", "insect", ["bird", "spider", "mammal"]),
    ("a dolphin", "mammal", ["fish", "shark", "amphibian"]),
    ("an eagle", "bird", ["mammal", "insect", "bat"]),
    ("a salmon", "fish", ["amphibian", "bird", "reptile"]),
    ("a lizard", "reptile", ["amphibian", "insect", "mammal"]),
    ("an ant", "insect", ["spider", "reptile", "worm"]),
]


def _animal_rows(answer) -> list[dict]:
    rows = []
    for n, (phrase, gold, others) in enumerate(_ANIMALS * 2):
        label = n % 4
        choices = list(others)
        choices.insert(label, answer(gold, n))
        rows.append(
            {
                "question": f"What kind of animal is {phrase}? ({n // len(_ANIMALS) + 1})",
                "choices": choices,
                "label": label,
            }
        )
    return rows


add(
    "guessable-explained-answer",
    "choices.gold-guessable",
    native(_animal_rows(lambda gold, n: f"{gold}, as its anatomy shows")),
    rule("choices.gold-guessable"),
)
add(
    "guessable-leaning-ok",
    "ok",
    native(_animal_rows(lambda gold, n: gold if n % 3 else f"{gold} species")),
    OK,
)

# ---------------------------------------------------------------- the audit's answer, where it differs from the above

# the rule that names the problem is another than the one first guessed: the template reads the target's field
# (prompt.shows-target); a repeated question with another answer (samples.conflict); one text for every row
RENAMED = {
    "prompt-prints-label-index": rule("prompt.shows-target"),
    "prompt-prints-answer-field": rule("prompt.shows-target"),
    "prompt-prints-gold-letter": rule("prompt.shows-target"),
    "prompt-chat-system-gold": rule("prompt.shows-target"),
    "labels-skewed-unused-last": rule("samples.conflict"),  # q7 asks q2's question with another answer
    "ppl-constant-text": rule("samples.duplicate"),
    "glm-prompt-folders-identical": rule("samples.duplicate"),
    "glm-label-out-of-range": ("error", "out of range"),
    "glm-label-negative": ("error", "target"),
    # the label is read as the number it is: "2" is index 2, 1.0 is index 1 (no number changes)
    "target-string-digit": OK,
    "target-json-float-one": OK,
    "glm-label-float": OK,
    "lmeval-target-string-digit": OK,
    "lmeval-fewshot-split-is-test": rule("lmeval.fewshot-from-evaluated"),
    "lmeval-fewshot-train-is-copy": rule("lmeval.fewshot-from-evaluated"),
    "lmeval-fewshot-same-file-both-splits": rule("lmeval.fewshot-from-evaluated"),
    "lmeval-fewshot-no-split": rule("lmeval.fewshot-from-evaluated"),
    "breakdown-per-row": rule("breakdown.per-row"),
    "gen-answer-tag-not-in-prompt": rule("extraction.tag-not-asked"),
    "fewshot-template-no-answer": rule("fewshot.settings"),
    "fewshot-template-ignores-row": rule("fewshot.settings"),
    "fewshot-count-zero-with-source": rule("fewshot.settings"),
    "gen-temperature-sampling-one-epoch": rule("generation.sampling"),
    "prompt-double-space-delimiter": rule("prompt.delimiter"),
    "choices-ints": OK,  # the choice texts "1".."4" are what the data says
    "ref-bool": rule("references.coerced"),
    "ref-number-float": rule("references.coerced"),
    "ref-python-list-text": rule("references.coerced"),
    # a row whose own part of the prompt is blank: prompt.empty, in every dialect (SEA-HELM's text too)
    "seahelm-prompt-text-empty": rule("prompt.empty"),
    # label*1.0 is a whole number in every row (the '/ 0' branch is never taken): 1.0 is index 1, as above
    "fields-computed-nan": OK,
    # SEA-HELM reads its examples only for a base model: the dialect's own rule reads them as such a run would
    "seahelm-examples-are-eval": rule("seahelm.examples-are-evaluated"),
    "lmeval-target-delimiter-empty": rule("prompt.glued-answer"),  # lm-eval's own target_delimiter
    # f1 on one-number references rewards an answer listing several numbers ('2 or 0' scores 0.67), as on one-word
    # labels: red team 9 (probe 045) counts it a wrong number, where this case had first been a control
    "gen-metric-f1-on-numbers": rule("metrics.mismatch"),
}

# Not caught yet: each ends without an internal error or a hang (the test checks that), and with no word about
# the problem. Listed by the rule a later audit would add; docs/audit.md ("Not caught yet") summarises them.
GAPS: dict[str, str] = {}


def _settle(case: AuditCase) -> AuditCase:
    if case.name in RENAMED:
        return dataclasses.replace(case, expect=RENAMED[case.name])
    if case.name in GAPS:
        return dataclasses.replace(case, expect=("gap", GAPS[case.name]))
    return case


assert set(RENAMED) | set(GAPS) <= {c.name for c in CORPUS}, sorted(set(RENAMED) | set(GAPS) - {c.name for c in CORPUS})
CORPUS[:] = [_settle(c) for c in CORPUS]
