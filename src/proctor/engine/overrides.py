"""Run-time overrides (``proctor run --num-fewshot/--gen-kwargs/--seed/--epochs/...``).

An override rewrites a task's spec before it is prepared, so it enters the task's content hash
(and with it the resume check) and the task's saved config. Each dialect takes the overrides that
mean something for it; one that means nothing for any selected task is an error naming the task.
"""

from __future__ import annotations

import ast
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from pydantic import ValidationError

from proctor.core.errors import ProctorError
from proctor.core.task_spec import ChatSpec, FewShotSpec, GenerationSpec
from proctor.core.task import Task

# lm-evaluation-harness's generation keyword names -> proctor's GenerationSpec fields
GEN_ALIASES = {"max_gen_toks": "max_tokens", "max_new_tokens": "max_tokens", "until": "stop", "min_new_tokens": "min_tokens"}
GEN_FIELDS = tuple(GenerationSpec.model_fields)


@dataclass(frozen=True)
class RunOverrides:
    """What the command line changes in every selected task; defaults change nothing."""

    num_fewshot: int | None = None
    gen_kwargs: Mapping[str, Any] = field(default_factory=dict)  # GenerationSpec fields
    seed: int | None = None  # the sampling seed (each sample and epoch draws from its own stream)
    epochs: int = 1
    epoch_reducer: str = "mean"  # per sample across epochs: "mean" or "pass@K"
    system_prompt: str | None = None
    fewshot_as_multiturn: bool | None = None
    log_samples: bool = True

    def __post_init__(self) -> None:
        if self.epochs < 1:
            raise ProctorError(f"--epochs takes a positive count, got {self.epochs}")
        reducer_k(self.epoch_reducer, self.epochs)
        if self.num_fewshot is not None and self.num_fewshot < 0:
            raise ProctorError(f"--num-fewshot takes a count >= 0, got {self.num_fewshot}")

    @classmethod
    def from_flags(cls, *, gen_kwargs: str | None = None, temperature: float | None = None, top_p: float | None = None,
                   max_tokens: int | None = None, **flags: Any) -> "RunOverrides":
        """From ``proctor run``'s flags: --temperature/--top-p/--max-tokens win over the same keys in --gen-kwargs."""
        generation = parse_gen_kwargs(gen_kwargs)
        for key, value in (("temperature", temperature), ("top_p", top_p), ("max_tokens", max_tokens)):
            if value is not None:
                generation[key] = value
        return cls(gen_kwargs=parse_gen_kwargs(",".join(f"{k}={v!r}" for k, v in generation.items())), **flags)

    def recorded(self) -> dict:
        """The overrides in force, for results.json and run.json (defaults left out, so older folders compare equal)."""
        out: dict[str, Any] = {}
        if self.num_fewshot is not None:
            out["num_fewshot"] = self.num_fewshot
        if self.gen_kwargs:
            out["gen_kwargs"] = dict(self.gen_kwargs)
        if self.seed is not None:
            out["seed"] = self.seed
        if self.epochs != 1:
            out["epochs"] = self.epochs
            out["epoch_reducer"] = self.epoch_reducer
        if self.system_prompt is not None:
            out["system_prompt"] = self.system_prompt
        if self.fewshot_as_multiturn is not None:
            out["fewshot_as_multiturn"] = self.fewshot_as_multiturn
        if not self.log_samples:
            out["log_samples"] = False
        return out


def reducer_k(reducer: str, epochs: int) -> int | None:
    """K of a "pass@K" reducer (None for "mean"); K must lie in 1..epochs."""
    if reducer == "mean":
        return None
    if reducer.startswith("pass@") and reducer[5:].isdigit():
        k = int(reducer[5:])
        if 1 <= k <= epochs:
            return k
        raise ProctorError(f"--epoch-reducer {reducer}: k must lie between 1 and --epochs ({epochs})")
    raise ProctorError(f"--epoch-reducer takes mean or pass@K, got '{reducer}'")


def _literal(text: str) -> Any:
    lowered = text.strip()
    if lowered.lower() in ("true", "false"):
        return lowered.lower() == "true"
    try:
        return ast.literal_eval(lowered)
    except (ValueError, SyntaxError):
        return lowered


