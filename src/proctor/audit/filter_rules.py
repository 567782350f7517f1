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


_TOKENS = re.compile(r"[\s,;|/]+|_and_|_or_")


def _substring_test(source: str) -> tuple[str, str] | None:
    """(the field, the text) of ``field in 'a text'``: a test of substrings, not of membership in a list."""
    from jinja2 import nodes

    tree = parsed_template(as_template(source))
    if tree is None:
        return None
    for node in tree.find_all(nodes.Compare):
        if isinstance(node.expr, nodes.Name) and len(node.ops) == 1 and node.ops[0].op in ("in", "notin"):
            text = node.ops[0].expr
            if isinstance(text, nodes.Const) and isinstance(text.value, str):
                return node.expr.name, text.value
    return None


def _accidental_substring(subject: AuditSubject, field: str, text: str) -> str | None:
    """A kept row's value that ``field in text`` lets through as a piece of a word of ``text`` (not one of the
    words it lists): 'algebra' in 'abstract_algebra_and_anatomy'. Single letters ('A' in 'ABCD') are what such a
    test is for, and are left alone."""
    words = set(_TOKENS.split(text))
    values = {r.fields.get(field) for r in subject.rows}
    texts = [v for v in values if isinstance(v, str)]
    if not texts or all(len(v) <= 1 for v in texts):
        return None
    return next((v for v in sorted(texts) if v and v in text and v not in words), None)


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
        found = _substring_test(source)
        piece = _accidental_substring(subject, *found) if found else None
        if found and piece is not None:
            yield subject.at_line(
                "data",
                f"the filter {source!r:.60} tests '{found[0]}' as a piece of the text {found[1]!r}, not against a "
                f"list: '{piece}' is kept because it is part of a longer name (write '{found[0]} in [...]' with "
                "each value listed)",
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
        "is a bare text (always true), or it tests a field as a piece of a text (x in 'a_and_b') that "
        "keeps values which are parts of longer names.",
        filter_on_answers,
    ),
)
