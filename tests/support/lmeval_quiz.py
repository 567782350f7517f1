"""A small lm-eval task folder, a quiz: its template, two tasks, their group, and its rows and few-shot examples."""

from __future__ import annotations

ROWS = [
    {"question": "what is two plus two", "answer": "four", "options": ["three", "four"], "label": 1},
    {"question": "what colour is the sky", "answer": "blue", "options": ["blue", "green"], "label": 0},
    {"question": "how many legs has a cat", "answer": "four", "options": ["four", "two"], "label": 0},
    {"question": "what is frozen water", "answer": "ice", "options": ["steam", "ice"], "label": 1},
]
SHOTS = [{"question": "what is one plus one", "answer": "two", "options": ["two", "one"], "label": 0}]

TEMPLATE = """dataset_path: example/quiz
dataset_name: small
output_type: multiple_choice
test_split: test
fewshot_split: train
fewshot_config:
  sampler: first_n
doc_to_text: "Q: {{question}}\\nA:"
doc_to_choice: options
doc_to_target: label
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
metadata:
  version: 3
"""
TASK_A = """include: _template_yaml
task: quiz_plain
"""
TASK_B = """include: _template_yaml
task: quiz_shouted
description: "Answer the quiz.\\n\\n"
num_fewshot: 1
fewshot_delimiter: "\\n---\\n"
target_delimiter: " => "
process_docs: !function utils.shout
"""
UTILS = """def shout(dataset):
    return dataset.map(lambda doc: {"question": doc["question"].upper()})
"""
GROUP = """group: quiz
task:
  - quiz_plain
  - quiz_shouted
aggregate_metric_list:
  - metric: acc
    weight_by_size: false
metadata:
  version: 1
"""

# a generating task over the quiz, with many few-shot examples (lm-eval's --seed and --gen-kwargs)
GEN_TASK = """task: quiz_gen
dataset_path: example/quiz
dataset_name: small
output_type: generate_until
test_split: test
fewshot_split: train
num_fewshot: 1
doc_to_text: "Q: {{question}}\\nA:"
doc_to_target: answer
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 5
metric_list:
  - metric: exact_match
"""
MANY_SHOTS = [{"question": f"shot question {k}", "answer": str(k), "options": ["a", "b"], "label": 0} for k in range(9)]


def first_shot(seed: int) -> str:
    """The question of the first document's few-shot example, as lm-eval's sampler draws it with ``seed``."""
    import random

    return random.Random(seed).sample(MANY_SHOTS, 1)[0]["question"]


# an lm-eval task over a JSON Lines file beside it (data.jsonl: question, choices, label)
JSON_TASK = """\
task: quiz
dataset_path: json
dataset_kwargs:
  data_files: {test: data.jsonl}
test_split: test
output_type: multiple_choice
doc_to_text: "{{question}}"
doc_to_choice: "{{choices}}"
doc_to_target: label
"""
