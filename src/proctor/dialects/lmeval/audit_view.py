"""What the audit reads of an lm-eval task whose choices are contexts (``multiple_input``: Winogrande's partial
scoring). lm-eval scores one continuation after each choice's context, and its gold is ``doc_to_text``'s index;
the samples the runner keeps carry the first context as the prompt and the one continuation once per choice, with
a gold that is a placeholder (lm-eval's own ``process_results`` scores). Read as they are, every row would list
the same choice twice with the first one right. The audit reads the row as asked: what the contexts share is the
question, with a blank where they differ and the shared continuation after it (Winogrande's own sentence, "... because
_ was too big."); the parts that differ are its choices; the gold is the real one. (The continuation alone is no
prompt: Winogrande-style rows often end alike, " was too big.", while what they ask is in the contexts.)"""

from __future__ import annotations

import dataclasses
import os
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
        cut = _shared_words(contexts)
        delimiter = str(getattr(task.config, "target_delimiter", " ") or "")
        viewed.append(
            dataclasses.replace(
                sample,
                prompt=Prompt(text=f"{contexts[0][:cut]}{BLANK}{delimiter}{continuation}"),
                choices=tuple(c[cut:] for c in contexts),
                gold=(gold,),
            )
        )
    return viewed


BLANK = "_"  # where the row's options go, as Winogrande writes its sentences


def _shared_words(contexts: Sequence[str]) -> int:
    """How much every context begins with alike, ending at a space (options "trophy" and "trunk" share "tr", which
    belongs to the options); the whole of the shorter one when one context is the others' beginning."""
    if len(contexts) < 2:
        return 0
    shared = os.path.commonprefix(list(contexts))
    at_a_word = all(len(c) == len(shared) or c[len(shared)].isspace() for c in contexts)
    if shared and not shared[-1].isspace() and not at_a_word:
        return shared.rfind(" ") + 1
    return len(shared)