def parse_gen_kwargs(text: str | None) -> dict[str, Any]:
    """``KEY=VALUE,KEY=VALUE`` (lm-eval's ``--gen_kwargs``; lm-eval's names such as max_gen_toks and
    until are accepted) -> GenerationSpec fields, checked here so a typo fails before anything loads."""
    if not text:
        return {}
    out: dict[str, Any] = {}
    parts, depth, current = [], 0, ""
    for char in text:  # commas inside [...] belong to a list value
        depth += char in "[(" and 1 or (char in "])" and -1 or 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    for part in filter(str.strip, parts):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ProctorError(f"--gen-kwargs takes KEY=VALUE pairs separated by commas, got '{part}'")
        name = GEN_ALIASES.get(key, key)
        parsed = _literal(value)
        if name == "do_sample":  # lm-eval's switch: off means greedy
            if parsed is False:
                out["temperature"] = 0.0
            continue
        if name not in GEN_FIELDS:
            raise ProctorError(f"--gen-kwargs: unknown key '{key}'; known: {', '.join(GEN_FIELDS + tuple(GEN_ALIASES))}, do_sample")
        out[name] = parsed
    try:
        GenerationSpec(**out)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(x) for x in error["loc"])
        raise ProctorError(f"--gen-kwargs {where}: {error['msg']} (got {error.get('input')!r})") from None
    return out


def parse_limit(text: str | float | int | None) -> int | float | None:
    """``--limit``: a count (>= 1) or a fraction of each task's rows (0 < x < 1), as lm-eval's."""
    if text is None:
        return None
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ProctorError(f"--limit takes a count or a fraction between 0 and 1, got '{text}'") from None
    if value <= 0 or (value >= 1 and not value.is_integer()) or not math.isfinite(value):
        raise ProctorError(f"--limit takes a count or a fraction between 0 and 1, got '{text}'")
    return int(value) if value >= 1 else value


def limit_count(limit: int | float | None, n_rows: int) -> int | None:
    """Rows kept for a limit: a fraction rounds up (lm-eval: ceil(n * limit))."""
    if limit is None:
        return None
    return int(math.ceil(n_rows * limit)) if isinstance(limit, float) and limit < 1 else int(limit)


# --------------------------------------------------------------------------- per dialect
def _spec_update(task: Task, **changes: Any) -> Task:
    spec = type(task.spec).model_validate({**task.spec.model_dump(), **{k: _dump(v) for k, v in changes.items()}})
    return dataclasses.replace(task, spec=spec)


def _dump(value: Any) -> Any:
    return value.model_dump() if hasattr(value, "model_dump") else value


def _uses_chat(task: Task, chat: bool | None) -> bool:
    return chat if chat is not None else bool(task.spec.chat and task.spec.chat.enabled)


def _generation(task: Task, o: RunOverrides) -> GenerationSpec | None:
    changes = dict(o.gen_kwargs)
    if o.seed is not None:
        changes["seed"] = o.seed
    if not changes:
        return None
    return GenerationSpec(**{**task.spec.generation.model_dump(), **changes})


def _seahelm(task: Task, o: RunOverrides) -> Task:
    """SEA-HELM's own knobs: temperature, max_tokens, few-shot count, and seeded runs for epochs."""
    where = f"task '{task.name}' (SEA-HELM)"
    for flag, value in (("--system-prompt", o.system_prompt), ("--fewshot-as-multiturn", o.fewshot_as_multiturn),
                        ("--seed", o.seed)):
        if value is not None:
            raise ProctorError(f"{flag} has no meaning for {where}: SEA-HELM's config fixes the prompt and seeds run k with k")
    unknown = sorted(set(o.gen_kwargs) - {"temperature", "max_tokens"})
    if unknown:
        raise ProctorError(f"--gen-kwargs {', '.join(unknown)} has no meaning for {where}; it takes temperature and max_tokens")
    if o.epochs != 1 and o.epoch_reducer != "mean":
        raise ProctorError(f"--epoch-reducer {o.epoch_reducer} has no meaning for {where}: its seeded runs are averaged")
    options = dict(task.spec.task_options)
    config = dict(options["config"])
    languages = {k: dict(v) for k, v in config["languages"].items()}
    if "temperature" in o.gen_kwargs:
        config["temperature"] = o.gen_kwargs["temperature"]
    if "max_tokens" in o.gen_kwargs:
        for lang_cfg in languages.values():
            lang_cfg["max_tokens"] = o.gen_kwargs["max_tokens"]
    if o.num_fewshot is not None:
        config["fewshot_num_examples"] = {"base": o.num_fewshot, "instruct": o.num_fewshot}
    if o.epochs != 1:
        options["n_runs"] = o.epochs
    config["languages"] = languages
    options["config"] = config
    return _spec_update(task, task_options=options)


