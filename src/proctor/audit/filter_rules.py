"""A data ``filter`` that cannot do what it reads as: one that selects rows by their answer (``answer != 'D'``:
the number is measured on the rows whose answer is not D, and a model that never says D loses nothing), and one
whose condition is always true (``subject == 'anatomy' or 'abstract_algebra'``: the bare text is true, so every
row is kept while the task's name says one subject)."""

from __future__ import annotations

import re
from typing import Any, Iterator

from proctor.audit.source_rows import target_reads
from proctor.audit.subject import AuditSubject
from proctor.audit.target_rules import as_template, parsed_template, template_fields
from proctor.core.audit import AuditRule, Hit

# a filter that drops the rows without an answer (GLUE's test rows labelled -1, a blank or missing answer) reads
# the answer field, and is right to
_MISSING = re.compile(r"-1\b|>=\s*0\b|\bnone\b|\bnull\b|\bdefined\b|''|\"\"|\bnan\b|\bnumber\b", re.IGNORECASE)


def _bare_text_operand(source: str) -> str | None:
    """A text constant that stands alone as an operand of ``or`` / ``and`` (always true, or always the other
    side), the way 'x == a or b' is read; None without one."""
    from jinja2 import nodes

    tree = parsed_template(as_template(source))
    if tree is None:
        return None
    for node in tree.find_all((nodes.Or, nodes.And)):
        for side in (node.left, node.right):
            if isinstance(side, nodes.Const) and isinstance(side.value, str) and side.value:
                return str(side.value)
    return None


def filter_on_answers(subject: AuditSubject) -> Iterator[Hit]:
    if not subject.templated:
        return
    answers = target_reads(subject)
    for data in subject.spec.data:
        source: Any = data.filter
        if not isinstance(source, str):
            continue
        text = _bare_text_operand(source)
        if text is not None:
            yield subject.at_line(
                "data",
                f"the filter {source!r:.60} has the bare text {text!r} as a side of 'or' / 'and': a text is true, so "
                f"the condition does not compare it with anything (write 'x == a or x == b', or 'x in [a, b]'); "
                f"it keeps {subject.stats.get('n_rows', 0) - subject.stats.get('n_filtered', 0)} of "
                f"{subject.stats.get('n_rows', 0)} rows",
                "data.filter",
            )
            return
        read = template_fields(as_template(source)) & answers
        computed = set(data.fields)  # a field the data computes from the answer reads it too
        if read and not read <= computed and not _MISSING.search(source):
            yield subject.at_line(
                "data",
                f"the filter {source!r:.60} reads '{sorted(read)[0]}', the field the target's answer comes from: the "
                "rows are chosen by their answers, so the number is measured on some answers only (a model that "
                "never gives the others loses nothing); filter on what the rows ask, not on what is right",
                "data.filter",
            )
            return


RULES = (
    AuditRule(
        "data.filter-biased",
        "warning",
        "The data filter selects rows by their answer (the field the target reads), or one side of its 'or' / 'and' "
        "is a bare text (always true).",
        filter_on_answers,
    ),
)
