"""Inputs that several audit tests write (and the audit corpus too), kept once: an AISteer360 use case over a
rows file, a generated task over question/answer rows, BoolQ-shaped rows, Vietnamese answers, six science
questions, rows of plain options, a lettered multiple-choice prompt, an lm-eval multiple-choice task over a local
file."""

from __future__ import annotations

from typing import Any

from tests.support.cli_runs import generate_task
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
ANSWERS_TASK = generate_task("answers", "data.jsonl", "{{ q }}", "{{ answer }}", 16, metrics=None)


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

# six ARC-like science questions: (question, four options, the right option's index), the right one at each place
ARC_QUESTIONS = [
    ("Which gas do plants take in?", ["oxygen", "carbon dioxide", "helium", "neon"], 1),
    ("What is frozen water called?", ["steam", "sand", "ice", "glass"], 2),
    ("Which planet is closest to the Sun?", ["Mercury", "Venus", "Earth", "Mars"], 0),
    ("Which organ pumps blood?", ["lung", "liver", "kidney", "heart"], 3),
    ("What do bees make?", ["milk", "honey", "silk", "wax paper"], 1),
    ("Which is a mammal?", ["shark", "trout", "whale", "eel"], 2),
]

# four plain options per row, none a proper name, in no particular order (twelve rows)
PLAIN_OPTIONS = [
    ["a marsh", "the plains", "a tundra", "a desert"],
    ["oxygen", "carbon", "rain", "nitrogen"],
    ["lions", "humans", "bunnies", "grass"],
    ["roots may split", "parts may break", "roots may die", "leaves may fall"],
    ["gasoline", "a power station", "fuel", "electric wires"],
    ["make more calls", "quit eating out", "buy less", "have lunch"],
    ["warm", "gray", "soft", "long"],
    ["brain cells", "ovary cells", "bone cells", "muscle cells"],
    ["rubber gloves", "breathing mask", "safety goggles", "lead apron"],
    ["the moon", "a comet", "the sun", "a star"],
    ["steam", "ice", "water", "fog"],
    ["sand", "clay", "silt", "gravel"],
]

# MMLU's prompt: the question, the options under the letters A to D, one a line
LETTERED_PROMPT = "{{ question }}\nA. {{ A }}\nB. {{ B }}\nC. {{ C }}\nD. {{ D }}\nAnswer:"


def lmeval_quiz(text: str, choices: str, target: str, rest: str = "") -> str:
    """An lm-eval multiple-choice task 'quiz' over the local JSON-lines file test.jsonl (its test split):
    ``doc_to_text``, ``doc_to_choice`` and ``doc_to_target`` written as given (YAML, quotes included), then
    ``rest`` (a metric_list, say)."""
    return (
        "task: quiz\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: test.jsonl\n"
        "output_type: multiple_choice\ntest_split: test\n"
        f"doc_to_text: {text}\ndoc_to_choice: {choices}\ndoc_to_target: {target}\n{rest}"
    )
