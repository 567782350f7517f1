"""The audit stage: every rule run over a prepared task, before any model loads.

``proctor validate`` and ``proctor run`` both call it (through ``engine/prepare``). A rule's hits become one
finding per rule and task (the first place named, the others counted). A finding the task file silences
(``audit: {silence: [{rule, reason}]}``) is kept, with its reason, and neither warns nor stops the run; an
error, or with ``strict`` any finding, stops the task with the finding's file, row and field.
"""

from __future__ import annotations

import gc
from typing import Iterable, Iterator

from proctor.audit.model_rules import ModelSubject
from proctor.audit.rules import BUILTIN_RULES
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Finding, Hit, Severity
from proctor.core.errors import ProctorError, TaskDefinitionError
from proctor.core.registrations import defined_in
from proctor.core.user_errors import call_user


def all_rules() -> tuple[AuditRule, ...]:
    """The built-in rules, then those plug-ins registered (``Registry.add_audit_rule``)."""
    from proctor.core.registry import registry

    builtin = {rule.id: rule for rule in BUILTIN_RULES}
    added = tuple(registry().audit_rules.values())
    for rule in added:  # one id, one rule: a task silencing it, and results.json, could not tell whose it is
        if rule.id in builtin:
            registry().audit_rules.pop(rule.id)  # refused: not left for the next command of this process
            raise ProctorError(
                f"{_origin(rule)} registers the audit rule '{rule.id}', which proctor's built-in rule of that id "
                f"({builtin[rule.id].check.__module__}) already is: give the rule an id of its own"
            )
    return BUILTIN_RULES + added


def _origin(rule: AuditRule) -> str:
    """Who registered a plug-in's rule (its ``--plugin`` file, declaration or entry point), else its check's file."""
    from proctor.core.registry import registry

    found = registry().origins.get("audit rule", {}).get(rule.id)
    return found.shown if found is not None else (defined_in(rule.check) or "a plug-in")


def _hits(rule: AuditRule, found: Iterable[object]) -> Iterator[Hit]:
    """A plug-in rule's hits, each checked to be a ``Hit`` (else an error naming the rule and who registered it)."""
    for hit in found:
        if not isinstance(hit, Hit):
            raise ProctorError(
                f"audit rule '{rule.id}' ({_origin(rule)}) yielded {_shown(hit)}, not a proctor.core.audit.Hit: "
                "a rule yields Hit(message, file=..., row=..., field=...) for each place it finds"
            )
        yield hit


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_silenced(subject: AuditSubject | ModelSubject, known: set[str]) -> None:
    spec = subject.spec.audit
    for item in spec.silence if spec else ():
        if item.rule not in known:
            from proctor.core.names import close_names

            near = close_names(item.rule, sorted(known))
            hint = f" (did you mean {', '.join(near)}?)" if near else f"; the rules: {', '.join(sorted(known))}"
            raise TaskDefinitionError(
                f"silences the audit rule '{item.rule}', which no rule has{hint}",
                file=subject.file,
                line=subject.line("audit"),
                field="audit.silence",
            )


def audit(subject: AuditSubject, *, strict: bool = False) -> tuple[Finding, ...]:
    """Each rule's finding for this task; raises the first error (every finding, with ``strict``) that the
    task does not silence, naming its place and listing the others. The rules of the "model" stage wait for
    ``audit_with_model``."""
    every = all_rules()
    _check_silenced(subject, {rule.id for rule in every})
    rules = tuple(rule for rule in every if rule.stage == "task")
    # the rules make many small lists, none in a cycle: the cyclic collector would walk the whole prepared task
    # (100,000 samples) again and again meanwhile
    collecting = gc.isenabled()
    gc.disable()
    try:
        findings = _findings(subject, rules, strict)
    finally:
        subject.forget_columns()
        if collecting:
            gc.enable()
    _stop_on_errors(findings, strict)
    return tuple(findings)


def audit_with_model(subject: ModelSubject, *, strict: bool = False) -> tuple[Finding, ...]:
    """The "model" stage's findings for a task about to run on ``subject.model`` (its silences were checked
    before the model loaded), stopping as ``audit`` does."""
    rules = tuple(rule for rule in all_rules() if rule.stage == "model")
    findings = _findings(subject, rules, strict)
    _stop_on_errors(findings, strict)
    return tuple(findings)


def _findings(subject: AuditSubject | ModelSubject, rules: tuple[AuditRule, ...], strict: bool) -> list[Finding]:
    findings: list[Finding] = []
    for rule in rules:
        first = None
        count = 0
        builtin = rule in BUILTIN_RULES
        hits = (
            rule.check(subject)
            if builtin
            else call_user(lambda rule=rule: list(_hits(rule, rule.check(subject))), f"audit rule '{rule.id}'")
        )
        for hit in hits:
            first = first or hit
            count += 1
        if first is None:
            continue
        severity: Severity = "error" if strict else rule.severity
        reason = subject.spec.audit.reason_for(rule.id) if subject.spec.audit else None
        findings.append(
            Finding(
                rule.id,
                severity,
                first.message,
                file=first.file,
                row=first.row,
                line=first.line,
                field=first.field,
                sample=first.sample,
                count=count,
                silenced=reason,
            )
        )
    return findings


def _stop_on_errors(findings: list[Finding], strict: bool) -> None:
    stopping = [f for f in findings if f.severity == "error" and f.silenced is None]
    if stopping:
        first_error = stopping[0]
        others = "".join(f"\n  also: {f.text()}" for f in stopping[1:])
        how = "--strict turns audit warnings into errors; " if strict else ""
        raise TaskDefinitionError(
            f"[{first_error.rule}] {first_error.message}"
            + (f" ({first_error.count} rows or places in all)" if first_error.count > 1 else "")
            + f"{others}\n  ({how}if this is intended, silence the rule in the task file with a reason: "
            f"audit: {{silence: [{{rule: {first_error.rule}, reason: ...}}]}})",
            file=first_error.file,
            line=first_error.line,
            row=first_error.row,
            field=first_error.field,
        )
