"""A context limit set in the task file (``max_length``: GLM-130B's ``max_seq_length``) that the prompts exceed
before any tokenizer is known: each word is at least one token, so a prompt of more words than the limit is cut on
the left, and the cut takes the passage or the question's start. At run time the cut is counted once the
tokenizer is known; a limit set far too small (64 on BoolQ's passages) is told before the model loads."""

from __future__ import annotations

from typing import Iterator

from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

CUT_SHARE = 0.1  # of the rows: a few long rows are cut anyway; a tenth or more is the limit's doing


def _words(text: str) -> int:
    return len(text.split())


def over_max_length(subject: AuditSubject) -> Iterator[Hit]:
    limit = subject.spec.max_length
    samples = subject.samples
    if not limit or not samples:
        return
    texts = subject.prompt_texts
    cut = []
    for i, sample in enumerate(samples):
        answers = sample.choices or sample.references
        longest = max((_words(a) for a in answers), default=0)
        if _words(texts[i]) + longest > limit:
            cut.append(i)
    if len(cut) < CUT_SHARE * len(samples):
        return
    first = samples[cut[0]]
    yield subject.at_row(
        first.sample,
        f"max_length is {limit} tokens and the prompt with its longest answer has more words than that in "
        f"{len(cut)} of {len(samples)} rows ({_words(texts[cut[0]])} words in this one; a word is a token at "
        "least): the start of the prompt is cut away, passage or question with it",
        "max_length",
    )


RULES = (
    AuditRule(
        "prompt.over-max-length",
        "warning",
        "The task's max_length (GLM-130B's max_seq_length) is below the word count of the prompt and its longest "
        "answer in a tenth of the rows or more: the start of those prompts is cut away.",
        over_max_length,
    ),
)
