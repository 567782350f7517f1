"""SEA-HELM task folders (``seahelm_tasks/<competency>/<task>/config.yaml``) as a dialect plug-in.

The declaration: names, options and which paths are SEA-HELM's (a ``seahelm_tasks`` tree, or a
``config.yaml`` the dialect then reads); ``proctor.dialects.seahelm`` is imported when a path is claimed.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Annotated, Any, List, Mapping, Optional, Union

from pydantic import ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from proctor.core.audit import AuditRule
from proctor.core.dialect import EVERY_COMMAND, BaseOptions, Dialect, OptionContext, OptionError, cli, id_path_mapping
from proctor.core.registry import Registry, backend_of
from proctor.models.base import Model

_RUN_LS = frozenset({"run", "ls"})
TASKS_FOLDER = "seahelm_tasks"


def served_judge(judge: str) -> bool:
    """A judge model served over HTTP (``openai:NAME``): the one kind that takes --judge-base-url and the like."""
    backend = backend_of(judge)
    return backend is not None and backend.server


def _dialect() -> Any:
    return importlib.import_module("proctor.dialects.seahelm.dialect")


def tasks_root(path: Path) -> Path | None:
    """The ``seahelm_tasks`` folder containing ``path`` (or ``path`` itself), else None."""
    path = path.resolve()
    for folder in [path, *path.parents]:
        if folder.name == TASKS_FOLDER:
            return folder
    return None


def in_tree(given: Path) -> bool:
    """Whether ``given`` (a path the user named) is a folder in or holding a SEA-HELM task tree."""
    return not given.is_file() and (tasks_root(given) is not None or (given / TASKS_FOLDER).is_dir())


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
        Optional[Union[str, Model]],
        cli(
            "--seahelm-judge",
            type=Optional[str],
            metavar="MODEL",
            help="SEA-HELM: the judge model (as --model, e.g. openai:NAME; default: the evaluated model).",
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
    # a dialects.seahelm.judge_step.JudgeSource, shared by the files loaded together; a declaration imports
    # no dialect module, not even for its type (the layers contract)
    _judge_source: Any = PrivateAttr(None)
    _given: Optional[str] = PrivateAttr(None)

    @model_validator(mode="before")
    @classmethod
    def _from_command_line(cls, data: Any, info: ValidationInfo) -> Any:
        """The command line's judge flags, model kind and judge max_tokens as the fields they give."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        base_url, key_env, judge_arg = (
            data.pop(key, None) for key in ("judge_base_url", "judge_api_key_env", "judge_arg")
        )
        base, instruct = data.pop("base_model", False), data.pop("instruct_model", False)
        judge_max_tokens = data.pop("seahelm_judge_max_tokens", None)
        openai_judge = served_judge(str(data.get("seahelm_judge") or ""))
        for flag, value in (("--judge-base-url", base_url), ("--judge-api-key-env", key_env)):
            if value and not openai_judge:
                raise OptionError(flag, "applies to an openai: --seahelm-judge only; it would be ignored")
        if judge_arg and not openai_judge:
            raise OptionError("--judge-arg", "applies to an openai: --seahelm-judge only")
        if judge_max_tokens:
            data["seahelm_judge_generation"] = {"max_tokens": judge_max_tokens}
        context = (
            info.context if isinstance(info.context, OptionContext) else None
        )  # the command line's, when parsed from it
        if openai_judge and context is not None:
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

    @field_validator("seahelm_data", mode="before")
    @classmethod
    def _data_map(cls, value: Any) -> Any:
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


class SeaHelmDialect(Dialect[SeaHelmOptions]):
    name = "seahelm"
    title = "SEA-HELM"
    order = 20
    Options = SeaHelmOptions
    engine_epochs = False

    def claims_path(self, path: Path) -> bool:
        if tasks_root(path) is not None:
            return True
        return path.name == "config.yaml" and _dialect().claims_config(path)

    def load(self, path: Path, document: Any, explicit: bool, options: SeaHelmOptions, notes: list[str]) -> list:
        return _dialect().load(path, explicit, options, notes)

    def options_for(self, options: SeaHelmOptions, given: Path) -> SeaHelmOptions:
        if options.seahelm_judge is None and options._judge_source is None and not in_tree(given):
            return options  # nothing to add
        dialect = _dialect()
        return dialect.with_judge(dialect.with_given_path(options, given))

    def uses_server_options(self, raw: Mapping[str, Any]) -> bool:
        return served_judge(str(raw.get("seahelm_judge") or ""))

    def apply_overrides(self, task: Any, overrides: Any, chat: bool | None) -> Any:
        overrides_module = importlib.import_module("proctor.dialects.seahelm.config_overrides")
        return overrides_module.apply_seahelm_overrides(task, overrides), set()


class _LindseaRule:
    """``dialects/seahelm/lindsea.LindseaRule``, imported when a SEA-HELM result is rolled up."""

    def _rule(self) -> Any:
        return importlib.import_module("proctor.dialects.seahelm.lindsea").LindseaRule()

    def member_key(self, name: str, result: dict, level_names: list[str]) -> str | None:
        if "competency" not in level_names or result.get("dialect", "seahelm") != "seahelm":
            return None
        return self._rule().member_key(name, result, level_names)

    def apply(self, entry: dict, tasks: dict[str, dict]) -> None:
        self._rule().apply(entry, tasks)


def _audit_examples(subject: Any) -> Any:
    """The dialect's audit rule, imported only for a SEA-HELM task (a native run imports no dialect but its own)."""
    if subject.task.dialect != "seahelm":
        return ()
    return importlib.import_module("proctor.dialects.seahelm.audit_rules").examples_are_evaluated(subject)


def register(registry: Registry) -> None:
    registry.add_dialect(SeaHelmDialect())
    registry.add_audit_rule(
        AuditRule(
            "seahelm.examples-are-evaluated",
            "warning",
            "The few-shot examples SEA-HELM shows a base model (its examples split) are evaluated rows.",
            _audit_examples,
        )
    )
    registry.add_task_handler(
        "seahelm.task",
        "proctor.dialects.seahelm.task:SeaHelmTask",
        "proctor.dialects.seahelm.task_options:SeaHelmTaskOptions",
    )
    registry.add_rollup_rule(_LindseaRule())
