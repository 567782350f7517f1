"""The run-time overrides a user gives (``--num-fewshot``, ``--gen-kwargs``, ``--seed``, ``--epochs``, ...),
parsed and checked, and the one way a task's spec is rewritten with changes.

``engine/override_policy.py`` applies them to tasks (per dialect); dialects with rules of their own receive
a ``RunOverrides`` and rewrite their tasks with ``with_spec_changes``.
"""

from __future__ import annotations

import ast
import dataclasses
import decimal
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, overload

from pydantic import ValidationError

from proctor.core.errors import ProctorError
from proctor.core.task import OVERRIDDEN, Task
from proctor.core.task_spec import GenerationSpec

# lm-evaluation-harness's generation keyword names -> proctor's GenerationSpec fields
GEN_ALIASES = {
    "max_gen_toks": "max_tokens",
    "max_new_tokens": "max_tokens",
    "until": "stop",
    "min_new_tokens": "min_tokens",
}
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
    # reasoning models: the scored text is what follows the last of this marker (lm-eval's think_end_token)
    think_end_token: str | None = None
    # reasoning models: tokens added to every generation's max_tokens for its thinking (SEA-HELM's
    # max_think_tokens, Inspect's reasoning_tokens), so the answer keeps the budget its task gives it
    think_budget: int | None = None

    def __post_init__(self) -> None:
        if self.think_budget is not None and self.think_budget < 1:
            raise ProctorError(f"--max-thinking-tokens takes a positive count, got {self.think_budget}")
        if self.think_end_token is not None and not self.think_end_token.strip():
            raise ProctorError(
                "--think-end-token takes the text that ends a model's thinking (e.g. '</think>'), got an empty one"
            )
        if self.epochs < 1:
            raise ProctorError(f"--epochs takes a positive count, got {self.epochs}")
        reducer_k(self.epoch_reducer, self.epochs)
        if self.num_fewshot is not None and self.num_fewshot < 0:
            raise ProctorError(f"--num-fewshot takes a count >= 0, got {self.num_fewshot}")

    @classmethod
    def from_flags(
        cls,
        *,
        gen_kwargs: str | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        max_tokens: int | None = None,
        **flags: Any,
    ) -> "RunOverrides":
        """From ``proctor run``'s flags: --temperature/--top-p/--max-tokens win over the same keys in --gen-kwargs."""
        generation = parse_gen_kwargs(gen_kwargs, temperature)
        for key, value in (("temperature", temperature), ("top_p", top_p), ("max_tokens", max_tokens)):
            if value is not None:
                flag = "--" + key.replace("_", "-")
                _check_generation({key: value}, {key: flag})
                if key in generation and generation[key] != value:  # which one the user meant is theirs to say
                    raise ProctorError(
                        f"{flag} {value} and --gen-kwargs give {key} two values ({value!r} and "
                        f"{generation[key]!r}): give one of them"
                    )
                generation[key] = value
        return cls(gen_kwargs=parse_gen_kwargs(",".join(f"{k}={v!r}" for k, v in generation.items())), **flags)

    def recorded(self) -> dict[str, Any]:
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
        if self.think_end_token is not None:
            out["think_end_token"] = self.think_end_token
        if self.think_budget is not None:
            out["think_budget"] = self.think_budget
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


def _literal(text: str) -> object:
    lowered = text.strip()
    if lowered.lower() in ("true", "false"):
        return lowered.lower() == "true"
    try:
        return ast.literal_eval(lowered)
    except (ValueError, SyntaxError):
        return lowered


def parse_gen_kwargs(text: str | None, temperature_flag: float | None = None) -> dict[str, Any]:
    """``KEY=VALUE,KEY=VALUE`` (lm-eval's ``--gen_kwargs``; lm-eval's names such as max_gen_toks and
    until are accepted) -> GenerationSpec fields, checked here so a typo fails before anything loads.
    ``temperature_flag``: ``--temperature``, which a ``do_sample`` given here must agree with."""
    if not text:
        return {}
    out: dict[str, Any] = {}
    given: dict[str, str] = {}  # field -> the key as written (lm-eval's name, say)
    do_sample: object = None
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
        if name == "do_sample":  # lm-eval's switch: off means greedy; read with the temperature below
            if not isinstance(parsed, bool):
                raise ProctorError(f"--gen-kwargs do_sample takes true or false, got '{value.strip()}'")
            do_sample = parsed
            continue
        if name not in GEN_FIELDS:
            raise ProctorError(
                f"--gen-kwargs: unknown key '{key}'; known: {', '.join(GEN_FIELDS + tuple(GEN_ALIASES))}, do_sample"
            )
        out[name] = parsed
        given[name] = f"--gen-kwargs {key}" + (f" ({name})" if key != name else "")
    if do_sample is not None:
        _with_do_sample(out, do_sample, temperature_flag)
    _check_generation({k: v for k, v in out.items() if k != "do_sample"}, given)
    return out


