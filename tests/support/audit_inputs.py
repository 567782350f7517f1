"""Inputs that several audit tests write (and the audit corpus too), kept once: an AISteer360 use case over a
rows file, a generated task over question/answer rows, BoolQ-shaped rows, Vietnamese answers, a lettered
multiple-choice prompt."""

from __future__ import annotations

from typing import Any

from tests.support.validate_lines import jsonl_text

# an AISteer360 use case whose rows are rows.jsonl (its samples carry no prompt: the rows' question is read)
QUIZ_USE_CASE = """\
from aisteer360.evaluation.use_cases.base import UseCase


class Quiz(UseCase):
    def generate(self, model_or_pipeline, tokenizer, gen_kwargs=None, runtime_overrides=None, **kwargs):
        return []

    def evaluate(self, generations):
        return {}


evaluation_data = "rows.jsonl"
evaluation_metrics = []
"""

# a generated task over rows {"id", "q", "answer"}: the references are the answers as written
ANSWERS_TASK = """\
name: answers
kind: generate
data: {path: data.jsonl, id: id}
prompt: "{{ q }}"
target: "{{ answer }}"
generation: {max_tokens: 16, stop: ["\\n"]}
"""


def answers_files(answers: list[Any]) -> dict[str, str]:
    """``ANSWERS_TASK`` and its data file, one row per answer ('Question i?')."""
    rows = [{"id": f"r{i}", "q": f"Question {i}?", "answer": a} for i, a in enumerate(answers)]
    return {"t.yaml": ANSWERS_TASK, "data.jsonl": jsonl_text(rows)}


# BoolQ-shaped rows: a passage, a question, a truth value (True in two rows of three)
BOOLQ_ROWS = [
    {"id": f"b{i}", "passage": f"Passage {i} about a topic.", "question": f"is claim {i} true", "answer": i % 3 != 0}
    for i in range(8)
]

# Vietnamese answers as a model writes them (composed accents, NFC)
VIETNAMESE = ["Nó dễ vỡ.", "Tích cực", "Tiêu cực", "Tôi lấy một cuống vé."]

# MMLU's prompt: the question, the options under the letters A to D, one a line
LETTERED_PROMPT = "{{ question }}\nA. {{ A }}\nB. {{ B }}\nC. {{ C }}\nD. {{ D }}\nAnswer:"
