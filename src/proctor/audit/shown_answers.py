"""The answers of the few-shot examples a dialect shows, where its own sampler picks them (lm-eval's
``fewshot_split`` and sampler, SEA-HELM's examples split for a base model): what a handler's
``audit_example_answers()`` hands ``fewshot.constant-label`` (``example_rules.py``), which reads a native task's
``fewshot:`` pool itself. A handler without the hook, or with no examples to show, gives None."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ShownAnswers:
    """The answers of the examples shown (each as the dialect's target gives it: an index, a label, a text)."""

    answers: tuple[object, ...]
    source: str  # where they come from and how they are picked, as a finding says it
    field: str  # the setting that picks them (fewshot_split, example_filepath)
    shown: int  # how many each prompt shows


def shown_answers(handler: object) -> ShownAnswers | None:
    hook = getattr(handler, "audit_example_answers", None)
    if not callable(hook):
        return None
    found = hook()
    return found if isinstance(found, ShownAnswers) else None
