"""SEA-HELM task folders (``seahelm_tasks/<competency>/<task>/config.yaml``) as a dialect plug-in.

The declaration: names, options and which paths are SEA-HELM's (a ``seahelm_tasks`` tree, or a
``config.yaml`` the dialect then reads); ``proctor.dialects.seahelm`` is imported when a path is claimed.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any, List, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field

from proctor.core.dialect import CliOption, Dialect, OptionContext, OptionError
from proctor.core.registry import Registry, backend_of

_RUN = frozenset({"run"})
_RUN_LS = frozenset({"run", "ls"})
_ALL = frozenset({"run", "ls", "validate"})
TASKS_FOLDER = "seahelm_tasks"
JUDGE_SOURCE = "_seahelm_judge_source"  # the options entry sharing one JudgeSource among the files loaded together


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


class SeaHelmOptions(BaseModel):
    """The options mapping's SEA-HELM entries (``seahelm_*``), as the dialect reads them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seahelm_data: Optional[dict[str, str]] = Field(None, json_schema_extra={"flag": "--seahelm-data"})
    seahelm_judge: Optional[str] = Field(None, json_schema_extra={"flag": "--seahelm-judge"})
    seahelm_judge_options: Optional[dict[str, Any]] = Field(None, json_schema_extra={"flag": "--judge-arg"})
    seahelm_judge_generation: Optional[dict[str, Any]] = Field(None, json_schema_extra={"flag": "--seahelm-judge-max-tokens"})
    seahelm_runs: int = Field(1, ge=1, json_schema_extra={"flag": "--seahelm-runs"})
    seahelm_tasks: Optional[List[str]] = Field(None, json_schema_extra={"flag": "--seahelm-tasks"})
    is_base_model: Optional[bool] = Field(None, json_schema_extra={"flag": "--base-model/--instruct-model"})
    reasoning: bool = Field(False, json_schema_extra={"flag": "--reasoning-model"})
    seahelm_max_tokens: Optional[int] = Field(None, ge=1, json_schema_extra={"flag": "--seahelm-max-tokens"})
    seahelm_model_name: Optional[str] = Field(None, json_schema_extra={"flag": "--model"})


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


