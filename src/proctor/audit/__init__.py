"""The audit stage: checks every prepared task, of every dialect, for what would make its numbers mean something
other than they seem, before any model loads (``stage.audit``; the rules in ``rules.py``, documented in
docs/audit.md)."""

from proctor.audit.stage import all_rules, audit
from proctor.audit.subject import AuditSubject

__all__ = ["AuditSubject", "all_rules", "audit"]