def apply_one(task: Task, o: RunOverrides, chat: bool | None = None) -> tuple[Task, set[str]]:
    """The task with the overrides that apply to it, and the names of those that did not."""
    skipped: set[str] = set()
    if task.dialect == "seahelm":
        return _seahelm(task, o), skipped
    if task.dialect == "lm-eval":  # lm-eval's own task objects build the prompts and generation settings
        given = [flag for flag, on in (("--num-fewshot", o.num_fewshot is not None), ("--gen-kwargs/--seed", bool(o.gen_kwargs) or o.seed is not None),
                                       ("--epochs", o.epochs != 1), ("--system-prompt", o.system_prompt is not None),
                                       ("--fewshot-as-multiturn", o.fewshot_as_multiturn is not None)) if on]
        if given:
            raise ProctorError(f"{given[0]} is not applied to lm-evaluation-harness tasks yet (task '{task.name}'): set "
                               "num_fewshot / generation_kwargs / repeats in the task YAML instead")
        return task, skipped
    spec = task.spec
    where = f"task '{task.name}' ({task.dialect})"
    changes: dict[str, Any] = {}
    if o.num_fewshot is not None:
        if task.dialect == "probsem" or spec.kind == "perplexity" or spec.task_class:
            raise ProctorError(f"--num-fewshot has no meaning for {where}: its prompts carry no few-shot examples to draw")
        base = spec.fewshot.model_dump() if spec.fewshot else {}
        changes["fewshot"] = FewShotSpec(**{**base, "count": o.num_fewshot})
    generation = _generation(task, o)
    if generation is not None or o.epochs != 1:
        if task.dialect == "probsem" or spec.kind != "generate":
            skipped.update(k for k, on in (("--gen-kwargs/--seed", generation is not None), ("--epochs", o.epochs != 1)) if on)
        elif spec.task_class and o.epochs != 1:
            raise ProctorError(f"--epochs has no meaning for {where}: its task class ({spec.task_class}) makes its own requests")
        if generation is not None and spec.kind == "generate":
            changes["generation"] = generation
    if o.system_prompt is not None or o.fewshot_as_multiturn is not None:
        if task.dialect == "probsem":
            raise ProctorError(f"--system-prompt / --fewshot-as-multiturn have no meaning for {where}: its prompt files are scored as written")
        chat_on = _uses_chat(task, chat)
        base = spec.chat.model_dump() if spec.chat else {"enabled": False}
        if o.fewshot_as_multiturn is not None:
            if not chat_on:
                raise ProctorError(f"--fewshot-as-multiturn needs the chat template ({where} runs without it; add --chat-template on)")
            base["fewshot_as_turns"] = o.fewshot_as_multiturn
        if o.system_prompt is not None:
            base["system"] = o.system_prompt
            if not chat_on:  # plain text: the system prompt starts the prompt (prompts/builder)
                base["enabled"] = False
        changes["chat"] = ChatSpec(**base)
    return (_spec_update(task, **changes) if changes else task), skipped


def apply_overrides(tasks: Sequence[Task], o: RunOverrides, chat: bool | None = None) -> list[Task]:
    """Every task with its overrides; an override that no selected task can take is an error."""
    out, skipped_by = [], []
    for task in tasks:
        new, skipped = apply_one(task, o, chat)
        out.append(new)
        skipped_by.append(skipped)
    for flag in ("--gen-kwargs/--seed", "--epochs"):
        if tasks and all(flag in s for s in skipped_by):
            names = ", ".join(t.name for t in tasks[:5])
            raise ProctorError(f"{flag} has no meaning for the selected tasks ({names}): none of them generates text")
    return out


def epochs_of(task: Task, o: RunOverrides) -> int:
    """Repeats the engine runs for this task (SEA-HELM runs its own seeded runs instead)."""
    if o.epochs == 1 or task.dialect in ("seahelm", "probsem") or task.spec.kind != "generate" or task.spec.task_class:
        return 1
    return o.epochs
