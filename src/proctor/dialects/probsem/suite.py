"""A suite of probsem's own format (``pretext``, ``context``, ``posttext``, ``queries``) as its task's handler.

The task's spec is its own (``loader``): the suite's contexts are its data, the prompt file's text, the pretext,
the posttext and the queries its handler's options (``task_options.ProbsemSuiteOptions``). ``load_samples`` gives
each context its texts as probsem joins them: the prompt, the text (the non-empty ones of pretext, the context's
text and posttext, joined by newlines), the queries as its choices, ``expected`` as its target (-1: none). The
engine scores them as any multiple-choice task (``kinds/given_texts``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Mapping

from proctor.data.sources import GivenTexts, Sample, load_samples
from proctor.dialects.probsem.task_options import ProbsemSuiteOptions
from proctor.kinds.given_texts import GivenTextsTask


def suite_text(options: ProbsemSuiteOptions, text: str) -> str:
    """probsem's text of one context: the non-empty ones of pretext, its text and posttext, joined by newlines."""
    return "\n".join(part for part in (options.pretext, text, options.posttext) if part)


class ProbsemSuiteTask(GivenTextsTask):
    options: ProbsemSuiteOptions

    def load_samples(self, limit: int | None = None, variables: Mapping[str, str] | None = None) -> list[Sample]:
        """Every context of the suite (the engine keeps the first ``limit``; results.json counts them all)."""
        suite = self.spec.data[0].path
        assert suite is not None  # the loader names the suite file
        rows = load_samples(self.spec.data, Path(suite).parent, variables, task_file=suite)
        options = self.options
        return [
            dataclasses.replace(
                sample,
                given=GivenTexts(
                    prompt=f"{options.prompt}\n{suite_text(options, sample.fields['text'])}\n",
                    target=sample.fields["expected"],
                    choices=options.queries,
                ),
            )
            for sample in rows
        ]
