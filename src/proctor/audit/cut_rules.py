"""A prompt template (or lm-eval's ``doc_to_text``, a perplexity task's ``text``) that cuts a row's field to a
length (``{{ passage | truncate(200) }}``, ``{{ passage[:200] }}``): rows whose field is longer are shown part of
it, and where the answer sat in the part cut away the row cannot be answered from what the model is shown.
Nothing fails; the template meant a bound on length. A perplexity task's texts cut before they came, at one
length, are read too (``perplexity_rules.cut_texts``)."""

from __future__ import annotations

from functools import lru_cache
from typing import Iterator

from proctor.audit.perplexity_rules import cut_texts
from proctor.audit.probe_rows import PROBE_ROWS
from proctor.audit.source_rows import documents, templates
from proctor.audit.subject import AuditSubject
from proctor.audit.target_rules import parsed_template
from proctor.core.audit import AuditRule, Hit

TRUNCATE_DEFAULT = 255  # Jinja's truncate without a length
TRUNCATE_LEEWAY = 5  # and the characters past the length it leaves uncut (Jinja's policy 'truncate.leeway')


@lru_cache(maxsize=64)
def _cuts(source: str) -> tuple[tuple[str, int, int], ...]:
    """(field, length, the length up to which it is left whole) for each field the template cuts: ``|
    truncate(n)`` or a slice ``[:n]`` of a row field."""
    from jinja2 import nodes

    tree = parsed_template(source)
    if tree is None:
        return ()
    found: list[tuple[str, int, int]] = []
    for node in tree.find_all(nodes.Filter):
        if node.name == "truncate" and isinstance(node.node, nodes.Name):
            arg = node.args[0] if node.args else None
            length = arg.value if isinstance(arg, nodes.Const) else TRUNCATE_DEFAULT if arg is None else None
            if type(length) is int:
                found.append((node.node.name, length, length + TRUNCATE_LEEWAY))
    for item in tree.find_all(nodes.Getitem):
        cut = item.arg
        stop = cut.stop.value if isinstance(cut, nodes.Slice) and isinstance(cut.stop, nodes.Const) else None
        # [:n] of a row field (a slice from elsewhere keeps the row's end)
        field = item.node.name if isinstance(item.node, nodes.Name) else None
        if field and isinstance(cut, nodes.Slice) and cut.start is None and type(stop) is int and stop > 0:
            found.append((field, stop, stop))
    return tuple(found)


def cut_fields(subject: AuditSubject) -> Iterator[Hit]:
    prompt = templates(subject)[0]  # a native prompt, or lm-eval's doc_to_text
    text = subject.spec.text if subject.templated and subject.spec.kind == "perplexity" else None
    cuts = (_cuts(prompt) if prompt else ()) + (_cuts(text) if text else ())
    if not cuts:
        yield from cut_texts(subject)  # a perplexity task's texts cut before they came
        return
    rows, docs = subject.samples[: PROBE_ROWS * 5], documents(subject)
    for name, length, whole in cuts:
        values = [(s, docs[i].get(name)) for i, s in enumerate(rows)]
        longer = [(s, v) for s, v in values if isinstance(v, str) and len(v) > whole]
        if not longer:
            continue
        lost = [
            s
            for s, v in longer
            if s.references and any(r.strip() and r.strip() in v and r.strip() not in v[:length] for r in s.references)
        ]
        first = (lost or [longer[0][0]])[0]
        answer = f"; in {len(lost)} of them the reference answer is in the part cut away" if lost else ""
        where = "text" if text and (name, length, whole) in _cuts(text) else "prompt"  # a perplexity row's own
        yield subject.at_row(
            first.sample,
            f"the {where} cuts '{name}' to {length} characters, and it is longer in {len(longer)} of {len(rows)} rows "
            f"read (up to {max(len(v) for _, v in longer):,}){answer}: the model is shown part of the row",
            name,
        )
        return


RULES = (
    AuditRule(
        "prompt.cut",
        "warning",
        "The prompt template cuts a field (| truncate(n), [:n]) that is longer in some rows: part of the row, "
        "perhaps its answer, is not shown; or a perplexity task's texts were cut at one length before they came.",
        cut_fields,
    ),
)
