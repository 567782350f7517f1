"""proctor's run-time overrides for lm-eval tasks, as ``lm_eval.simple_evaluate`` applies its own.

- ``--num-fewshot N``: lm-eval's ``num_fewshot`` (a task whose YAML sets 0 keeps 0, as in lm-eval);
- ``--chat-template on``: lm-eval's ``apply_chat_template`` with the model's template
  (``auto`` / ``off``: plain text, lm-eval's default);
- ``--fewshot-as-multiturn`` / ``--fewshot-in-one-turn``: lm-eval's ``fewshot_as_multiturn``
  (with the chat template only; on by default there, as lm-eval's CLI);
- ``--system-prompt TEXT``: lm-eval's ``system_instruction`` (a system turn, or the prompt's start
  in plain text).

They enter the task's handler options (``LmEvalRunOptions``: so its content hash, hence the resume check);
``--gen-kwargs`` / ``--seed`` and ``--epochs`` are refused by name (set them in the task YAML).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from proctor.core.errors import ProctorError


def run_options(o: Any, chat: bool | None, name: str) -> dict[str, Any]:
    """What the overrides ask of one lm-eval task (empty when they ask nothing)."""
    refused = [
        flag
        for flag, on in (("--gen-kwargs/--seed", bool(o.gen_kwargs) or o.seed is not None), ("--epochs", o.epochs != 1))
        if on
    ]
    if refused:
        raise ProctorError(
            f"{refused[0]} is not applied to lm-evaluation-harness tasks yet (task '{name}'): set "
            "generation_kwargs / repeats in the task YAML instead"
        )
    if o.fewshot_as_multiturn and not chat:
        raise ProctorError(
            f"--fewshot-as-multiturn needs the chat template (task '{name}' runs without it; add --chat-template on), "
            "as lm-eval's --fewshot_as_multiturn needs --apply_chat_template"
        )
    out: dict[str, Any] = {}
    if o.num_fewshot is not None:
        out["num_fewshot"] = o.num_fewshot
    if chat:
        out["apply_chat_template"] = True
        out["fewshot_as_multiturn"] = True if o.fewshot_as_multiturn is None else bool(o.fewshot_as_multiturn)
    if o.system_prompt is not None:
        out["system_instruction"] = o.system_prompt
    return out


def apply(task: Any, o: Any, chat: bool | None) -> Any:
    """The task with its run options recorded in its spec (unchanged when there are none)."""
    options = run_options(o, chat, task.name)
    if not options:
        return task
    return dataclasses.replace(task, spec=task.spec.with_handler_options(run_options=options))


def fewshot_count(configured: Any, override: int | None) -> int:
    """lm-eval's rule: an override replaces the task's count unless the task sets 0; unset means 0."""
    if override is not None and configured != 0:
        return int(override)
    return int(configured or 0)
