"""Run-time overrides on lm-eval tasks: lm-eval's own task objects build the prompts and generation settings."""

from __future__ import annotations

from typing import Any

from proctor.core.errors import ProctorError


def apply_lmeval_overrides(task: Any, o: Any, chat: bool | None) -> Any:
    given = [flag for flag, on in (("--num-fewshot", o.num_fewshot is not None), ("--gen-kwargs/--seed", bool(o.gen_kwargs) or o.seed is not None),
                                   ("--epochs", o.epochs != 1), ("--system-prompt", o.system_prompt is not None),
                                   ("--fewshot-as-multiturn", o.fewshot_as_multiturn is not None)) if on]
    if given:
        raise ProctorError(f"{given[0]} is not applied to lm-evaluation-harness tasks yet (task '{task.name}'): set "
                           "num_fewshot / generation_kwargs / repeats in the task YAML instead")
    return task
