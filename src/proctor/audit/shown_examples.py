"""Worked examples that teach another format than the one scored, where no ``fewshot.template`` writes them
(``example_format_rules.py`` reads a native task's): the examples a dialect's own sampler shows (SEA-HELM's examples
split for a base model, answering 'Positive' where the task scores 'Positif'), and examples written into the text
every prompt shares (a probsem prompt file demonstrating 'Answer:\\nyes' before a suite scored on 'True'/'False'
after 'Verdict:'). A model copies what its examples show, and is then scored on words it was taught not to write.
Both read a handful of rows: the examples' answers, or the shared text and the first rows' choices."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from proctor.audit.shown_answers import shown_answers
from proctor.audit.subject import AuditSubject
from proctor.core.audit import Hit

ROWS_READ = 200
LABEL_SET = 20  # distinct answers at most for the scored answers to be a fixed set of labels
SHORT = 3  # words at most in a demonstrated answer (a label, not a sentence of the prompt's)

# a line that is a cue: a few words and a colon, with the answer after it or on the next line
_CUE_LINE = re.compile(r"^[ \t]*([^\W\d_][^\W\d_]*(?: [^\W\d_]+){0,3}):[ \t]*(.*)$", re.M)


def _fold(text: object) -> str:
    return " ".join(str(text).split()).casefold()


def scored_labels(subject: AuditSubject) -> set[str] | None:
    """The answers the task scores when they are one small set (casefolded): a multiple-choice task's one list
    of choices, or a generate task's few distinct references; None otherwise."""
    rows = subject.samples[:ROWS_READ]
    if subject.spec.kind == "multiple_choice":
        sets = {tuple(_fold(c) for c in s.choices) for s in rows if s.choices}
        return set(next(iter(sets))) if len(sets) == 1 else None
    found = {_fold(r) for s in rows for r in s.references}
    return found if 2 <= len(found) <= LABEL_SET else None


def _spelt(subject: AuditSubject, labels: set[str]) -> str:
    """The labels as the task writes them (not casefolded), for a message."""
    rows = subject.samples[:ROWS_READ]
    forms = {t.strip(): None for s in rows for t in (s.choices or s.references) if _fold(t) in labels}
    return ", ".join(map(repr, sorted(forms)[:6]))


def _a_label_set(subject: AuditSubject, labels: set[str]) -> bool:
    """Whether the references are a classification's labels, not a few short answers of their own (a handful of
    capitals, which any other question's answer is outside of): each label answers two rows or more on average, or
    the text every prompt shares offers every one of them ('Positif, Negatif, atau Netral')."""
    rows = min(len(subject.samples), ROWS_READ)
    if rows >= 2 * len(labels):
        return True
    prefix, suffix = subject.fixed_text
    shared = _fold(prefix + " " + suffix)
    return all(re.search(r"(?<!\w)" + re.escape(label) + r"(?!\w)", shared) for label in labels)


def examples_in_other_labels(subject: AuditSubject) -> Iterator[Hit]:
    """The examples a dialect shows (``audit_example_answers``) answer in words the task never scores."""
    shown = shown_answers(subject.handler)
    if shown is None or shown.shown < 2:
        return
    answers = [a for a in shown.answers if isinstance(a, str) and a.strip()]
    if len(answers) < 2:
        return  # indices (lm-eval's multiple choice) are the task's own
    labels = scored_labels(subject)
    if labels is None or not _a_label_set(subject, labels):
        return
    outside = [a for a in answers if _fold(a) not in labels]
    if len(outside) * 2 <= len(answers):
        return
    yield Hit(
        f"{len(outside)} of the {len(answers)} few-shot examples ({shown.source}) answer in words the task never "
        f"scores ({', '.join(map(repr, sorted(set(outside))[:4]))}; the task scores "
        f"{_spelt(subject, labels)}): a model that copies its examples answers in their words, "
        "which are never counted right",
        file=subject.file,
        line=subject.task.line,
        field=shown.field,
    )


def _demos(shared: str) -> dict[str, list[str]]:
    """Each cue of the shared text -> the short answers shown after it (on its line, or on the next)."""
    found: dict[str, list[str]] = {}
    for match in _CUE_LINE.finditer(shared):
        answer = match.group(2).strip()
        if not answer:
            rest = shared[match.end() + 1 :]
            answer = rest.split("\n", 1)[0].strip() if match.end() < len(shared) else ""
        if answer and len(answer.split()) <= SHORT and len(answer) <= 40 and not answer.endswith(":"):
            found.setdefault(match.group(1), []).append(answer)
    return found


def _prompt_file(subject: AuditSubject) -> str | None:
    """A probsem suite's prompt file (``<prompt>_<test>.json`` beside ``<prompt>.txt``), else the task's file."""
    if subject.file is None:
        return None
    suite = Path(subject.file)
    if "_" in suite.stem:
        prompt = suite.with_name(suite.stem.rsplit("_", 1)[0] + ".txt")
        if prompt.is_file():
            return str(prompt)
    return subject.file


def demos_in_other_format(subject: AuditSubject) -> Iterator[Hit]:
    """The text every prompt shares demonstrates answers after another cue than the scored question's, or words
    the task never scores, at least twice."""
    if subject.templated and subject.spec.fewshot is not None and subject.spec.fewshot.template:
        return  # fewshot.template's own examples: other_cue reads them
    if subject.spec.kind != "multiple_choice" or len(subject.samples) < 2:
        return
    prefix, _ = subject.fixed_text
    if ":" not in prefix:
        return
    lines = [line for line in subject.prompt_texts[0].rstrip().split("\n") if line.strip()]
    last = _CUE_LINE.fullmatch(lines[-1]) if lines else None
    if last is None or last.group(2).strip():
        return  # the scored question ends with no cue of its own
    scored = last.group(1)
    labels = scored_labels(subject)
    demos = _demos(prefix)
    shown = demos.get(scored, [])
    other = max((c for c in demos if c != scored and len(demos[c]) >= 2), key=lambda c: len(demos[c]), default=None)
    where = "the text every prompt shares (a prompt file's or preamble's worked examples)"
    if not shown and other is not None:
        why = (
            f"answers after {other + ':'!r} ({', '.join(map(repr, demos[other][:3]))}) while the scored question "
            f"ends with {scored + ':'!r}"
        )
        if labels is not None and any(_fold(a) not in labels for a in demos[other]):
            why += f" and is scored on {_spelt(subject, labels)}"
    elif len(shown) >= 2 and labels is not None and sum(_fold(a) not in labels for a in shown) * 2 > len(shown):
        outside = [a for a in shown if _fold(a) not in labels]
        why = (
            f"answers {', '.join(map(repr, outside[:3]))} after {scored + ':'!r}, words the task never scores "
            f"({_spelt(subject, labels)})"
        )
    else:
        return
    yield Hit(
        f"{where} {why}: the examples teach another format than the one the model is scored in, and a model that "
        "copies them answers in their form",
        file=_prompt_file(subject),
        line=None,
        field="prompt",
    )
