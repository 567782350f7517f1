"""A prepared task's rows as whole columns: each part of every row (its choices, gold indices, references, own
text, source row, prompt text) read once per task, for every rule that looks at all rows.

A task may have 100,000 rows and the audit may add at most 5% to ``proctor validate`` (issue 45). Reading one
attribute of 100,000 objects costs milliseconds, most of it in fetching each object from memory; several
rules reading the same attribute row by row, each in its own pass, paid that again and again. The columns
are read once, in one pass over the samples, and shared; and a whole-column question (does any row have one
choice? more than one right answer?) is asked of a column in C, so that a rule reads rows one by one only
where the column says one may hit.
"""

from __future__ import annotations

from functools import cached_property
from itertools import compress
from operator import attrgetter
from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from proctor.data.sources import Sample
from proctor.prompts.builder import PreparedSample, Prompt

ROW = "\x01"  # between rows in a joined column (the scan's)
_PROMPT_TEXT = attrgetter("text")
_MESSAGES = attrgetter("messages")
_ID = attrgetter("id")


class Columns:
    """The columns of one task's prepared samples, read in one pass over them."""

    def __init__(self, samples: Sequence[PreparedSample]) -> None:
        self.samples = samples
        # one Python loop that reads every part of a sample at once costs less than one pass of C per part: each
        # pass fetches 100,000 objects from memory again
        choices: list[tuple[str, ...]] = []
        gold: list[tuple[int, ...]] = []
        references: list[tuple[str, ...]] = []
        own: list[str | None] = []
        rows: list[Sample] = []
        prompts: list[Prompt] = []
        for sample in samples:
            choices.append(sample.choices)
            gold.append(sample.gold)
            references.append(sample.references)
            own.append(sample.text)
            rows.append(sample.sample)
            prompts.append(sample.prompt)
        self.choices = choices
        self.gold = gold
        self.references = references
        self.own_texts = own  # a perplexity row's own text, or None
        self.rows = rows  # each sample's source row (its id, fields, file and line)
        self._prompts = prompts

    @cached_property
    def ids(self) -> list[str]:
        return list(map(_ID, self.rows))

    @cached_property
    def prompt_texts(self) -> list[str]:
        """Each sample's prompt as text (chat messages joined; an absent text is '')."""
        prompts = self._prompts
        texts: list[Any] = []
        messages: list[Any] = []
        for prompt in prompts:  # both parts of a prompt in one pass: each pass fetches 100,000 objects again
            texts.append(prompt.text)
            messages.append(prompt.messages)
        if messages.count(None) == len(messages) and None not in texts:
            return texts  # plain-text prompts (every native task without chat): as they are
        return [prompt.plain_text for prompt in prompts]

    @cached_property
    def choice_counts(self) -> npt.NDArray[np.intp]:
        """How many choices each row has."""
        return np.fromiter(map(len, self.choices), dtype=np.intp, count=len(self.choices))

    @cached_property
    def gold_counts(self) -> npt.NDArray[np.intp]:
        """How many right answers each row has."""
        return np.fromiter(map(len, self.gold), dtype=np.intp, count=len(self.gold))

    @cached_property
    def all_multiple_choice(self) -> bool:
        """Whether every row has choices (asked of the counts: a pass over the rows' tuples costs a millisecond
        or more each time a rule asks)."""
        return bool(self.choice_counts.all())

    @cached_property
    def scored(self) -> list[PreparedSample]:
        """Multiple-choice samples with a right answer (unscored ones, ``unscored_target``, have none)."""
        if self.all_multiple_choice and self.gold_counts.all():  # every row (most multiple-choice tasks)
            return list(self.samples)
        return list(compress(self.samples, ((self.choice_counts > 0) & (self.gold_counts > 0)).tolist()))

    def multiple_choice(self) -> int:
        """How many rows have choices."""
        return int(np.count_nonzero(self.choice_counts))

    def any_scored_multiple_choice(self) -> bool:
        """Whether a row with choices has a right answer."""
        return bool(((self.choice_counts > 0) & (self.gold_counts > 0)).any())
