"""lm-evaluation-harness task files (and its installed catalogue, ``lm_eval:NAME``) as a dialect plug-in.

The declaration: names, options and which files are lm-eval's (read here, without importing the
dialect); ``proctor.dialects.lmeval`` is imported when a file or name is claimed.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, List, Optional

from pydantic import Field, StrictInt, field_validator

from proctor.core.audit import AuditRule
from proctor.core.dialect import EVERY_COMMAND, BaseOptions, Dialect, cli, id_path_mapping
from proctor.core.registry import Registry

PREFIX = "lm_eval:"


def _dialect() -> ModuleType:
    return importlib.import_module("proctor.dialects.lmeval")


def peek(path: Path) -> Any:
    """The YAML document with ``!function`` tags read as text (no code runs), or None."""
    import yaml

    from proctor.core.yaml_bounds import AliasBound

    class Loader(AliasBound, yaml.SafeLoader):  # an alias bomb: None here, and discovery's reader says so
        pass

    def function_tag(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
        return f"!function {loader.construct_scalar(node)}"

    Loader.add_constructor("!function", function_tag)
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)  # noqa: S506 - SafeLoader subclass
    except (yaml.YAMLError, OSError, UnicodeDecodeError, RecursionError):  # not its file: the owner's reader says why
        return None


def looks_like(document: Any) -> bool:
    """lm-eval's task and group files: ``task`` or ``group`` (native files use ``kind`` / ``tasks``,
    GLM-130B files ``name`` + ``type``)."""
    if not isinstance(document, dict) or "kind" in document or "tasks" in document:
        return False
    if "name" in document and "type" in document:
        return False
    return "task" in document or "group" in document


def claims_path(path: Path) -> bool:
    return path.suffix in (".yaml", ".yml") and looks_like(peek(path))


def claims_name(text: str) -> bool:
    return str(text).startswith(PREFIX)


def is_catalogue_query(text: str) -> bool:
    """``lm_eval:`` alone or with a glob (``lm_eval:mmlu*``): list the catalogue, load nothing."""
    return claims_name(text) and (text == PREFIX or any(c in text[len(PREFIX) :] for c in "*?["))


class LmEvalOptions(BaseOptions):
    lmeval_data: Annotated[
        Optional[dict[str, str]],
        cli(
            "--lmeval-data",
            type=Optional[List[str]],
            metavar="ID=PATH",
            commands=EVERY_COMMAND,
            help="lm-eval tasks: ID[:CONFIG[:SPLIT]]=PATH, a local copy of a hub "
            "dataset (repeatable; see docs/lmeval.md).",
        ),
    ] = None
    lmeval_data_file: Annotated[
        Optional[str],
        cli(
            "--lmeval-data-file",
            type=Optional[Path],
            metavar="FILE",
            commands=EVERY_COMMAND,
            help="lm-eval tasks: a YAML/JSON file of ID[:CONFIG[:SPLIT]]: PATH entries.",
        ),
    ] = None
    lmeval_include: Annotated[
        Optional[List[str]],
        cli(
            "--lmeval-include",
            type=Optional[List[Path]],
            metavar="DIR",
            commands=EVERY_COMMAND,
            help="lm-eval tasks: a folder of task YAMLs searched for lm_eval:NAME besides "
            "the installed catalogue (repeatable).",
        ),
    ] = None
    lmeval_bootstrap_iters: Annotated[
        Optional[StrictInt],
        cli(
            "--bootstrap-iters",
            type=Optional[int],
            metavar="N",
            help="lm-eval tasks: bootstrap resamples for the standard errors of corpus metrics "
            "(lm-eval's default 100000; 0: no standard errors).",
        ),
    ] = Field(default=None, ge=0)
    lmeval_metadata: Annotated[
        Optional[dict[str, Any]],
        cli(
            "--metadata",
            type=Optional[str],
            metavar="JSON",
            commands=EVERY_COMMAND,
            help="lm-eval tasks: a JSON object merged into every task's metadata, as lm-eval's --metadata "
            "(e.g. '{\"max_seq_lengths\": [4096]}').",
        ),
    ] = None

    @field_validator("lmeval_data", mode="before")
    @classmethod
    def _data_map(cls, value: Any) -> Any:
        return id_path_mapping(value, "--lmeval-data", "ID[:CONFIG[:SPLIT]]=PATH")

    @field_validator("lmeval_metadata", mode="before")
    @classmethod
    def _json_object(cls, value: Any) -> Any:
        """lm-eval's --metadata: a JSON object (its keys reach the task configs' ``metadata``)."""
        if not isinstance(value, str):
            return value
        import json

        try:
            parsed = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"takes a JSON object, e.g. '{{\"max_seq_lengths\": [4096]}}': {exc}") from None
        if not isinstance(parsed, dict):
            raise ValueError(f"takes a JSON object ({{...}}), got {type(parsed).__name__} {value!r}")
        return parsed

    @field_validator("lmeval_data_file", mode="before")
    @classmethod
    def _file_name(cls, value: Any) -> Any:
        return str(value) if isinstance(value, Path) else value

    @field_validator("lmeval_include", mode="before")
    @classmethod
    def _folder_names(cls, value: Any) -> Any:
        return [str(p) for p in value] or None if isinstance(value, (list, tuple)) else value


class LmEvalDialect(Dialect[LmEvalOptions]):
    name = "lm-eval"
    order = 30
    Options = LmEvalOptions

    def claims_name(self, given: str) -> bool:
        return claims_name(given)

    def load_named(self, given: str, options: LmEvalOptions) -> list:
        return _dialect().load_named(given, options)

    def claims_path(self, path: Path) -> bool:
        return claims_path(path)

    def load(self, path: Path, document: Any, explicit: bool, options: LmEvalOptions, notes: list[str]) -> list:
        return _dialect().load(path, explicit, options)

    def catalogue_rows(self, given: list[str], options: LmEvalOptions) -> list[tuple[str, ...]] | None:
        if not any(is_catalogue_query(g) for g in given):
            return None
        return _dialect().catalogue_rows(given, options.lmeval_include)

    def apply_overrides(self, task: Any, overrides: Any, chat: bool | None) -> Any:
        run_options = importlib.import_module("proctor.dialects.lmeval.run_options")
        return run_options.apply(task, overrides, chat)


def _resolve_metric(name: str) -> Any:
    if "," not in name:  # lm-eval's keys are metric,filter; nothing else is asked of lm-eval
        return None
    return importlib.import_module("proctor.dialects.lmeval.specs").resolve_metric(name)


def _audit_fewshot(subject: Any) -> Any:
    """The dialect's audit rule, imported only for an lm-eval task (a native run imports no dialect but its own)."""
    if subject.task.dialect != "lm-eval":
        return ()
    return importlib.import_module("proctor.dialects.lmeval.audit_rules").fewshot_from_evaluated(subject)


def register(registry: Registry) -> None:
    registry.add_dialect(LmEvalDialect())
    options = "proctor.dialects.lmeval.task_options:LmEvalTaskOptions"
    for name, handler in (
        ("choices", "LmEvalChoiceTask"),
        ("generate", "LmEvalGenerateTask"),
        ("rolling", "LmEvalRollingTask"),
    ):
        registry.add_task_handler(f"lm-eval.{name}", f"proctor.dialects.lmeval.handler:{handler}", options)
    registry.add_metric_resolver(_resolve_metric)
    registry.add_audit_rule(
        AuditRule(
            "lmeval.fewshot-from-evaluated",
            "warning",
            "An lm-eval task's few-shot pool (its fewshot_split, or the test split) holds evaluated documents.",
            _audit_fewshot,
        )
    )
