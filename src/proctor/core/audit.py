"""Audit rules and their findings: what the audit stage (``proctor.audit``) says about a prepared task.

A rule looks at a task after its samples, prompts, choices and targets are built and before any model loads,
and reports what makes its numbers mean something other than they seem (a choice listed twice, a few-shot
pool holding the evaluated rows, a join that misaligns labels). Every rule has an id, a severity and a
one-line explanation; its findings name the file, the row or line and the field. Rules live in one registry:
the built-in ones in ``proctor.audit.rules``, a plug-in's through ``Registry.add_audit_rule`` (the same
``register(registry)`` path as dialects, backends and metric modules).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal

from proctor.core.errors import place

Severity = Literal["error", "warning"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning")
# when a rule runs: "task" before any model loads (``proctor validate`` and ``run``), on the prepared task;
# "model" once the model has loaded (``proctor run``), on the task with that model: what only the model tells
Stage = Literal["task", "model"]
STAGES: tuple[Stage, ...] = ("task", "model")


@dataclass(frozen=True)
class Hit:
    """One place a rule found something: a row (file + row), or the task file (file + line), and the field."""

    message: str
    file: str | None = None
    row: int | None = None
    line: int | None = None
    field: str | None = None
    sample: str | None = None  # the sample id, where the hit is a row's


@dataclass(frozen=True)
class AuditRule:
    """A check over a prepared task. ``check(subject)`` yields ``Hit``s; the stage turns each rule's hits into
    one finding (the first place named, the others counted). ``subject`` is ``proctor.audit.AuditSubject``
    (``proctor.audit.ModelSubject`` for a rule of the "model" stage)."""

    id: str  # "family.what", e.g. "choices.duplicate"; a task file silences it by this id
    severity: Severity
    summary: str  # one line: what it catches and why it changes the number
    check: Callable[[Any], Iterable[Hit]] = field(compare=False)
    stage: Stage = "task"  # "model": ``check`` gets a ``proctor.audit.ModelSubject`` once the model has loaded

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"audit rule '{self.id}': severity must be one of {SEVERITIES}, got {self.severity!r}")
        if self.stage not in STAGES:
            raise ValueError(f"audit rule '{self.id}': stage must be one of {STAGES}, got {self.stage!r}")
        if not self.id or any(ch.isspace() for ch in self.id):
            raise ValueError(f"audit rule id {self.id!r} must be one word, e.g. 'choices.duplicate'")


def dialect_check(dialect: str, reference: str) -> Callable[[Any], Iterable[Hit]]:
    """A plug-in dialect's rule check, run on that dialect's tasks only and imported (``"module:function"``) the
    first time one is audited: a run of another dialect's tasks imports none of its modules."""

    def check(subject: Any) -> Iterable[Hit]:
        if subject.task.dialect != dialect:
            return ()
        from proctor.core.references import resolve

        rule: Callable[[Any], Iterable[Hit]] = resolve(reference)
        return rule(subject)

    return check


@dataclass(frozen=True)
class Finding:
    """What one rule found in one task: its first place, how many places in all, and whether the task file
    silenced it (with the reason it gave)."""

    rule: str
    severity: Severity
    message: str
    file: str | None = None
    row: int | None = None
    line: int | None = None
    field: str | None = None
    sample: str | None = None
    count: int = 1
    silenced: str | None = None  # the task file's reason, where it silenced the rule

    def where(self) -> str:
        """'file:line, row 3, field 'choices'' (the parts that are known), as ``TaskDefinitionError`` writes it."""
        return place(self.file, self.line, self.row, self.field).lstrip(", ")

    def text(self) -> str:
        """The one line the console, results.json's warnings and errors show: '[rule] where: message'."""
        more = f" ({self.count} rows or places in all; the first is named)" if self.count > 1 else ""
        where = self.where()
        return f"[{self.rule}] {where + ': ' if where else ''}{self.message}{more}"

    def as_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"rule": self.rule, "severity": self.severity, "message": self.message}
        for key in ("file", "row", "line", "field", "sample"):
            value = getattr(self, key)
            if value is not None:
                entry[key] = value
        entry["count"] = self.count
        if self.silenced is not None:
            entry["silenced"] = self.silenced
        return entry
