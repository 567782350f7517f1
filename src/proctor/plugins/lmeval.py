"""lm-evaluation-harness task files (and its installed catalogue, ``lm_eval:NAME``) as a dialect plug-in.

The declaration: names, options and which files are lm-eval's (read here, without importing the
dialect); ``proctor.dialects.lmeval`` is imported when a file or name is claimed.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any, List, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field

from proctor.core.dialect import CliOption, Dialect, OptionContext, OptionError
from proctor.core.registry import Registry

_ALL = frozenset({"run", "ls", "validate"})
PREFIX = "lm_eval:"


def _dialect() -> ModuleType:
    return importlib.import_module("proctor.dialects.lmeval")


def peek(path: Path) -> Any:
    """The YAML document with ``!function`` tags read as text (no code runs), or None."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def function_tag(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
        return f"!function {loader.construct_scalar(node)}"

    Loader.add_constructor("!function", function_tag)
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)  # noqa: S506 - SafeLoader subclass
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
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
    return claims_name(text) and (text == PREFIX or any(c in text[len(PREFIX):] for c in "*?["))


class LmEvalOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    lmeval_data: Optional[dict[str, str]] = Field(None, json_schema_extra={"flag": "--lmeval-data"})
    lmeval_data_file: Optional[str] = Field(None, json_schema_extra={"flag": "--lmeval-data-file"})
    lmeval_include: Optional[List[str]] = Field(None, json_schema_extra={"flag": "--lmeval-include"})
    lmeval_bootstrap_iters: Optional[int] = Field(None, ge=0, json_schema_extra={"flag": "--bootstrap-iters"})


class LmEvalDialect(Dialect):
    name = "lm-eval"
    order = 30
    Options = LmEvalOptions
    cli_options = (
        CliOption("lmeval_data", ("--lmeval-data",), Optional[List[str]], None,
                  "lm-eval tasks: ID[:CONFIG[:SPLIT]]=PATH, a local copy of a hub dataset (repeatable; see docs/lmeval.md).", _ALL, metavar="ID=PATH"),
        CliOption("lmeval_data_file", ("--lmeval-data-file",), Optional[Path], None,
                  "lm-eval tasks: a YAML/JSON file of ID[:CONFIG[:SPLIT]]: PATH entries.", _ALL, metavar="FILE"),
        CliOption("lmeval_include", ("--lmeval-include",), Optional[List[Path]], None,
                  "lm-eval tasks: a folder of task YAMLs searched for lm_eval:NAME besides the installed catalogue (repeatable).", _ALL, metavar="DIR"),
        CliOption("bootstrap_iters", ("--bootstrap-iters",), Optional[int], None,
                  "lm-eval tasks: bootstrap resamples for the standard errors of corpus metrics (lm-eval's default 100000; "
                  "0: no standard errors).", frozenset({"run"}), minimum=0, metavar="N"),
    )

    def claims_name(self, given: str) -> bool:
        return claims_name(given)

    def load_named(self, given: str, options: Mapping[str, Any]) -> list:
        return _dialect().load_named(given, options)

    def claims_path(self, path: Path) -> bool:
        return claims_path(path)

    def load(self, path: Path, document: Any, explicit: bool, options: Mapping[str, Any], notes: list[str]) -> list:
        return _dialect().load(path, explicit, options)

    def catalogue_rows(self, given: list[str], options: Mapping[str, Any]) -> list[tuple[str, ...]] | None:
        if not any(is_catalogue_query(g) for g in given):
            return None
        return _dialect().catalogue_rows(given, options.get("lmeval_include"))

    def parse_options(self, raw: Mapping[str, Any], context: OptionContext) -> dict[str, Any]:
        mapping = {}
        for item in raw.get("lmeval_data") or []:
            key, sep, value = item.partition("=")
            if not sep or not key or not value:
                raise OptionError("--lmeval-data", f"--lmeval-data takes ID[:CONFIG[:SPLIT]]=PATH, got '{item}'")
            mapping[key] = value
        data_file, include = raw.get("lmeval_data_file"), raw.get("lmeval_include")
        out = {"lmeval_data": mapping or None, "lmeval_data_file": str(data_file) if data_file else None,
               "lmeval_include": [str(p) for p in include] if include else None,
               "lmeval_bootstrap_iters": raw.get("bootstrap_iters")}
        out = {k: v for k, v in out.items() if v is not None}
        self.Options.model_validate(out)
        return out

    def apply_overrides(self, task: Any, overrides: Any, chat: bool | None) -> Any:
        run_options = importlib.import_module("proctor.dialects.lmeval.run_options")
        return run_options.apply(task, overrides, chat), set()


def _resolve_metric(name: str) -> Any:
    if "," not in name:  # lm-eval's keys are metric,filter; nothing else is asked of lm-eval
        return None
    return importlib.import_module("proctor.dialects.lmeval.specs").resolve_metric(name)


def register(registry: Registry) -> None:
    registry.add_dialect(LmEvalDialect())
    registry.add_metric_resolver(_resolve_metric)
