# A judge metric file in AISteer360's format (as aisteer360/evaluation/metrics/generic/relevance.py):
# a prompt template and an LLMJudgeMetric subclass that fixes it.
from aisteer360.evaluation.metrics.base_judge import LLMJudgeMetric

_PROMPT = """\
You are an impartial grader.
Rate, on a scale from {lower_bound} (rambling) to {upper_bound} (perfectly brief), how brief the response is.

PROMPT:
{prompt}

RESPONSE:
{response}

What is your score?
"""


class Brevity(LLMJudgeMetric):
    """Judge how brief a response is."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, prompt_template=_PROMPT, scale=(1, 5), **kwargs)
