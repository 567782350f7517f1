"""A custom GLM-style task class: the prediction is the first word the model writes.

GLM-130B's LAMBADA task overrides ``predict_single_batch`` the same way (beam search, then a
rule picking a single word). Here ``self.model.generate_text`` runs the task's beam settings and
the rule keeps the first whitespace word with surrounding punctuation removed. ``self.model`` also
offers ``cond_log_prob(contexts, choices)``.
"""

from __future__ import annotations

import string

from proctor.tasks.custom import GenerationTask


def first_word(text: str) -> str:
    words = text.split()
    return words[0].strip(string.punctuation + "“”‘’") if words else ""


class LastWordTask(GenerationTask):
    def predict_single_batch(self, batch: list[dict]) -> list[str]:
        texts = self.model.generate_text([item["inputs"] for item in batch], **self.generation_params())
        return [first_word(text) for text in texts]
