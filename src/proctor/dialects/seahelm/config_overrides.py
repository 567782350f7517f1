"""Run-time overrides on SEA-HELM tasks: they map onto SEA-HELM's own config knobs."""

from __future__ import annotations

import dataclasses

from proctor.core.errors import ProctorError
from proctor.core.run_overrides import RunOverrides, sampling_at_own_temperature
from proctor.core.task import Task
from proctor.dialects.seahelm.task_options import SeaHelmTaskOptions


def apply_seahelm_overrides(task: Task, o: RunOverrides) -> Task:
    """SEA-HELM's own knobs: temperature, max_tokens, few-shot count, and seeded runs for epochs."""
    where = f"task '{task.name}' (SEA-HELM)"
    for flag, value in (
        ("--system-prompt", o.system_prompt),
        ("--fewshot-as-multiturn", o.fewshot_as_multiturn),
        ("--seed", o.seed),
    ):
        if value is not None:
            raise ProctorError(
                f"{flag} has no meaning for {where}: SEA-HELM's config fixes the prompt and seeds run k with k"
            )
    unknown = sorted(set(o.gen_kwargs) - {"temperature", "max_tokens", "do_sample"})
    if unknown:
        raise ProctorError(
            f"--gen-kwargs {', '.join(unknown)} has no meaning for {where}; it takes temperature and max_tokens"
        )
    if o.epochs != 1 and o.epoch_reducer != "mean":
        raise ProctorError(
            f"--epoch-reducer {o.epoch_reducer} has no meaning for {where}: its seeded runs are averaged"
        )
    handler = task.spec.handler
    options = handler.options if handler is not None else None
    if handler is None or not isinstance(options, SeaHelmTaskOptions):
        raise ProctorError(f"{where} was not made by the SEA-HELM dialect (it has no SEA-HELM handler options)")
    config = dict(options.config)
    sampling_at_own_temperature(dict(o.gen_kwargs), config.get("temperature", 0), where)  # do_sample=true alone
    languages = {k: dict(v) for k, v in config["languages"].items()}
    if "temperature" in o.gen_kwargs:
        config["temperature"] = o.gen_kwargs["temperature"]
    if "max_tokens" in o.gen_kwargs:
        for lang_cfg in languages.values():
            lang_cfg["max_tokens"] = o.gen_kwargs["max_tokens"]
    if o.num_fewshot is not None:
        config["fewshot_num_examples"] = {"base": o.num_fewshot, "instruct": o.num_fewshot}
    config["languages"] = languages
    spec = task.spec.with_handler_options(config=config, **({"n_runs": o.epochs} if o.epochs != 1 else {}))
    return dataclasses.replace(task, spec=spec)
