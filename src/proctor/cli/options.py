"""Command-line values → what the API takes: variables, model options, and the options dialect
plug-ins add to ``run`` / ``ls`` / ``validate`` (the ``CliOption``s derived from each dialect's
``Options`` model, parsed by the dialect into that model)."""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import Any, Callable, List, Mapping, Optional

import typer

from proctor.core.dialect import Dialect, OptionContext, OptionError
from proctor.core.dialect_options import DialectOptions
from proctor.core.registry import registry
from proctor.models.backend_options import MODEL_FLAGS

_DIALECT_VALUES = "dialect_values"  # the keyword a decorated command receives the dialects' values under


# Enumerated options: click lists the choices in --help and refuses others with its usual message.
class DType(str, Enum):
    float32 = "float32"
    bfloat16 = "bfloat16"
    float16 = "float16"
    auto = "auto"


class ChatTemplate(str, Enum):
    auto = "auto"
    on = "on"
    off = "off"


class McFormat(str, Enum):
    auto = "auto"
    loglikelihood = "loglikelihood"
    generate = "generate"


class ExportFormat(str, Enum):
    lm_eval = "lm-eval"
    parquet = "parquet"
    duckdb = "duckdb"


def choices(enum: type[Enum]) -> str:
    """An enum's values as --help lists them: "a, b or c"."""
    values = [str(member.value) for member in enum]
    return ", ".join(values[:-1]) + " or " + values[-1]


# Choices with a number in them (cuda:N, pass@K) are checked here, in click's words for a bad choice.
DEVICES = "cpu, cuda, cuda:N, mps or auto"
_DEVICE = re.compile(r"cpu|cuda(:\d+)?|mps|auto")
_REDUCER = re.compile(r"mean|pass@\d+")


def device_option(value: str) -> str:
    if not _DEVICE.fullmatch(value):
        raise typer.BadParameter(f"'{value}' is not one of 'cpu', 'cuda', 'cuda:N', 'mps', 'auto'.")
    return value


def reducer_option(value: str) -> str:
    if not _REDUCER.fullmatch(value):
        raise typer.BadParameter(f"'{value}' is not one of 'mean', 'pass@K' (K: a number of epochs).")
    return value


def limit_option(value: Optional[str]) -> int | float | None:
    """--limit / --limit-per-part: a count (>= 1) or a fraction (0 < x < 1), as lm-eval's."""
    from proctor.core.errors import ProctorError
    from proctor.core.run_overrides import parse_limit

    try:
        limit = parse_limit(value)
    except ProctorError as exc:
        rounded = str(exc).partition(f"--limit {value}: ")[2]  # a fraction a float rounds to 0 or 1
        why = f" ({rounded})" if rounded else ""
        raise typer.BadParameter(
            f"'{value}' is neither a count (1, 2, ...) nor a fraction between 0 and 1{why}."
        ) from None
    if limit == 1 and value is not None and not value.strip().isdigit():  # 1.0, 1e0: 100%, or one row?
        raise typer.BadParameter(
            f"'{value}' reads as a count, one row (as lm-eval reads it), not the whole set: give 1 for one row, "
            "or leave --limit out to evaluate every row."
        )
    return limit


def variables_from(data_dir: Optional[Path], var: Optional[List[str]]) -> dict[str, str]:
    variables: dict[str, str] = {}
    if data_dir is not None:
        if not data_dir.is_dir():
            raise typer.BadParameter(f"no such folder: {data_dir}", param_hint="--data-dir")
        variables["PROCTOR_DATA"] = str(data_dir.resolve())
    for item in var or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"takes KEY=VALUE, got '{item}'", param_hint="--var")
        if key in variables:  # the last would win without a word
            given = "by --data-dir" if key == "PROCTOR_DATA" and data_dir is not None else "twice"
            raise typer.BadParameter(f"'{key}' is given {given}", param_hint="--var")
        variables[key] = value
    return variables


def batch_size_from(value: str) -> int | str:
    if value == "auto":
        return value
    try:
        size = int(value)
    except ValueError:
        raise typer.BadParameter(
            f"takes a positive integer or 'auto', got '{value}'", param_hint="--batch-size"
        ) from None
    if size < 1:
        raise typer.BadParameter(f"takes a positive integer or 'auto', got '{value}'", param_hint="--batch-size")
    return size


