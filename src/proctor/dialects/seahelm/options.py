"""SEA-HELM's options (``--seahelm-data``, ``--seahelm-judge`` and the judge's server settings, ``--seahelm-runs``,
...): read by the declaration (the CLI's flags) and by the dialect's modules.

A leaf that imports only ``core``, so the dialect's modules can import it without importing the declaration
(which names them).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, List, Optional, Union

from pydantic import ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from proctor.core.dialect import EVERY_COMMAND, BaseOptions, OptionContext, OptionError, cli, id_path_mapping
from proctor.core.registry import backend_of

_RUN_LS = frozenset({"run", "ls"})


def served_judge(judge: str) -> bool:
    """A judge model served over HTTP (``openai:NAME``): the one kind that takes --judge-base-url and the like."""
    backend = backend_of(judge)
    return backend is not None and backend.server


def _is_model_class(cls: type) -> bool:
    return cls.__name__ == "Model" and cls.__module__ == "proctor.models.base"


class SeaHelmOptions(BaseOptions):
    """SEA-HELM's options. The command line gives some in other shapes (``ID=PATH`` strings, the judge's
    server settings as flags of their own, two flags for the model kind); ``_from_command_line`` converts."""

    model_config = ConfigDict(arbitrary_types_allowed=True)  # a judge may be a Model object (Python API)

    seahelm_data: Annotated[
        Optional[dict[str, str]],
        cli(
            "--seahelm-data",
            type=Optional[List[str]],
            metavar="ID=PATH",
            commands=EVERY_COMMAND,
            help="SEA-HELM: DATASET_ID=PATH, a local copy of a hub dataset "
            "(repeatable); `ls` lists the mapped hub tasks.",
        ),
    ] = None
    seahelm_judge: Annotated[
        Optional[Union[str, Any]],  # a name, or a Model object: checked by ``_judge_model``
        cli(
            "--seahelm-judge",
            type=Optional[str],
            metavar="MODEL",
            help="SEA-HELM: the judge model (as --model, e.g. openai:NAME; default: the evaluated model); "
            "the same as --model-role judge=MODEL.",
        ),
    ] = None
    # an openai: judge's server settings and backend options: base_url, api_key_env, KEY=VALUE options
    seahelm_judge_options: Annotated[
        Optional[dict[str, Any]],
        cli(
            "--judge-base-url",
            name="judge_base_url",
            type=Optional[str],
            metavar="URL",
            default=None,
            help="openai judge: its server's API root (default: --base-url).",
        ),
        cli(
            "--judge-api-key-env",
            name="judge_api_key_env",
            type=Optional[str],
            metavar="NAME",
            default=None,
            help="openai judge: environment variable holding its API key (default: --api-key-env).",
        ),
        cli(
            "--judge-arg",
            name="judge_arg",
            type=Optional[List[str]],
            metavar="KEY=VALUE",
            default=None,
            help="KEY=VALUE backend option for the judge (repeatable), as --model-arg.",
        ),
    ] = None
    seahelm_runs: Annotated[
        int, cli("--seahelm-runs", metavar="N", help="SEA-HELM: seeded runs per task, bootstrapped per question.")
    ] = Field(default=1, ge=1)
    seahelm_tasks: Annotated[
        Optional[Union[str, List[str]]],
        cli(
            "--seahelm-tasks",
            type=Optional[List[str]],
            metavar="SET",
            commands=_RUN_LS,
            help="SEA-HELM: task set(s) from task_config.yaml (repeatable or comma-separated; "
            "default: seahelm; 'all': every task).",
        ),
    ] = None
    # two flags, not one --base-model/--instruct-model pair: --help shows each name whole at 80 columns
    is_base_model: Annotated[
        Optional[bool],
        cli(
            "--base-model",
            name="base_model",
            type=bool,
            default=False,
            commands=_RUN_LS,
            help="SEA-HELM: a base model (plain template, 5 shots; default: by chat template). In `ls`, leaves out the "
            "tasks SEA-HELM skips on base models.",
        ),
        cli(
            "--instruct-model",
            name="instruct_model",
            type=bool,
            default=False,
            commands=_RUN_LS,
            help="SEA-HELM: an instruct model (chat template, 0 shots; default: by chat template).",
        ),
    ] = None  # None: by the model's chat template
    reasoning: Annotated[
        bool,
        cli(
            "--reasoning-model",
            commands=_RUN_LS,
            help="SEA-HELM: add the thinking budget and strip thinking before scoring.",
        ),
    ] = False
    seahelm_max_tokens: Annotated[
        Optional[int],
        cli("--seahelm-max-tokens", metavar="N", help="SEA-HELM: cap every language's max_tokens (quick runs)."),
    ] = Field(default=None, ge=1)
    # overrides judge.judge_generation_kwargs (e.g. {"max_tokens": N})
    seahelm_judge_generation: Annotated[
        Optional[dict[str, Any]],
        cli(
            "--seahelm-judge-max-tokens",
            name="seahelm_judge_max_tokens",
            type=Optional[int],
            metavar="N",
            default=None,
            minimum=1,
            help="SEA-HELM: the judge's max_tokens (overrides judge_generation_kwargs).",
        ),
    ] = None
    seahelm_model_name: Optional[str] = (
        None  # the evaluated model (``run --model``): task-folder loaders size rows in its tokens
    )
    seahelm_strict: bool = False  # unavailable data is an error rather than a skipped task (Python API)
    # what loading shares, set by ``options_for``: one judge for every file, the path the user named
    # a dialects.seahelm.judge_step.JudgeSource, shared by the files loaded together; this leaf imports only
    # core, not even judge_step for its type (the declaration imports it on every run)
    _judge_source: Any = PrivateAttr(None)
    _given: Optional[str] = PrivateAttr(None)

    @model_validator(mode="before")
    @classmethod
    def _from_command_line(cls, data: object, info: ValidationInfo) -> object:
        """The command line's judge flags, model kind and judge max_tokens as the fields they give."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        base_url, key_env, judge_arg = (
            data.pop(key, None) for key in ("judge_base_url", "judge_api_key_env", "judge_arg")
        )
        base, instruct = data.pop("base_model", False), data.pop("instruct_model", False)
        judge_max_tokens = data.pop("seahelm_judge_max_tokens", None)
        context = (
            info.context if isinstance(info.context, OptionContext) else None
        )  # the command line's, when parsed from it
        # --seahelm-judge is --model-role judge= by its older name: one judge, which the judge flags serve
        role = (context.roles if context is not None else {}).get("judge")
        named = data.get("seahelm_judge")
        if role is not None and named is not None and named != role:
            raise OptionError(
                "--seahelm-judge",
                f"names the judge '{named}' and --model-role judge= names '{role}'; give one "
                "(--seahelm-judge MODEL is --model-role judge=MODEL)",
            )
        openai_judge = served_judge(str(named or role or ""))
        for flag, value in (("--judge-base-url", base_url), ("--judge-api-key-env", key_env)):
            if value and not openai_judge:
                raise OptionError(
                    flag,
                    "applies to an openai: judge (--model-role judge= or --seahelm-judge) only; it would be ignored",
                )
        if judge_arg and not openai_judge:
            raise OptionError(
                "--judge-arg", "applies to an openai: judge (--model-role judge= or --seahelm-judge) only"
            )
        if judge_max_tokens:
            data["seahelm_judge_generation"] = {"max_tokens": judge_max_tokens}
        # a role judge without these flags takes the run's --base-url / --api-key-env (api/model_roles.py)
        if openai_judge and context is not None and (named is not None or base_url or key_env or judge_arg):
            data["seahelm_judge_options"] = {
                "base_url": base_url or context.base_url,
                "api_key_env": key_env or context.api_key_env,
                **_model_args(judge_arg, "--judge-arg"),
            }
        if base and instruct:
            raise OptionError("--base-model", "cannot be given with --instruct-model")
        if base or instruct:
            data["is_base_model"] = bool(base)
        if context is not None and context.command == "run":
            data["seahelm_model_name"] = context.model
        return data

    @field_validator("seahelm_judge", mode="before")
    @classmethod
    def _judge_model(cls, judge: object) -> object:
        """A model name or a ``proctor.models.base.Model``, told by its class's ancestry: this leaf imports only
        ``core``, not the models layer."""
        if judge is None or isinstance(judge, str) or any(_is_model_class(c) for c in type(judge).__mro__):
            return judge
        raise ValueError(f"takes a model name or a proctor Model object, got {type(judge).__name__}")

    @field_validator("seahelm_data", mode="before")
    @classmethod
    def _data_map(cls, value: object) -> object:
        return id_path_mapping(value, "--seahelm-data", "DATASET_ID=PATH", must_exist=True)


def _model_args(items: list[str] | None, flag: str) -> dict:
    out: dict = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise OptionError(flag, f"takes KEY=VALUE, got '{item}'")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out
