"""The lm-eval dialect's audit rule: few-shot examples that lm-eval's own sampler draws from the evaluated docs.

lm-eval picks a task's examples itself (its ``fewshot_split``, else the training or validation split, else the
test split with the document itself left out), so the generic ``fewshot.*`` rules, which read a native task's
``fewshot:``, cannot see them. This rule reads the task lm-eval built (``handler.task``).
"""

from __future__ import annotations

import json
from typing import Any, Iterator

from proctor.core.audit import Hit


def _key(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, default=str)


def fewshot_from_evaluated(subject: Any) -> Iterator[Hit]:
    task = getattr(subject.handler, "task", None)
    shots = getattr(getattr(task, "config", None), "num_fewshot", None) or 0
    if task is None or shots <= 0:
        return
    try:
        pool = [_key(doc) for doc in task.fewshot_docs()]
        evaluated = [_key(doc) for doc in task.eval_docs]
    except Exception:  # noqa: BLE001 - a task whose docs lm-eval cannot list has no pool to compare
        return
    shared = len(set(evaluated) & set(pool))
    if not shared:
        return
    config = task.config
    split = getattr(config, "fewshot_split", None)
    how = f"fewshot_split '{split}'" if split else "no fewshot_split (lm-eval then draws from the test split)"
    yield Hit(
        f"{shared} of {len(evaluated)} evaluated documents are also in the pool lm-eval draws its {shots} few-shot "
        f"example(s) from ({how}; test_split '{getattr(config, 'test_split', None)}'): examples are test items, "
        "and a copy of the document itself can be shown with its answer",
        file=str(subject.task.file) if subject.task.file else None,
        line=subject.task.line,
        field="fewshot_split",
    )
