"""A field that says what a row asks, read by no template: XCOPA's ``question`` (``cause`` or ``effect``) left out
of a prompt that asks "because ..." of every row, so half the rows are asked the opposite relation; a
``negated`` or ``direction`` flag the prompt never shows. Such a field has a few short values, varies across
rows, and has a name that says it conditions the question."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterator, Mapping, Sequence

from proctor.audit.source_rows import documents
from proctor.audit.subject import AuditSubject
from proctor.audit.target_rules import as_template, template_fields
from proctor.core.audit import AuditRule, Hit
from proctor.data.reserved_names import RESERVED

# more than probe_rows.PROBE_ROWS, on purpose: each value of a flag must show in a share of the rows (MIN_SHARE),
# and only the fields are read, which is cheap
PROBE_ROWS = 1000
MAX_VALUES = 5  # a condition, not a text: cause/effect, true/false, forward/backward
SHORT = 20  # characters of a condition's value
MIN_SHARE = 0.1  # of the rows read, for each of at least two values: a flag that really varies
_CONDITIONS = frozenset(
    {
        "question",  # XCOPA, COPA: cause or effect
        "type",
        "relation",
        "direction",
        "polarity",
        "negated",
        "negation",
        "asks",
        "ask_for",
        "asks_for",
        "question_type",
        "cause_effect",
        "mode",
    }
)


def _templates(subject: AuditSubject) -> list[str] | None:
    """Every template that reads a row's fields (None: a dialect's code reads them, which the audit cannot)."""
    if subject.templated:
        spec = subject.spec
        if not isinstance(spec.prompt, str):
            return None
        found = [spec.prompt, spec.target or ""]
        choices: Any = spec.choices
        found += [choices] if isinstance(choices, str) else [c for c in choices or [] if isinstance(c, str)]
        fewshot = spec.fewshot
        found += [fewshot.template] if fewshot is not None and isinstance(fewshot.template, str) else []
        # the data's own expressions (a computed field, a filter) read fields too
        for data in spec.data:
            found += [as_template(e) for e in (*data.fields.values(), data.filter) if e]
        return found
    config = getattr(getattr(subject.handler, "task", None), "config", None)
    parts = [getattr(config, k, None) for k in ("doc_to_text", "doc_to_target", "doc_to_choice")]
    if config is None or not all(isinstance(p, (str, list)) for p in parts):
        return None  # a function reads the document
    text = parts[0]
    if not isinstance(text, str) or "{{" not in text:
        return None
    found = []
    for part in parts:
        for item in part if isinstance(part, list) else [part]:
            found += [item] if isinstance(item, str) and "{" in item else []
    return found


def _reads(subject: AuditSubject) -> tuple[set[str], Sequence[Mapping[str, Any]], int] | None:
    """(the fields some template reads, each row as its source gave it, the rows read); None where a dialect's
    code reads the rows, or the task has too few rows to tell."""
    sources = _templates(subject)
    probe = min(len(subject.samples), PROBE_ROWS)
    if sources is None or probe < 4:
        return None
    # lm-eval names a field as a plain value too (doc_to_target: label)
    plain = not subject.templated
    read = set().union(*(template_fields(s) if not plain or "{{" in s or "{%" in s else {s} for s in sources))
    return read, documents(subject), probe


def unread_condition(subject: AuditSubject) -> Iterator[Hit]:
    reads = _reads(subject)
    if reads is None:
        return
    read, docs, probe = reads
    names = [k for k in docs[0] if k.lower() in _CONDITIONS]
    read |= set(subject.spec.breakdown)
    for name in names:
        if name in read:
            continue
        values = Counter(docs[i].get(name) for i in range(probe))
        if not 2 <= len(values) <= MAX_VALUES or not all(
            isinstance(v, (str, bool)) and len(str(v)) <= SHORT for v in values
        ):
            continue
        common = [v for v, n in values.items() if n >= MIN_SHARE * probe]
        if len(common) < 2:
            continue
        shown = ", ".join(f"{v!r} in {values[v]}" for v in common[:MAX_VALUES])
        yield subject.at_row(
            subject.samples[0].sample,
            f"the rows' '{name}' says what each asks ({shown} of the {probe} rows read), and no template reads it: "
            f"every row is asked the same way, so the rows of the other '{name}' are asked something else than "
            "their answer is for (XCOPA's cause or effect); make the prompt read it",
            name,
        )
        return


# fields that hold what a row asks: a prompt that reads none of them asks nothing of the row's own
_QUESTIONS = frozenset({"question", "stem", "query", "goal", "problem", "instruction", "ctx", "sentence", "premise"})
QUESTION_CHARS = 15  # a question's text, not a label
DISTINCT_SHARE = 0.8  # of the rows read: each row asks its own


def _head(text: str) -> str:
    """A text's first words as a prompt would show them, case and spacing aside."""
    return " ".join(text.split())[:QUESTION_CHARS].casefold()


