"""The splits an lm-eval task's config names, read before lm-eval builds the task: those it cannot do without
(the evaluated split, and the few-shot one when shots are drawn), which mapped local copies must serve
(``data_map.serving``), and the key naming each split, which an error about a split words itself by.
"""

from __future__ import annotations

from proctor.dialects.lmeval.task_config import TaskConfig


def splits_read(config: TaskConfig) -> set[str]:
    """Splits a task cannot do without: the evaluated one, and the few-shot one when shots are drawn."""
    needed = set()
    evaluated = config.get("test_split") or config.get("validation_split")
    if evaluated:
        needed.add(str(evaluated))
    fewshot = config.get("fewshot_split") or (
        (config.get("fewshot_config") or {}).get("split") if isinstance(config.get("fewshot_config"), dict) else None
    )
    if (config.get("num_fewshot") or 0) > 0:
        needed.add(str(fewshot or config.get("training_split") or config.get("validation_split") or evaluated))
    return needed


def split_keys(config: TaskConfig) -> dict[str, str]:
    """Each split the task file names -> the key naming it (the first, where two keys name one split)."""
    named = [(key, config.get(key)) for key in ("test_split", "validation_split", "training_split", "fewshot_split")]
    fewshot = config.get("fewshot_config")
    if isinstance(fewshot, dict):
        named.append(("fewshot_config.split", fewshot.get("split")))
    keys: dict[str, str] = {}
    for key, split in named:
        if isinstance(split, str):
            keys.setdefault(split, key)
    return keys
