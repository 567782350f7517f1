"""lm-evaluation-harness task files (and its installed catalogue, ``lm_eval:NAME``) as a dialect plug-in."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field

from proctor.core.dialect import CliOption, Dialect, OptionContext, OptionError
from proctor.core.registry import Registry

_ALL = frozenset({"run", "ls", "validate"})


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
        from proctor.dialects import lmeval

        return lmeval.claims_name(given)

    def load_named(self, given: str, options: Mapping[str, Any]) -> list:
        from proctor.dialects import lmeval

        return lmeval.load_named(given, options)

    def claims_path(self, path: Path) -> bool:
        from proctor.dialects import lmeval

        return lmeval.claims_path(path)

    def load(self, path: Path, document: Any, explicit: bool, options: Mapping[str, Any], notes: list[str]) -> list:
        from proctor.dialects import lmeval

        return lmeval.load(path, explicit, options)

    def catalogue_rows(self, given: list[str], options: Mapping[str, Any]) -> list[tuple[str, ...]] | None:
        from proctor.dialects import lmeval

        if not any(lmeval.is_catalogue_query(g) for g in given):
            return None
        return lmeval.catalogue_rows(given, options.get("lmeval_include"))

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
        from proctor.dialects.lmeval import run_options

        return run_options.apply(task, overrides, chat), set()


def _resolve_metric(name: str):
    if "," not in name:  # lm-eval's keys are metric,filter; nothing else is asked of lm-eval
        return None
    from proctor.dialects.lmeval.specs import resolve_metric

    return resolve_metric(name)


def register(registry: Registry) -> None:
    registry.add_dialect(LmEvalDialect())
    registry.add_metric_resolver(_resolve_metric)
