"""GLM's ``evaluation/utils.py`` on one process: no torch.distributed, no model parallelism."""

from __future__ import annotations

import contextvars
from typing import Any, Callable

from proctor.dialects.glm.tokenizer import get_tokenizer

# where print_rank_0's lines go while a task runs (proctor keeps them in results.json)
_REPORT: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar("glm_report", default=None)


def print_rank_0(*args: Any, **kwargs: Any) -> None:
    sink = _REPORT.get()
    if sink is None:
        print(*args, **kwargs)
        return
    sep = kwargs.get("sep", " ")
    sink(sep.join(str(a) for a in args))


def report_to(sink: Callable[[str], None] | None):
    return _REPORT.set(sink)


def reset_report(token) -> None:
    _REPORT.reset(token)


def default_collate(samples: list[dict]) -> dict:
    """Without a dataset ``collate_fn``: each key's values as a list (GLM stacks them as tensors)."""
    return {key: [s[key] for s in samples] for key in samples[0]} if samples else {}


def build_data_loader(dataset, micro_batch_size, num_workers=1, drop_last=False, collate_fn=None):
    """Batches of ``micro_batch_size`` items in order (GLM: a DistributedSampler without shuffling)."""
    collate = collate_fn or default_collate
    batches = []
    for start in range(0, len(dataset), micro_batch_size):
        items = [dataset[i] for i in range(start, min(start + micro_batch_size, len(dataset)))]
        if drop_last and len(items) < micro_batch_size:
            break
        batches.append(collate(items))
    return batches


def gather_result(prediction, total_length, micro_batch_size):
    """One process: the per-batch predictions flattened in order, cut to ``total_length``."""
    out = [p for batch in prediction for p in batch]
    return out[:total_length]


def get_tokenized_input(item: dict, key: str):
    """``item[key]`` (token ids) if present, else ``item[key + "_pretokenized"]`` (str or list of str)
    tokenized by the evaluated model's tokenizer."""
    if key in item:
        return item[key]
    pretokenized = key + "_pretokenized"
    assert pretokenized in item, f"the row has neither '{key}' nor '{pretokenized}'"
    tokenizer = get_tokenizer()
    value = item[pretokenized]
    if isinstance(value, list):
        return [tokenizer.tokenize(raw) for raw in value]
    return tokenizer.tokenize(value)
