"""One rule, two ways of seeing the problem: the second check runs only where the first found nothing."""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from proctor.audit.subject import AuditSubject
from proctor.core.audit import Hit

Check = Callable[[AuditSubject], Iterable[Hit]]


def first_found(*checks: Check) -> Callable[[AuditSubject], Iterator[Hit]]:
    """A check yielding the hits of the first of ``checks`` that finds any (a widened rule keeps its first
    check's finding where that one speaks, and adds the later ones' only where it is silent)."""

    def check(subject: AuditSubject) -> Iterator[Hit]:
        for each in checks:
            hits = list(each(subject))
            if hits:
                yield from hits
                return

    return check