def unread_question(subject: AuditSubject) -> Iterator[Hit]:
    reads = _reads(subject)
    if reads is None:
        return
    read, docs, probe = reads
    if read & _QUESTIONS or any(k.lower() in _QUESTIONS for k in read):
        return  # the prompt reads one of them
    for name in [k for k in docs[0] if k.lower() in _QUESTIONS and k not in read]:
        values = [docs[i].get(name) for i in range(probe)]
        texts = [v for v in values if isinstance(v, str) and len(v.strip()) >= QUESTION_CHARS]
        if len(texts) < DISTINCT_SHARE * probe or len(set(texts)) < DISTINCT_SHARE * probe:
            continue
        prompts = subject.prompt_texts
        shown = sum(
            isinstance(v, str) and _head(v) in " ".join(prompts[i].split()).casefold() for i, v in enumerate(values)
        )
        if 2 * shown >= probe:
            continue  # the prompt shows it through other fields (HellaSwag's ctx_a and ctx_b make its ctx)
        yield subject.at_row(
            subject.samples[0].sample,
            f"every row has its own '{name}' ({texts[0]!r:.40}), and no template reads it: the model is shown the "
            "options without the question they answer, so the number measures guessing from the options alone",
            name,
        )
        return


PART_SHARE = 0.5  # of the rows read: the longer field goes on past the part shown in most rows
PART_CHARS = 2  # what the longer field adds: a word at least ("he", "the man")


def _continues(whole: object, part: object) -> str | None:
    """What ``whole`` adds after ``part`` where it begins with it ('' where it does not, or adds nothing)."""
    if not isinstance(whole, str) or not isinstance(part, str) or not part.strip() or not whole.startswith(part):
        return None
    rest = whole[len(part) :].strip()
    return rest if len(rest) >= PART_CHARS else None


def _shows(prompt: str, text: str) -> bool:
    """Whether ``prompt`` shows ``text`` as words of its own, spacing and case aside ('he' is not in 'the')."""
    words = r"\s+".join(re.escape(w) for w in text.split())
    return re.search(rf"(?<!\w){words}(?!\w)", prompt, re.IGNORECASE) is not None


def unread_rest(subject: AuditSubject) -> Iterator[Hit]:
    """The prompt reads a field that is the first part of another field no template reads (HellaSwag's ctx_a,
    where ctx = ctx_a + ctx_b): the rest, which the choices continue, is never shown."""
    reads = _reads(subject)
    if reads is None:
        return
    read, docs, probe = reads
    first = docs[0]
    pairs = [
        (whole, part)
        for whole in first
        if whole not in read and whole not in RESERVED  # the reader's own fields: _file is _source's stem
        for part in read
        if part in first and part not in RESERVED and _continues(first[whole], first[part]) is not None
    ]
    prompts = subject.prompt_texts
    for whole, part in pairs:
        cut = 0
        for i in range(probe):
            rest = _continues(docs[i].get(whole), docs[i].get(part))
            cut += rest is not None and not _shows(prompts[i], rest)
        if cut < PART_SHARE * probe:
            continue
        shown = repr(_continues(first[whole], first[part]))
        yield subject.at_row(
            subject.samples[0].sample,
            f"the prompt reads '{part}', the first part of '{whole}', and no template reads the rest ({shown} in "
            f"the first row; cut in {cut} of the {probe} rows read): the choices continue the whole text, so the "
            f"model is scored on endings of a sentence it was not shown; read '{whole}'",
            part,
        )
        return


RULES = (
    AuditRule(
        "prompt.drops-condition",
        "warning",
        "A field that says what a row asks (XCOPA's question: cause or effect) varies across rows and no template "
        "reads it: some rows are asked the opposite of what their answer is for.",
        unread_condition,
    ),
    AuditRule(
        "prompt.drops-question",
        "warning",
        "Every row has its own question (a field named question, stem, query, goal, ...) and no template reads it: "
        "the model answers without the question.",
        unread_question,
    ),
    AuditRule(
        "prompt.drops-part",
        "warning",
        "The prompt reads a field that is only the first part of another field no template reads (HellaSwag's "
        "ctx_a without ctx_b, where ctx = ctx_a + ctx_b): the rest, which the choices continue, is never shown.",
        unread_rest,
    ),
)
