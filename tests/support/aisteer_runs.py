"""A small CommonsenseMCQA use case run through proctor's engine (``run``) on a counting model (``Counting``)."""

from __future__ import annotations

from proctor.dialects.aisteer import CommonsenseMCQA, MCQAAccuracy, MCQAPositionalBias
from proctor.dialects.aisteer.runfile import run_use_cases
from proctor.models.base import Model

ROWS = [
    {"id": f"q{i}", "question": f"Which word is number {i}?", "answer": f"w{i}", "choices": [f"w{i}", "apple", "river"]}
    for i in range(5)
]


class Counting(Model):
    """A real model behind a counter of the requests it is sent; ``fail_after`` calls, it raises."""

    def __init__(self, inner, fail_after: int | None = None):
        self.inner, self.name, self.fail_after = inner, inner.name, fail_after
        self.calls: list[tuple[str, int]] = []

    @property
    def fingerprint(self):
        return self.inner.fingerprint

    def _call(self, kind, requests, progress):
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise RuntimeError("killed")
        self.calls.append((kind, len(requests)))
        return getattr(self.inner, kind)(requests, progress)

    def generate(self, requests, progress=None):
        return self._call("generate", requests, progress)

    def loglikelihood(self, requests, progress=None):
        return self._call("loglikelihood", requests, progress)

    def rolling_loglikelihood(self, requests, progress=None):
        return self._call("rolling_loglikelihood", requests, progress)

    def apply_chat_template(self, messages):
        return self.inner.apply_chat_template(messages)

    @property
    def has_chat_template(self):
        return self.inner.has_chat_template

    @property
    def tokenizer(self):
        return self.inner.tokenizer


def _case():
    return CommonsenseMCQA(ROWS, [MCQAAccuracy(), MCQAPositionalBias()], num_shuffling_runs=2, seed=3)


def run(model, folder, **kwargs):
    return run_use_cases(_case(), model, gen_kwargs={"max_new_tokens": 3}, output_dir=folder, chunk_size=2, **kwargs)
