"""What the label rules read of a row besides what every dialect leaves: the row as its source gave it (a
native row's fields, or the document a dialect's handler kept: lm-eval's ``docs``), the fields the target is
made from, which rows are generated rows with references, and the fields the prompt prints over the first rows
(``printed_values``, for the rules that look for a value missing or damaged in some rows)."""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

# PROBE_ROWS and MIN_ROWS were defined here first: named again for the rule modules that import them from here
from proctor.audit.probe_rows import MIN_ROWS as MIN_ROWS
from proctor.audit.probe_rows import PRINTED_ROWS
from proctor.audit.probe_rows import PROBE_ROWS as PROBE_ROWS
from proctor.audit.subject import AuditSubject
from proctor.audit.target_rules import template_fields
from proctor.prompts.builder import PreparedSample


class _RowFields(Sequence[Mapping[str, Any]]):
    """Each sample's fields, read when asked (a rule that probes a few rows reads only those)."""

    def __init__(self, samples: Sequence[PreparedSample]) -> None:
        self.samples = samples

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [s.sample.fields for s in self.samples[i]]
        return self.samples[i].sample.fields


def generated_rows(subject: AuditSubject) -> list[int]:
    """Positions of the generated rows with references (none in a multiple-choice task: its kind says so)."""
    if subject.spec.kind != "generate":
        return []
    return [i for i, s in enumerate(subject.samples) if not s.choices and s.text is None and s.references]


def documents(subject: AuditSubject) -> Sequence[Mapping[str, Any]]:
    """Each sample's row as its source gave it: the fields a native row has, or the document a handler that
    reads its own data kept (lm-eval's ``handler.docs``: (id, document) pairs, in the samples' order)."""
    docs = getattr(subject.handler, "docs", None)
    if (
        isinstance(docs, list)
        and len(docs) == len(subject.samples)
        and all(isinstance(d, tuple) and len(d) == 2 and isinstance(d[1], Mapping) for d in docs[:PROBE_ROWS])
    ):
        return [d[1] for d in docs]
    return _RowFields(subject.samples)


def target_reads(subject: AuditSubject) -> frozenset[str]:
    """The row fields the target is made from: a native template's variables, or lm-eval's ``doc_to_target``
    (a field's name, or a template)."""
    if subject.templated:
        return template_fields(subject.spec.target) if subject.spec.target else frozenset()
    config = getattr(getattr(subject.handler, "task", None), "config", None)
    source = getattr(config, "doc_to_target", None)
    if not isinstance(source, str):
        return frozenset()
    return template_fields(source) if "{" in source else frozenset({source})


def templates(subject: AuditSubject) -> tuple[str | None, str | None, str]:
    """(the prompt's template, the target's template, the target's key in the task file) as the task file writes
    them: a native task's ``prompt`` and ``target``, or lm-eval's ``doc_to_text`` and ``doc_to_target`` where they
    are Jinja templates; None for what is not a template (a dialect's code, a field's name)."""
    if subject.templated:
        prompt = subject.spec.prompt if isinstance(subject.spec.prompt, str) else None
        return prompt, subject.spec.target, "target"
    config = getattr(getattr(subject.handler, "task", None), "config", None)
    text, target = getattr(config, "doc_to_text", None), getattr(config, "doc_to_target", None)
    return (
        text if isinstance(text, str) and "{{" in text else None,
        target if isinstance(target, str) and "{{" in target else None,
        "doc_to_target",
    )


def printed_values(subject: AuditSubject) -> Iterator[tuple[str, list[Any]]]:
    """Each field the prompt template prints (``templates``), in name order, with its value in each of the first
    ``PRINTED_ROWS`` rows as the source gave them (``documents``; None where a row lacks the field); nothing where
    the prompt is no template (a dialect's code)."""
    prompt = templates(subject)[0]
    if not prompt:
        return
    probe = min(len(subject.samples), PRINTED_ROWS)
    docs = documents(subject)
    for name in sorted(template_fields(prompt)):
        yield name, [docs[i].get(name) for i in range(probe)]
