"""lm-evaluation-harness task files (and its installed catalogue, ``lm_eval:NAME``), declared: names, options
(``options``) and which files are lm-eval's (``claims``, read without importing the dialect).

A leaf that imports only ``core`` (and those two leaves): ``loader`` is imported when a file or name is claimed,
the other modules of the dialect when what they hold is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from proctor.core.audit import AuditRule
from proctor.core.contributions import Registry
from proctor.core.dialect import Dialect
from proctor.core.references import resolve
from proctor.dialects.lmeval.claims import claims_name, claims_path, is_catalogue_query
from proctor.dialects.lmeval.options import LmEvalOptions


class LmEvalDialect(Dialect[LmEvalOptions]):
    name = "lm-eval"
    order = 30
    Options = LmEvalOptions

    def claims_name(self, given: str) -> bool:
        return claims_name(given)

    def load_named(self, given: str, options: LmEvalOptions) -> list:
        return resolve("proctor.dialects.lmeval.loader:load_named")(given, options)

    def claims_path(self, path: Path) -> bool:
        return claims_path(path)

    def load(self, path: Path, document: Any, explicit: bool, options: LmEvalOptions, notes: list[str]) -> list:
        return resolve("proctor.dialects.lmeval.loader:load")(path, explicit, options)

    def catalogue_rows(self, given: list[str], options: LmEvalOptions) -> list[tuple[str, ...]] | None:
        if not any(is_catalogue_query(g) for g in given):
            return None
        return resolve("proctor.dialects.lmeval.loader:catalogue_rows")(given, options.lmeval_include)

    def apply_overrides(self, task: Any, overrides: Any, chat: bool | None) -> Any:
        return resolve("proctor.dialects.lmeval.run_options:apply")(task, overrides, chat)


def _resolve_metric(name: str) -> Any:
    if "," not in name:  # lm-eval's keys are metric,filter; nothing else is asked of lm-eval
        return None
    return resolve("proctor.dialects.lmeval.specs:resolve_metric")(name)


def _audit_fewshot(subject: Any) -> Any:
    """The dialect's audit rule, imported only for an lm-eval task (a native run imports no dialect but its own)."""
    if subject.task.dialect != "lm-eval":
        return ()
    return resolve("proctor.dialects.lmeval.audit_rules:fewshot_from_evaluated")(subject)


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