class SeaHelmDialect(Dialect):
    name = "seahelm"
    title = "SEA-HELM"
    order = 20
    Options = SeaHelmOptions
    engine_epochs = False
    cli_options = (
        CliOption("seahelm_data", ("--seahelm-data",), Optional[List[str]], None,
                  "SEA-HELM: DATASET_ID=PATH, a local copy of a hub dataset (repeatable); `ls` lists the mapped hub tasks.", _ALL, metavar="ID=PATH"),
        CliOption("seahelm_judge", ("--seahelm-judge",), Optional[str], None,
                  "SEA-HELM: the judge model (as --model, e.g. openai:NAME; default: the evaluated model).", _RUN, metavar="MODEL"),
        CliOption("judge_base_url", ("--judge-base-url",), Optional[str], None,
                  "openai judge: its server's API root (default: --base-url).", _RUN, metavar="URL"),
        CliOption("judge_api_key_env", ("--judge-api-key-env",), Optional[str], None,
                  "openai judge: environment variable holding its API key (default: --api-key-env).", _RUN, metavar="NAME"),
        CliOption("judge_arg", ("--judge-arg",), Optional[List[str]], None,
                  "KEY=VALUE backend option for the judge (repeatable), as --model-arg.", _RUN, metavar="KEY=VALUE"),
        CliOption("seahelm_runs", ("--seahelm-runs",), int, 1, "SEA-HELM: seeded runs per task, bootstrapped per question.", _RUN, minimum=1, metavar="N"),
        CliOption("seahelm_tasks", ("--seahelm-tasks",), Optional[List[str]], None,
                  "SEA-HELM: task set(s) from task_config.yaml (repeatable or comma-separated; default: seahelm; 'all': every task).", _RUN_LS, metavar="SET"),
        # two flags, not one --base-model/--instruct-model pair: --help shows each name whole at 80 columns
        CliOption("base_model", ("--base-model",), bool, False,
                  "SEA-HELM: a base model (plain template, 5 shots; default: by chat template). In `ls`, leaves out the "
                  "tasks SEA-HELM skips on base models.", _RUN_LS),
        CliOption("instruct_model", ("--instruct-model",), bool, False,
                  "SEA-HELM: an instruct model (chat template, 0 shots; default: by chat template).", _RUN_LS),
        CliOption("reasoning", ("--reasoning-model",), bool, False,
                  "SEA-HELM: add the thinking budget and strip thinking before scoring.", _RUN_LS),
        CliOption("seahelm_max_tokens", ("--seahelm-max-tokens",), Optional[int], None,
                  "SEA-HELM: cap every language's max_tokens (quick runs).", _RUN, minimum=1, metavar="N"),
        CliOption("seahelm_judge_max_tokens", ("--seahelm-judge-max-tokens",), Optional[int], None,
                  "SEA-HELM: the judge's max_tokens (overrides judge_generation_kwargs).", _RUN, minimum=1, metavar="N"),
    )

    def claims_path(self, path: Path) -> bool:
        if tasks_root(path) is not None:
            return True
        return path.name == "config.yaml" and _dialect().claims_config(path)

    def load(self, path: Path, document: Any, explicit: bool, options: Mapping[str, Any], notes: list[str]) -> list:
        return _dialect().load(path, explicit, options, notes)

    def options_for(self, options: Mapping[str, Any], given: Path) -> Mapping[str, Any]:
        if options.get("seahelm_judge") is None and JUDGE_SOURCE not in options and not in_tree(given):
            return options  # nothing to add
        dialect = _dialect()
        return dialect.with_judge(dialect.with_given_path(options, given)) or {}

    def uses_server_options(self, raw: Mapping[str, Any]) -> bool:
        return served_judge(str(raw.get("seahelm_judge") or ""))

    def parse_options(self, raw: Mapping[str, Any], context: OptionContext) -> dict[str, Any]:
        judge = raw.get("seahelm_judge")
        openai_judge = served_judge(str(judge or ""))
        for flag, key in (("--judge-base-url", "judge_base_url"), ("--judge-api-key-env", "judge_api_key_env")):
            if raw.get(key) and not openai_judge:
                raise OptionError(flag, "applies to an openai: --seahelm-judge only; it would be ignored")
        if raw.get("judge_arg") and not openai_judge:
            raise OptionError("--judge-arg", "applies to an openai: --seahelm-judge only")
        out: dict[str, Any] = {}
        mapping = {}
        for item in raw.get("seahelm_data") or []:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise OptionError("--seahelm-data", f"takes DATASET_ID=PATH, got '{item}'")
            if not Path(value).expanduser().exists():
                raise OptionError("--seahelm-data", f"{key}={value}: no such file or folder {value}")
            mapping[key] = value
        if mapping:
            out["seahelm_data"] = mapping
        if raw.get("seahelm_judge_max_tokens"):
            out["seahelm_judge_generation"] = {"max_tokens": raw["seahelm_judge_max_tokens"]}
        if openai_judge:
            out["seahelm_judge_options"] = {
                "base_url": raw.get("judge_base_url") or context.base_url,
                "api_key_env": raw.get("judge_api_key_env") or context.api_key_env,
                **_model_args(raw.get("judge_arg"), "--judge-arg"),
            }
        for key, target in (("seahelm_judge", "seahelm_judge"), ("seahelm_runs", "seahelm_runs"), ("seahelm_tasks", "seahelm_tasks"),
                            ("reasoning", "reasoning"), ("seahelm_max_tokens", "seahelm_max_tokens")):
            if raw.get(key) is not None:
                out[target] = raw[key]
        if raw.get("base_model") and raw.get("instruct_model"):
            raise OptionError("--base-model", "cannot be given with --instruct-model")
        if raw.get("base_model") or raw.get("instruct_model"):
            out["is_base_model"] = bool(raw.get("base_model"))
        if context.command == "run":
            out["seahelm_model_name"] = context.model
        self.Options.model_validate(out)
        return out

    def unused_options(self, options: Mapping[str, Any]) -> list[tuple[str, Any]]:
        return [(flag, value) for flag, value in super().unused_options(options) if flag != "--model"]

    def apply_overrides(self, task: Any, overrides: Any, chat: bool | None) -> Any:
        overrides_module = importlib.import_module("proctor.dialects.seahelm.overrides")
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


def register(registry: Registry) -> None:
    registry.add_dialect(SeaHelmDialect())
    registry.add_rollup_rule(_LindseaRule())