def _samples_at(temperature: object) -> bool:
    """A temperature that samples: a number above 0 (not a boolean, which Python counts as one)."""
    return isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and temperature > 0


def _with_do_sample(out: dict[str, Any], do_sample: object, temperature_flag: float | None) -> None:
    """proctor samples exactly when the temperature is above 0, so ``do_sample`` must agree with the temperature
    given beside it: a contradiction (sampling at temperature 0, greedy at 0.7) would silently run one of the two,
    where Hugging Face refuses sampling at temperature 0. ``do_sample=true`` with no temperature given stays as
    ``do_sample`` (not a GenerationSpec field): it asks each task to sample at its own temperature, and a task whose
    temperature is 0 refuses it where the overrides meet the task (``sampling_at_own_temperature``)."""
    temperature = out.get("temperature", temperature_flag)
    hot = _samples_at(temperature)
    if do_sample is False:
        if temperature is not None and hot:
            raise ProctorError(
                f"--gen-kwargs do_sample=false with temperature={temperature!r}: false decodes greedily, which is "
                "temperature 0; give one of them"
            )
        out["temperature"] = 0.0
    elif temperature is None:  # each task's own temperature decides: checked per task (engine/override_policy)
        out["do_sample"] = True
    elif not hot:
        raise ProctorError(
            f"--gen-kwargs do_sample=true with temperature={temperature!r}: temperature 0 decodes greedily (Hugging "
            "Face refuses to sample at it); give a temperature above 0, or do_sample=false"
        )


def _check_generation(values: dict[str, Any], flags: dict[str, str]) -> None:
    """Generation settings as GenerationSpec takes them; an error names the flag (or --gen-kwargs key) given."""
    try:
        GenerationSpec(**values)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(x) for x in error["loc"])
        value = error.get("input")
        if isinstance(value, float) and value != value:
            message = "must be a number, not NaN"
        else:
            message = error["msg"].removeprefix("Value error, ")
        raise ProctorError(f"{flags.get(field, f'--gen-kwargs {field}')}: {message} (got {value!r})") from None


def parse_limit(text: str | float | int | None) -> int | float | None:
    """``--limit``: a count (>= 1) or a fraction of each task's rows (0 < x < 1), as lm-eval's."""
    if text is None:
        return None
    wrong = f"--limit takes a count or a fraction between 0 and 1, got '{text}'"
    try:  # read exactly (float('0.99999999999999999') is 1.0: one row, not nearly all of them)
        value = decimal.Decimal(str(text).strip())
    except (TypeError, ValueError, decimal.InvalidOperation):
        raise ProctorError(wrong) from None
    # a count past any float (1e400) is no number of rows, as 'inf' is none
    number = float(value) if value.is_finite() else math.inf
    if math.isinf(number) or value <= 0 or (value >= 1 and value != value.to_integral_value()):
        raise ProctorError(wrong)
    if value >= 1:
        return int(value)
    if not 0 < number < 1:
        raise ProctorError(
            f"--limit {text}: a fraction this close to 0 or 1 is not a number a float holds; give fewer digits"
        )
    return number


@overload
def limit_count(limit: None, n_rows: int) -> None: ...


@overload
def limit_count(limit: int | float, n_rows: int) -> int: ...


@overload
def limit_count(limit: int | float | None, n_rows: int) -> int | None: ...


def limit_count(limit: int | float | None, n_rows: int) -> int | None:
    """Rows kept for a limit: a fraction rounds up (lm-eval: ceil(n * limit))."""
    if limit is None:
        return None
    return int(math.ceil(n_rows * limit)) if isinstance(limit, float) and limit < 1 else int(limit)


# --------------------------------------------------------------------------- per dialect
def with_spec_changes(task: Task, **changes: object) -> Task:
    # validated again from its fields, except a handler's options: the typed model its dialect made (kept as is)
    fields = {**task.spec.model_dump(exclude={"handler"}), "handler": task.spec.handler}
    spec = type(task.spec).model_validate(
        {**fields, **{k: v if k == "handler" else _dump(v) for k, v in changes.items()}}
    )
    overridden = frozenset(task.resources.get(OVERRIDDEN, ())) | frozenset(changes)
    return dataclasses.replace(task, spec=spec, resources={**task.resources, OVERRIDDEN: overridden})


def _dump(value: object) -> object:
    return value.model_dump() if hasattr(value, "model_dump") else value


def sampling_at_own_temperature(changes: dict[str, Any], temperature: object, where: str) -> None:
    """``--gen-kwargs do_sample=true`` without a temperature (left in ``changes`` by ``parse_gen_kwargs``): the
    task samples at its own ``temperature``, which must be above 0; removed from ``changes``."""
    if changes.pop("do_sample", None) is None:
        return
    hot = _samples_at(temperature)
    if not hot:
        raise ProctorError(
            f"--gen-kwargs do_sample=true: {where} decodes greedily (its temperature is {temperature!r}), and "
            "proctor samples only above temperature 0; add temperature=1.0 (Hugging Face's default) or the one you "
            "mean"
        )
