"""The audit stage: checks every prepared task, of every dialect, for what would make its numbers mean something
other than they seem, before any model loads (``stage.audit``; the rules in ``rules.py``, documented in
docs/audit.md)."""

from proctor.audit.model_rules import ModelSubject
from proctor.audit.stage import all_rules, audit, audit_with_model
from proctor.audit.subject import AuditSubject

__all__ = ["AuditSubject", "ModelSubject", "all_rules", "audit", "audit_with_model"]
