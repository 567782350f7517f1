"""The built-in audit rules, in the order the stage runs them and ``docs/audit.md`` lists them."""

from __future__ import annotations

from proctor.audit import (
    alias_rules,
    choice_rules,
    coercion_rules,
    condition_rules,
    cut_rules,
    data_rules,
    escape_rules,
    example_rules,
    extraction_rules,
    field_pairs,
    field_rules,
    form_rules,
    generation_rules,
    label_rules,
    leak_rules,
    metric_rules,
    model_rules,
    order_rules,
    placeholder_rules,
    repr_rules,
    run_rules,
    setting_rules,
    target_rules,
    unwritable_rules,
)
from proctor.core.audit import AuditRule

BUILTIN_RULES: tuple[AuditRule, ...] = (
    *choice_rules.RULES,
    *target_rules.RULES,
    *coercion_rules.RULES,
    *alias_rules.RULES,
    *unwritable_rules.RULES,
    *leak_rules.RULES,
    *data_rules.RULES,
    *generation_rules.RULES,
    *extraction_rules.RULES,
    *escape_rules.RULES,
    *label_rules.RULES,
    *order_rules.RULES,
    *form_rules.RULES,
    *example_rules.RULES,
    *repr_rules.RULES,
    *placeholder_rules.RULES,
    *cut_rules.RULES,
    *field_rules.RULES,
    *condition_rules.RULES,
    *field_pairs.RULES,
    *setting_rules.RULES,
    *metric_rules.RULES,
    *run_rules.RULES,
    *model_rules.RULES,  # once the model has loaded (proctor run)
)
