"""What an lm-eval task's sample records hold (samples.jsonl): lm-eval's values as JSON (``jsonable``) and the
fields every dialect's multiple-choice and generation records share, read off lm-eval's answered instances as
its ``process_results`` reads them (``shown_fields``: choices, log-likelihoods, prediction and gold, or the
generation, the filtered answer and the references).

Kept apart from ``handler.py`` because it describes finished results: it runs no model and builds no task.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from proctor.kinds.base import SampleDetails
from proctor.kinds.multiple_choice import softmax

if TYPE_CHECKING:
    from lm_eval.api.instance import Instance
    from lm_eval.api.task import ConfigurableTask


def jsonable(value: object) -> object:
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "item"):
        try:
            return value.item()
        except Exception:
            pass
    return str(value)


def gold_indices(task: ConfigurableTask, doc: object, choices: list[str]) -> list[int]:
    """The gold choice(s) as lm-eval's ``process_results`` finds them: an index, a choice's text, or a list
    (``multiple_input``: ``doc_to_text``'s index of the contexts). Empty: none lm-eval can find (it scores the
    document wrong whatever the model says)."""
    gold = task.doc_to_text(doc) if getattr(task, "multiple_input", False) else task.doc_to_target(doc)
    items = gold if isinstance(gold, list) else [gold]
    out = []
    for g in items:
        if isinstance(g, str) and g in choices:
            g = choices.index(g)
        if isinstance(g, int) and not isinstance(g, bool) and 0 <= g < len(choices):
            out.append(g)
    return out


def shown_fields(task: ConfigurableTask, doc: object, instances: list[Instance], answer: object) -> SampleDetails:
    """The fields every dialect's multiple-choice and generation records share (docs/results.md, samples.jsonl):
    choices, per-choice log-likelihoods and probabilities, prediction and gold index; or the generation,
    the answer lm-eval's filters read from it and the references."""
    output_type = getattr(task, "OUTPUT_TYPE", None)
    if output_type == "multiple_choice":
        choices = [str(c) for c in task.doc_to_choice(doc)]
        logprobs = [float(i.resps[0][0]) for i in instances][: len(choices)]  # acc_mutual_info adds unconditional ones
        if len(logprobs) != len(choices) or not choices:
            return {}
        greedy = [bool(i.resps[0][1]) for i in instances][: len(choices)]
        gold = gold_indices(task, doc, choices)
        prediction = max(
            range(len(logprobs)), key=lambda k: logprobs[k]
        )  # lm-eval's acc: argmax of the log-likelihoods
        return {
            "choices": choices,
            "target": gold[0] if len(gold) == 1 else gold or None,
            "logprobs": logprobs,
            "is_greedy": greedy,
            "distribution": softmax(logprobs),
            "prediction": prediction,
            "correct": prediction in gold if gold else None,
        }
    if output_type == "generate_until":
        generation = instances[0].resps[0] if instances[0].resps else ""
        extracted = answer[0] if isinstance(answer, list) and answer else answer
        target = task.doc_to_target(doc)
        if task.config.doc_to_choice is not None and isinstance(
            target, int
        ):  # as process_results: an index into the choices
            target = task.doc_to_choice(doc)[target]
        references = [str(t) for t in target] if isinstance(target, list) else [str(target)]
        return {
            "generation": str(generation),
            "extracted": jsonable(extracted),
            "parsed": extracted != "[invalid]",  # lm-eval's filters' "no match"
            "target": references,
        }
    return {}
