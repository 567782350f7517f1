# Written for proctor's tests in AISteer360's judge-metric file format (not copied from AISteer360):
# an LLMJudgeMetric subclass whose constructor fixes the grading template and the score scale; the
# template uses the placeholders that format defines ({prompt}, {response}, {lower_bound}, {upper_bound}).
from aisteer360.evaluation.metrics.base_judge import LLMJudgeMetric

GRADING_TEMPLATE = """\
Grade how concise an answer is.
Use a number from {lower_bound} (wordy, padded) up to {upper_bound} (says it in as few words as possible).

The question asked:
{prompt}

The answer to grade:
{response}

Give the number.
"""
SCALE = (1, 5)


class Brevity(LLMJudgeMetric):
    """An LLM judge's score for how concise each response is."""

    def __init__(self, *args, **kwargs):
        kwargs.update(prompt_template=GRADING_TEMPLATE, scale=SCALE)
        super().__init__(*args, **kwargs)
