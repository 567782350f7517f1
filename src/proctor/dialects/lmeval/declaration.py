"""lm-evaluation-harness task files (and its installed catalogue, ``lm_eval:NAME``), declared: names, options
(``options``) and which files are lm-eval's (``claims``, read without importing the dialect).

A leaf that imports only ``core`` (and those two leaves): ``loader`` is imported when a file or name is claimed,
the other modules of the dialect when what they hold is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from proctor.core.audit import AuditRule, dialect_check
from proctor.core.contributions import Registry
from proctor.core.dialect import Dialect
from proctor.core.references import resolve
from proctor.dialects.lmeval.claims import claims_name, claims_path, is_catalogue_query
from proctor.dialects.lmeval.options import LmEvalOptions

if TYPE_CHECKING:
    from proctor.core.run_overrides import RunOverrides
    from proctor.core.task import Task


class LmEvalDialect(Dialect[LmEvalOptions]):
    name = "lm-eval"
    order = 30
    Options = LmEvalOptions

    def claims_name(self, given: str) -> bool:
        return claims_name(given)

    def load_named(self, given: str, options: LmEvalOptions) -> list[Task]:
        load_named: Callable[[str, LmEvalOptions], list[Task]] = resolve("proctor.dialects.lmeval.loader:load_named")
        return load_named(given, options)

    def claims_path(self, path: Path) -> bool:
        return claims_path(path)

    def load(
        self, path: Path, document: object, explicit: bool, options: LmEvalOptions, notes: list[str]
    ) -> list[Task]:
        load: Callable[[Path, bool, LmEvalOptions], list[Task]] = resolve("proctor.dialects.lmeval.loader:load")
        return load(path, explicit, options)

    def catalogue_rows(self, given: list[str], options: LmEvalOptions) -> list[tuple[str, ...]] | None:
        if not any(is_catalogue_query(g) for g in given):
            return None
        rows: Callable[[list[str], list[str] | None], list[tuple[str, ...]]] = resolve(
            "proctor.dialects.lmeval.loader:catalogue_rows"
        )
        return rows(given, options.lmeval_include)

    def apply_overrides(self, task: Task, overrides: RunOverrides, chat: bool | None) -> tuple[Task, set[str]]:
        apply: Callable[[Task, RunOverrides, bool | None], tuple[Task, set[str]]] = resolve(
            "proctor.dialects.lmeval.run_options:apply"
        )
        return apply(task, overrides, chat)


def _resolve_metric(name: str) -> object:
    """lm-eval's ``metric,filter`` key as a ``proctor.scoring.metrics.MetricDef`` (None: not one of lm-eval's)."""
    if "," not in name:  # lm-eval's keys are metric,filter; nothing else is asked of lm-eval
        return None
    return resolve("proctor.dialects.lmeval.specs:resolve_metric")(name)


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
            dialect_check("lm-eval", "proctor.dialects.lmeval.audit_rules:fewshot_from_evaluated"),
        )
    )
    registry.add_audit_rule(
        AuditRule(
            "lmeval.filter-cuts-reference",
            "warning",
            "A document's own target, written as the model's answer, scores exact_match 0 through one of the task's "
            "filters ('2,125' read as '2').",
            dialect_check("lm-eval", "proctor.dialects.lmeval.audit_rules:filter_cuts_reference"),
        )
    )
