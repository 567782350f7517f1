"""proctor's run-time overrides for lm-eval tasks, as ``lm_eval.simple_evaluate`` applies its own.

- ``--num-fewshot N``: lm-eval's ``num_fewshot`` (a task whose YAML sets 0 keeps 0, as in lm-eval);
- ``--chat-template on``: lm-eval's ``apply_chat_template`` with the model's template
  (``auto`` / ``off``: plain text, lm-eval's default);
- ``--fewshot-as-multiturn`` / ``--fewshot-in-one-turn``: lm-eval's ``fewshot_as_multiturn``
  (with the chat template only; on by default there, as lm-eval's CLI);
- ``--system-prompt TEXT``: lm-eval's ``system_instruction`` (a system turn, or the prompt's start
  in plain text).

- ``--gen-kwargs K=V,...`` (and ``--temperature`` / ``--top-p`` / ``--max-tokens``): merged into each
  ``generate_until`` task's ``generation_kwargs``, as lm-eval's ``--gen_kwargs`` (``set_config(update=True)``);
  other tasks keep theirs, as in lm-eval;
- ``--seed S``: lm-eval's ``--seed S`` (every seed S): the few-shot draw's seed (default 1234), and the
  sampling seed of each generation (lm-eval seeds torch globally; proctor seeds each request).

They enter the task's handler options (``LmEvalRunOptions``: so its content hash, hence the resume check);
``--epochs`` is refused by name (set ``repeats`` in the task YAML), as are generation settings lm-eval's requests
do not carry here.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Mapping

from proctor.core.errors import ProctorError
from proctor.dialects.lmeval.task_config import GenerationKwargs
from proctor.dialects.lmeval.task_options import LmEvalTaskOptions

if TYPE_CHECKING:
    from proctor.core.run_overrides import RunOverrides
    from proctor.core.task import Task

# proctor's generation fields -> lm-eval's generation_kwargs keys (what instance_requests reads back)
LMEVAL_GEN_KEYS = {"max_tokens": "max_gen_toks", "stop": "until", "temperature": "temperature", "top_p": "top_p"}


def lmeval_gen_kwargs(gen_kwargs: Mapping[str, Any], name: str) -> GenerationKwargs:
    """--gen-kwargs (parsed into proctor's fields) in lm-eval's names; a temperature above 0 turns sampling on,
    as lm-eval's ``do_sample``; a setting its requests do not carry is refused rather than dropped."""
    out: GenerationKwargs = {}
    for key, value in dict(gen_kwargs).items():
        if key == "do_sample":  # do_sample=true alone (core/run_overrides): merged as lm-eval merges it, the task's
            out["do_sample"] = bool(value)  # temperature kept (0 decodes greedily there: generation.sampling says so)
            continue
        if key not in LMEVAL_GEN_KEYS:
            raise ProctorError(
                f"--gen-kwargs {key} is not applied to lm-evaluation-harness tasks (task '{name}'); they take "
                + ", ".join(sorted(set(LMEVAL_GEN_KEYS.values()) | {"max_new_tokens", "do_sample"}))
            )
        out[LMEVAL_GEN_KEYS[key]] = list(value) if key == "stop" else value
    if "temperature" in out:
        out["do_sample"] = float(out["temperature"]) > 0
    return out


def run_options(o: RunOverrides, chat: bool | None, name: str) -> dict[str, object]:
    """What the overrides ask of one lm-eval task (empty when they ask nothing)."""
    if o.epochs != 1:
        raise ProctorError(
            f"--epochs is not applied to lm-evaluation-harness tasks yet (task '{name}'): set repeats in the task "
            "YAML instead"
        )
    if o.fewshot_as_multiturn and not chat:
        raise ProctorError(
            f"--fewshot-as-multiturn needs the chat template (task '{name}' runs without it; add --chat-template on), "
            "as lm-eval's --fewshot_as_multiturn needs --apply_chat_template"
        )
    out: dict[str, object] = {}  # LmEvalRunOptions' fields
    if o.num_fewshot is not None:
        out["num_fewshot"] = o.num_fewshot
    if chat:
        out["apply_chat_template"] = True
        out["fewshot_as_multiturn"] = True if o.fewshot_as_multiturn is None else bool(o.fewshot_as_multiturn)
    if o.system_prompt is not None:
        out["system_instruction"] = o.system_prompt
    if o.gen_kwargs:
        out["generation_kwargs"] = lmeval_gen_kwargs(o.gen_kwargs, name)
    if o.seed is not None:
        out["seed"] = o.seed
    return out


def apply(task: Task, o: RunOverrides, chat: bool | None) -> tuple[Task, set[str]]:
    """The task with its run options recorded in its spec (unchanged when there are none), and the overrides that
    mean nothing for it: --gen-kwargs on a task that generates nothing (lm-eval leaves it alone too; the run is
    refused when no selected task generates)."""
    options = run_options(o, chat, task.name)
    skipped: set[str] = set()
    handler = task.spec.handler
    generates = (
        handler is not None
        and isinstance(handler.options, LmEvalTaskOptions)
        and handler.options.output_type == "generate_until"
    )
    if "generation_kwargs" in options and not generates:
        del options["generation_kwargs"]
        if o.seed is None:
            skipped.add("--gen-kwargs/--seed")
    if not options:
        return task, skipped
    return dataclasses.replace(task, spec=task.spec.with_handler_options(run_options=options)), skipped


def fewshot_count(configured: int | None, override: int | None) -> int:
    """lm-eval's rule: an override replaces the task's count unless the task sets 0; unset means 0."""
    if override is not None and configured != 0:
        return int(override)
    return int(configured or 0)
