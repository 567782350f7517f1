"""Reference answers with their other accepted forms lost: the target keeps one item of a row's list of answers
(``{{ answers[0] }}``, ``| first``), glues them into one text (``| join(', ')``, a CSV cell ``Paris|Paris,
France``), or reads ``answer`` while the row lists its aliases in a field no template reads (TriviaQA). An
answer in another accepted form scores 0: exact match is understated, and a glued reference matches nothing."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterator

from proctor.audit.probe_rows import PROBE_ROWS
from proctor.audit.source_rows import documents, templates
from proctor.audit.subject import AuditSubject
from proctor.audit.target_rules import parsed_template, template_fields
from proctor.core.audit import AuditRule, Hit

ROWS = PROBE_ROWS * 5
GLUED_SHARE = 0.2  # of rows whose one reference holds '|' between answers
_ALIASES = re.compile(r"alias|aliases|answers|accepted|alternatives", re.IGNORECASE)


@lru_cache(maxsize=64)
def _picks(source: str) -> tuple[str, str] | None:
    """(field, how) where the target is one item of a field (``x[0]``, ``x | first``) or the field joined."""
    from jinja2 import nodes

    tree = parsed_template(source)
    if tree is None:
        return None
    outputs = [n for n in tree.body if isinstance(n, nodes.Output)]
    parts = [n for o in outputs for n in o.nodes if not (isinstance(n, nodes.TemplateData) and not n.data.strip())]
    if len(outputs) != len(tree.body) or len(parts) != 1:
        return None
    node = parts[0]
    if isinstance(node, nodes.Getitem) and isinstance(node.node, nodes.Name) and isinstance(node.arg, nodes.Const):
        return (node.node.name, f"[{node.arg.value!r}]") if type(node.arg.value) is int else None  # x[0]
    if isinstance(node, nodes.Filter) and isinstance(node.node, nodes.Name) and node.name in ("first", "last", "join"):
        return node.node.name, f" | {node.name}"
    return None


def _answers(value: object) -> list[str]:
    """The distinct answers a list holds (texts, spacing aside)."""
    if not isinstance(value, (list, tuple)):
        return []
    return list(dict.fromkeys(" ".join(v.split()) for v in value if isinstance(v, str) and v.strip()))


ALIAS_WORDS = 5  # words at most in each part of a reference split at '; ': short answers, not a sentence's clauses


def _glue(reference: str) -> str:
    """The separator gluing several answers into one reference ('Paris|Paris, France', 'Onion; Allium cepa'),
    or ''. A '; ' counts only between short parts: a sentence may hold one."""
    text = reference.strip()
    if "|" in text.strip("|"):
        return "|"
    parts = [p for p in text.split("; ") if p.strip()]
    if len(parts) > 1 and all(len(p.split()) <= ALIAS_WORDS and p.strip()[-1] not in ".!?" for p in parts):
        return "; "
    return ""


def aliases_lost(subject: AuditSubject) -> Iterator[Hit]:
    prompt, target, key = templates(subject)
    if subject.spec.kind != "generate" or not target:
        return
    docs = documents(subject)
    rows = [(s, docs[i]) for i, s in enumerate(subject.samples[:ROWS]) if s.references]
    picked = _picks(target)
    if picked is not None:
        name, how = picked
        lost = [(s, doc) for s, doc in rows if len(_answers(doc.get(name))) > 1]
        if lost:
            first, doc = lost[0]
            kept = "glues them into one reference" if how == " | join" else "keeps one of them"
            yield subject.at_row(
                first.sample,
                f"the {key}'s '{name}{how}' {kept} ({first.references[0]!r:.40}) where the row lists "
                f"{len(_answers(doc.get(name)))} accepted answers, in {len(lost)} of {len(rows)} "
                f"rows read: an answer in another accepted form scores 0 (give the list itself: '{{{{ {name} }}}}')",
                name,
            )
            return
    glued = [(s, sep) for s, _ in rows if len(s.references) == 1 for sep in [_glue(s.references[0])] if sep]
    if glued and len(glued) >= max(2, GLUED_SHARE * len(rows)):
        (first, sep), field = glued[0], "targets_pretokenized" if subject.task.dialect == "glm" else "target"
        yield subject.at_row(
            first.sample,
            f"the reference {first.references[0]!r:.50} holds answers joined by {sep!r} in {len(glued)} of "
            f"{len(rows)} rows read: it is compared as one text, which no answer matches (split it: "
            f"'{{{{ field.split(\"{sep}\") }}}}', or list each answer)",
            field,
        )
        return
    read = template_fields(target) | template_fields(prompt or "")
    for name, value in rows[0][1].items() if rows else ():
        listed = [(s, doc) for s, doc in rows if len(_answers(doc.get(name))) > 1]
        if _ALIASES.search(name) and name not in read and isinstance(value, list) and listed:
            (first, doc), count = listed[0], len(_answers(listed[0][1].get(name)))
            yield subject.at_row(
                first.sample,
                f"the row lists {count} accepted answers in '{name}', which no template reads: the target gives one "
                f"({first.references[0]!r:.30}), so an answer in another accepted form scores 0",
                name,
            )
            return


RULES = (
    AuditRule(
        "references.aliases-lost",
        "warning",
        "The target keeps one of a row's accepted answers, glues them into one text, or leaves a list of aliases "
        "unread: an answer in another accepted form scores 0.",
        aliases_lost,
    ),
)
