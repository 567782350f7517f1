"""SEA-HELM task folders (``seahelm_tasks/<competency>/<task>/config.yaml``), declared: names, options
(``options``) and which paths are SEA-HELM's (``claims``: a ``seahelm_tasks`` tree; or a ``config.yaml`` the
dialect then reads).

A leaf that imports only ``core`` (and those two leaves): ``dialect`` is imported when a path is claimed, the other
modules of the dialect when what they hold is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Protocol

from proctor.core.audit import AuditRule, dialect_check
from proctor.core.contributions import Registry
from proctor.core.dialect import Dialect
from proctor.core.references import resolve
from proctor.dialects.seahelm.claims import in_tree, tasks_root
from proctor.dialects.seahelm.options import SeaHelmOptions, served_judge

if TYPE_CHECKING:  # names for annotations only (core and the dialect's own leaves, as the declaration imports)
    from proctor.core.run_overrides import RunOverrides
    from proctor.core.task import Task


class SeaHelmDialect(Dialect[SeaHelmOptions]):
    name = "seahelm"
    title = "SEA-HELM"
    order = 20
    Options = SeaHelmOptions
    engine_epochs = False

    def claims_path(self, path: Path) -> bool:
        if tasks_root(path) is not None:
            return True
        return path.name == "config.yaml" and resolve("proctor.dialects.seahelm.dialect:claims_config")(path)

    def load(
        self, path: Path, document: object, explicit: bool, options: SeaHelmOptions, notes: list[str]
    ) -> list[Task]:
        tasks: list[Task] = resolve("proctor.dialects.seahelm.dialect:load")(path, explicit, options, notes)
        return tasks

    def options_for(self, options: SeaHelmOptions, given: Path) -> SeaHelmOptions:
        if options.seahelm_judge is None and options._judge_source is None and not in_tree(given):
            return options  # nothing to add
        with_given_path = resolve("proctor.dialects.seahelm.dialect:with_given_path")
        with_judge = resolve("proctor.dialects.seahelm.dialect:with_judge")
        given_options: SeaHelmOptions = with_judge(with_given_path(options, given))
        return given_options

    def uses_server_options(self, raw: Mapping[str, object]) -> bool:
        return served_judge(str(raw.get("seahelm_judge") or ""))

    def apply_overrides(self, task: Task, overrides: RunOverrides, chat: bool | None) -> tuple[Task, set[str]]:
        return resolve("proctor.dialects.seahelm.config_overrides:apply_seahelm_overrides")(task, overrides), set()


class _RollupRule(Protocol):
    """What the roll-up asks of ``dialects/seahelm/lindsea.LindseaRule`` (named by its shape: a declaration imports
    only core and its leaves, for type checking too)."""

    def member_key(self, name: str, result: dict[str, object], level_names: list[str]) -> str | None: ...

    def apply(self, entry: dict[str, object], tasks: dict[str, dict[str, object]]) -> None: ...


class _LindseaRule:
    """``dialects/seahelm/lindsea.LindseaRule``, imported when a SEA-HELM result is rolled up."""

    def _rule(self) -> _RollupRule:
        rule: _RollupRule = resolve("proctor.dialects.seahelm.lindsea:LindseaRule")()
        return rule

    # a task's result and a roll-up node are ``proctor.scoring``'s TaskEntry and RollupNode (JSON mappings), named
    # here by their shape: the declaration imports only core
    def member_key(self, name: str, result: dict[str, object], level_names: list[str]) -> str | None:
        if "competency" not in level_names or result.get("dialect", "seahelm") != "seahelm":
            return None
        return self._rule().member_key(name, result, level_names)

    def apply(self, entry: dict[str, object], tasks: dict[str, dict[str, object]]) -> None:
        self._rule().apply(entry, tasks)


def register(registry: Registry) -> None:
    registry.add_dialect(SeaHelmDialect())
    registry.add_audit_rule(
        AuditRule(
            "seahelm.examples-are-evaluated",
            "warning",
            "The few-shot examples SEA-HELM shows a base model (its examples split) are evaluated rows.",
            dialect_check("seahelm", "proctor.dialects.seahelm.audit_rules:examples_are_evaluated"),
        )
    )
    registry.add_audit_rule(
        AuditRule(
            "seahelm.examples-too-few",
            "warning",
            "The examples file SEA-HELM shows a base model holds fewer rows than fewshot_num_examples asks for.",
            dialect_check("seahelm", "proctor.dialects.seahelm.audit_rules:examples_too_few"),
        )
    )
    registry.add_audit_rule(
        AuditRule(
            "seahelm.other-language",
            "warning",
            "Rows evaluated, or few-shot examples shown, under a language say they are in another "
            "(metadata.language).",
            dialect_check("seahelm", "proctor.dialects.seahelm.row_rules:rows_in_another_language"),
        )
    )
    registry.add_audit_rule(
        AuditRule(
            "seahelm.ids-repeated",
            "warning",
            "Two rows of a SEA-HELM task have one id: SEA-HELM joins answers to rows by id.",
            dialect_check("seahelm", "proctor.dialects.seahelm.row_rules:repeated_ids"),
        )
    )
    registry.add_audit_rule(
        AuditRule(
            "seahelm.examples-outnumber-rows",
            "warning",
            "The examples split holds more rows than the split evaluated: the two files swapped?",
            dialect_check("seahelm", "proctor.dialects.seahelm.row_rules:examples_outnumber_rows"),
        )
    )
    registry.add_task_handler(
        "seahelm.task",
        "proctor.dialects.seahelm.task:SeaHelmTask",
        "proctor.dialects.seahelm.task_options:SeaHelmTaskOptions",
    )
    registry.add_rollup_rule(_LindseaRule())