def resources_from(items: Optional[List[str]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        try:
            out[key] = float(value) if sep else 1.0
        except ValueError:
            raise typer.BadParameter(f"takes KEY=AMOUNT, got '{item}'", param_hint="--worker-resources") from None
    return out


def check_worker_flags(on_ray: bool, tensor_parallel: bool, given: Mapping[str, bool]) -> None:
    """Flags that shape Ray replicas (``given``: flag -> whether it was given) mean nothing in a run that does not go
    to Ray: refused rather than ignored. ``--gpus-per-worker`` is also a vllm model's tensor-parallel size."""
    if on_ray:
        return
    for flag, was_given in given.items():
        if was_given and not (flag == "--gpus-per-worker" and tensor_parallel):
            raise typer.BadParameter(
                "shapes Ray replicas, and this run has none: add --workers N (N > 1) or --ray-address", param_hint=flag
            )


def model_roles_from(items: Optional[List[str]]) -> dict[str, str]:
    """--model-role ROLE=MODEL strings as {role: model}, checked before anything is read (api/model_roles.py)."""
    from proctor.api.model_roles import parse_roles

    try:
        return parse_roles(items)
    except OptionError as exc:
        raise typer.BadParameter(str(exc), param_hint=exc.flag) from None


def model_args_from(items: Optional[List[str]]) -> dict[str, object]:
    """KEY=VALUE strings; values that read as JSON (numbers, true/false, null) are converted."""
    out: dict[str, object] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"takes KEY=VALUE, got '{item}'", param_hint="--model-arg")
        if key.strip() in out:  # the last would win without a word
            raise typer.BadParameter(f"'{key.strip()}' is given twice", param_hint="--model-arg")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


def think_end_token_from(flag: Optional[str], items: Optional[List[str]]) -> tuple[Optional[str], List[str]]:
    """--think-end-token, or lm-eval's spelling --model-arg think_end_token=TEXT (taken out of the model's
    arguments: the run cuts the thinking, not the backend); both given with different values is refused."""
    rest, given = [], []
    for item in items or []:
        key, sep, value = item.partition("=")
        if sep and key.strip() == "think_end_token":
            given.append(value)
        else:
            rest.append(item)
    if len(given) > 1:
        raise typer.BadParameter("'think_end_token' is given twice", param_hint="--model-arg")
    if given and flag is not None and given[0] != flag:
        raise typer.BadParameter(
            f"think_end_token={given[0]!r} differs from --think-end-token {flag!r}: give it once",
            param_hint="--model-arg",
        )
    return (flag if flag is not None else (given[0] if given else None)), rest


def thinking_budget(flag: Optional[int], inspect_spelling: Optional[int]) -> Optional[int]:
    """--max-thinking-tokens, or Inspect's spelling --reasoning-tokens; both given with different values is
    refused."""
    if flag is not None and inspect_spelling is not None and flag != inspect_spelling:
        raise typer.BadParameter(
            f"--reasoning-tokens {inspect_spelling} differs from --max-thinking-tokens {flag}: give it once",
            param_hint="--reasoning-tokens",
        )
    return flag if flag is not None else inspect_spelling


def check_model_arg_flags(
    model_args: Mapping[str, object], command: Callable[..., object], flags: Mapping[str, object]
) -> None:
    """A --model-arg key that a flag of ``command`` also sets, the flag given a value other than its default: one of
    the two would be dropped without a word."""
    parameters = inspect.signature(command).parameters
    for key, value in flags.items():
        if key in model_args and value != getattr(parameters[key].default, "default", None):
            raise typer.BadParameter(
                f"'{key}' is also given by {MODEL_FLAGS[key]}: give it once", param_hint="--model-arg"
            )


def load_plugins(plugins: Optional[List[Path]]) -> None:
    """``--plugin FILE``: each file loaded as an installed plug-in is (engine/plugin_loading.py)."""
    from proctor.engine.plugin_loading import load_plugin_files

    load_plugin_files(plugins or [])


def with_dialect_options(command: str) -> Callable[[Callable[..., object]], Callable[..., object]]:
    """Add every registered dialect's options for ``command`` to a Typer command function.

    The function takes ``dialect_values`` (a dict by ``CliOption.name``) instead of one parameter per option;
    Typer sees the options through the wrapper's signature."""

    def decorate(fn: Callable[..., object]) -> Callable[..., object]:
        signature = inspect.signature(fn)
        own = [p for p in signature.parameters.values() if p.name != _DIALECT_VALUES]
        taken = {p.name for p in own}
        added: list[inspect.Parameter] = []
        annotations = dict(typing_hints(fn))
        annotations.pop(_DIALECT_VALUES, None)
        for dialect in registry().ordered_dialects():
            for option in dialect.cli_options:
                if command not in option.commands:
                    continue
                if option.name in taken:
                    raise RuntimeError(f"dialect '{dialect.name}': option name '{option.name}' is taken")
                taken.add(option.name)
                panel = f"{dialect.title or dialect.name} tasks"
                default = typer.Option(
                    option.default,
                    *option.flags,
                    help=option.help,
                    rich_help_panel=panel,
                    min=option.minimum,
                    metavar=option.metavar or None,
                )  # None: typer's defaults
                added.append(
                    inspect.Parameter(
                        option.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=option.annotation
                    )
                )
                annotations[option.name] = option.annotation
        names = {p.name for p in added}

        def command_fn(**kwargs: Any) -> object:
            values = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
            return fn(**kwargs, **{_DIALECT_VALUES: values})

        command_fn.__name__ = fn.__name__
        command_fn.__doc__ = fn.__doc__
        command_fn.__module__ = fn.__module__
        params = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=annotations.get(p.name, p.annotation))
            for p in own
        ] + added
        command_fn.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        command_fn.__annotations__ = annotations
        return command_fn

    return decorate


def typing_hints(fn: Callable[..., object]) -> dict[str, object]:
    import typing

    return typing.get_type_hints(fn)


def dialect_options(
    values: Mapping[str, object], context: OptionContext, trust_task_code: bool = False
) -> DialectOptions:
    """The options the dialects load with: each dialect parses its own command-line values into its ``Options``."""
    context = replace(context, trust_task_code=trust_task_code)
    options = {}
    for dialect in registry().ordered_dialects():
        try:
            options[dialect.name] = dialect.parse_options(_values_of(dialect, values), context)
        except OptionError as exc:
            raise typer.BadParameter(str(exc), param_hint=exc.flag) from None
    return DialectOptions(options)


def uses_server_options(values: Mapping[str, object]) -> bool:
    """Whether a dialect's values use --base-url / --api-key-env (an openai: judge, say)."""
    return any(dialect.uses_server_options(_values_of(dialect, values)) for dialect in registry().ordered_dialects())


def _values_of(dialect: Dialect[Any], values: Mapping[str, object]) -> dict[str, object]:
    """The command-line values of one dialect's options."""
    return {o.name: values[o.name] for o in dialect.cli_options if o.name in values}
