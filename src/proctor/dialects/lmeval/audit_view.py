"""What the audit reads of an lm-eval task whose choices are contexts (``multiple_input``: Winogrande's partial
scoring). lm-eval scores one continuation after each choice's context, and its gold is ``doc_to_text``'s index;
the samples the runner keeps carry the first context as the prompt and the one continuation once per choice, with
a gold that is a placeholder (lm-eval's own ``process_results`` scores). Read as they are, every row would list
the same choice twice with the first one right. The audit reads the row as asked: the contexts as its choices,
the shared continuation as what follows them, the real gold."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from proctor.prompts.builder import PreparedSample, Prompt


def contexts_as_choices(
    task: Any, docs: Sequence[tuple[int, Any]], samples: Sequence[PreparedSample]
) -> Sequence[PreparedSample]:
    """``samples`` as the audit reads them: unchanged unless ``task`` scores contexts (``multiple_input``)."""
    if not getattr(task, "multiple_input", False) or len(docs) != len(samples):
        return samples
    viewed = []
    for (_, doc), sample in zip(docs, samples):
        try:
            contexts = [str(c) for c in task.doc_to_choice(doc)]
            gold = task.doc_to_text(doc)
            continuation = task.doc_to_target(doc)
        except Exception:  # noqa: BLE001 - a document lm-eval cannot read is reported where it builds requests
            return samples
        if not isinstance(gold, int) or not 0 <= gold < len(contexts):
            return samples
        viewed.append(
            dataclasses.replace(sample, prompt=Prompt(text=str(continuation)), choices=tuple(contexts), gold=(gold,))
        )
    return viewed
