"""Rules over what the model is shown besides the row: the template's own text (that names an answer, or
wraps a row that adds nothing) and the few-shot examples (all with one answer position, or showing a choice
that is not their answer)."""

from __future__ import annotations

import re
from operator import itemgetter
from typing import Iterator

import numpy as np

from proctor.audit import hint_rules, listed_rows, target_rules, told_answer_rules
from proctor.audit.example_format_rules import example_answer_outside_labels
from proctor.audit.fallback import first_found
from proctor.audit.fixed_text import asserted_in, said_in
from proctor.audit.probe_rows import PROBE_ROWS
from proctor.audit.setting_rules import lmeval_config
from proctor.audit.shown_answers import shown_answers
from proctor.audit.subject import AuditSubject
from proctor.audit.target_rules import _read_field, template_fields
from proctor.core.audit import AuditRule, Hit

# ---------------------------------------------------------------- prompt.empty: the row's own part is blank

OWN_MAX = 64  # an own part longer than this is not blank (a slice of every long prompt is not needed)


def blank_own_parts(subject: AuditSubject) -> Iterator[Hit]:
    """Rows whose prompt is the template's text alone: the row's own part (its question, its passage) is empty
    or whitespace while the other rows have one (a missing field rendered as nothing)."""
    texts = subject.prompt_texts
    if subject.spec.kind == "perplexity" or len(texts) < 3:
        return  # a perplexity row's text is the task, its prompt may be empty by design
    prefix, suffix = subject.fixed_text
    fixed = len(prefix) + len(suffix)
    lengths = np.fromiter(map(len, texts), dtype=np.intp, count=len(texts))
    if not fixed or lengths.min() > fixed + OWN_MAX:
        return  # every row adds more than a few characters of its own (most tasks)
    rows = range(len(texts))
    # a row's own part is blank only if it is empty or starts with a space: the character after the prefix of
    # every row, read in C, leaves the few rows to look at closely
    after_prefix = map(itemgetter(slice(len(prefix), len(prefix) + 1)), texts)
    maybe = (lengths <= fixed) | np.fromiter(map(str.isspace, after_prefix), dtype=np.bool_, count=len(texts))
    blank = []
    for i in np.flatnonzero(maybe).tolist():
        own = len(texts[i]) - fixed
        if own <= 0 or (own <= OWN_MAX and texts[i][len(prefix) : len(texts[i]) - len(suffix)].isspace()):
            blank.append(i)
    if blank and len(blank) * 2 < len(rows):
        first = subject.samples[blank[0]].sample
        yield subject.at_row(
            first,
            f"the prompt is the template's own text alone in {len(blank)} of {len(rows)} rows (the row's part, "
            "between the text every prompt shares, is empty or whitespace): those rows are asked nothing",
            "prompt",
        )


empty_prompts = first_found(target_rules.blank_prompts, blank_own_parts, listed_rows.blank_questions)


# ---------------------------------------------------------------- prompt.contains-gold: the template names one


def template_names_a_choice(subject: AuditSubject) -> Iterator[Hit]:
    """The template's own text (what every prompt shares) names one choice and no other ('The answer is
    True.'): every row is told that answer, right or not."""
    rows = [s for s in subject.scored[:PROBE_ROWS] if len(s.gold) == 1]
    if len(rows) < 3 or len(subject.scored) < len(subject.samples) // 2:
        return
    prefix, suffix = subject.fixed_text
    fixed = prefix + "\n" + suffix
    if not fixed.strip():
        return
    named: dict[str, bool] = {}  # a choice the template names at all ('true or false?' names both)
    asserted: dict[str, bool] = {}  # and not only in a question ('Is it true?' asks; 'The answer is True.' tells)
    told = []
    for sample in rows[:PROBE_ROWS]:
        for choice in sample.choices:
            text = choice.strip()
            if text and text not in named:
                named[text] = len(text) >= target_rules.GOLD_MIN_CHARS and said_in(text, fixed)
                asserted[text] = named[text] and asserted_in(text, fixed)
        in_template = [c for c in sample.choices if named.get(c.strip())]
        if len(in_template) != 1 or not asserted[in_template[0].strip()]:
            return  # no choice named (most tasks), every choice (a template listing the options), or one asked about
        told.append(in_template[0].strip())
    if len(set(told)) != 1:
        return
    answer = told[0]
    right = sum(1 for s in rows[:PROBE_ROWS] if s.choices[s.gold[0]].strip() == answer)
    yield subject.at_line(
        "prompt",
        f"the template's own text names the choice {answer!r:.40} and no other, in every prompt: each row is told "
        f"that answer (the right one in {right} of {min(len(rows), PROBE_ROWS)} rows)",
        "prompt",
    )


gold_in_prompt = first_found(
    target_rules.gold_in_prompt,
    template_names_a_choice,
    hint_rules.gold_in_a_field,
    told_answer_rules.label_in_row_text,
    listed_rows.answer_in_question,
)


# ---------------------------------------------------------------- few-shot examples


def pool_labels(subject: AuditSubject, kind: str = "multiple_choice") -> tuple[str, list[object]] | None:
    """(the target's field, each few-shot pool row's value of it) where the target reads one field as it is: a
    multiple-choice task's labels, or (``kind="generate"``) a generate task's answers, the texts shown after its
    examples."""
    fewshot = subject.spec.fewshot
    if not subject.templated or fewshot is None or not fewshot.count or subject.pool_is_own or not subject.pool:
        return None
    if subject.spec.kind != kind or not subject.spec.target:
        return None
    read = _read_field(subject.spec.target)
    if read is None:
        return None
    name = read[0]
    return name, [row.fields.get(name) for row in subject.pool[:PROBE_ROWS]]


def _one_answer(labels: list[object]) -> bool:
    """Every label is one index, or one short text up to case and spacing (a generated answer: 'yes')."""
    if len(labels) < 2:
        return False
    if all(type(v) is int for v in labels):
        return len(set(labels)) == 1
    if not all(isinstance(v, str) for v in labels):
        return False
    return len({" ".join(str(v).casefold().split()) for v in labels}) == 1


def _evaluated_vary(subject: AuditSubject) -> bool:
    """The evaluated rows' answers are not all one (target.constant speaks for the rows themselves)."""
    golds = {s.gold for s in subject.scored}
    if len(golds) >= 2:
        return True
    answers = {" ".join(s.references[0].casefold().split()) for s in subject.samples[:PROBE_ROWS] if s.references}
    return len(answers) >= 2


def constant_example_label(subject: AuditSubject) -> Iterator[Hit]:
    """Every few-shot example's answer is the same choice position (or the same generated answer) while the
    evaluated rows' vary: the examples teach the model to pick that position. A native task's pool, or the examples
    a dialect's own sampler shows (``shown_answers``: lm-eval's, SEA-HELM's)."""
    pooled = pool_labels(subject) or pool_labels(subject, kind="generate")
    fewshot = subject.spec.fewshot
    if pooled is None or fewshot is None:
        yield from _dialect_examples(subject)
        return
    name, labels = pooled
    if fewshot.count < 2 or len(subject.pool) > PROBE_ROWS or not _one_answer(labels):
        return
    if not _evaluated_vary(subject):
        return
    what = f"at choice {labels[0]}" if type(labels[0]) is int else f"{labels[0]!r:.40}"
    yield subject.at_line(
        "fewshot",
        f"every one of the {len(labels)} few-shot examples has the answer {what} ('{name}'), while the evaluated "
        f"rows' answers vary: each prompt's {fewshot.count} examples teach that answer",
        "fewshot.source",
    )


def _dialect_examples(subject: AuditSubject) -> Iterator[Hit]:
    shown = shown_answers(subject.handler)
    if shown is None or shown.shown < 2 or not _one_answer(list(shown.answers)) or not _evaluated_vary(subject):
        return
    answer = shown.answers[0]
    what = f"at choice {answer}" if type(answer) is int else f"{answer!r:.40}"
    yield Hit(
        f"every one of the {len(shown.answers)} few-shot examples ({shown.source}) has the answer {what}, while the "
        f"evaluated rows' answers vary: each prompt's {shown.shown} examples teach that answer",
        file=subject.file,
        line=subject.task.line,
        field=shown.field,
    )


def _constant_items(source: str, field: str) -> set[int]:
    """The constant indices a template reads from ``field`` (``choices[0]``)."""
    from jinja2 import nodes

    tree = target_rules.parsed_template(source)
    if tree is None:
        return set()
    out = set()
    for node in tree.find_all(nodes.Getitem):
        named = isinstance(node.node, nodes.Name) and node.node.name == field
        if named and isinstance(node.arg, nodes.Const) and type(node.arg.value) is int:
            out.add(node.arg.value)
    return out


def example_shows_fixed_choice(subject: AuditSubject) -> Iterator[Hit]:
    """The few-shot template shows ``choices[0]`` as each example's answer and reads nothing the target reads:
    examples whose answer is another choice are shown with a wrong one."""
    fewshot = subject.spec.fewshot
    pooled = pool_labels(subject)
    if pooled is None or fewshot is None or not fewshot.template or not isinstance(subject.spec.choices, str):
        return
    name, labels = pooled
    choices = _read_field(subject.spec.choices)
    if choices is None or name in template_fields(fewshot.template):
        return
    shown = _constant_items(fewshot.template, choices[0])
    if len(shown) != 1:
        return
    (index,) = shown
    wrong = [v for v in labels if type(v) is int and v != index]
    if not wrong:
        return  # every example's answer is that choice: shown right (fewshot.constant-label speaks)
    yield subject.at_line(
        "fewshot",
        f"the few-shot template shows {choices[0]}[{index}] as each example's answer and does not read '{name}', "
        f"the field the right answer comes from: {len(wrong)} of {len(labels)} examples are shown a wrong answer",
        "fewshot.template",
    )


def example_shows_index(subject: AuditSubject) -> Iterator[Hit]:
    """The few-shot template prints the target's field as it is ('A: {{ label }}'), a choice index, where the
    choices are texts: the examples teach the model to answer with a number it is never scored on."""
    fewshot = subject.spec.fewshot
    pooled = pool_labels(subject)
    if pooled is None or fewshot is None or not fewshot.template or not subject.scored:
        return
    name, labels = pooled
    if not labels or any(type(v) is not int for v in labels):
        return
    if re.search(r"\{\{-?\s*" + re.escape(name) + r"\s*-?\}\}", fewshot.template) is None:
        return
    worded = [s.choices for s in subject.scored[:PROBE_ROWS] if not all(c.strip().isdigit() for c in s.choices)]
    if not worded:
        return  # the choices are the numbers themselves
    choices = worded[0]
    yield subject.at_line(
        "fewshot",
        f"the few-shot template prints '{name}' as each example's answer ({', '.join(map(str, labels[:3]))}, ...): a "
        f"choice index, where the choices are texts ({choices[0]!r:.20}, ...); show the choice itself "
        f"({{{{ choices[{name}] }}}})",
        "fewshot.template",
    )


def glued_examples(subject: AuditSubject) -> Iterator[Hit]:
    """Few-shot examples joined by a separator without a line break (native ``fewshot.separator``, lm-eval's
    ``fewshot_delimiter``): each example's answer runs into the next question ('A: TehranQ: Capital of Chad?'),
    which teaches the model to go on writing after its answer."""
    fewshot = subject.spec.fewshot
    if subject.use_chat:
        return  # examples as chat turns: the template separates them
    if subject.templated and fewshot is not None and fewshot.count:
        separator, line, field = fewshot.separator, subject.line("fewshot"), "fewshot.separator"
    else:
        config = lmeval_config(subject)
        count, given = getattr(config, "num_fewshot", None), getattr(config, "fewshot_delimiter", None)
        if not isinstance(given, str) or not isinstance(count, int) or count < 1:
            return
        separator = given
        line, field = subject.line("fewshot_delimiter"), "fewshot_delimiter"
    if "\n" in separator:
        return
    yield Hit(
        f"the few-shot examples are joined by {separator!r}, which holds no line break: each example's answer runs "
        "into the next question ('A: TehranQ: ...'), which teaches the model to go on writing after its answer",
        file=subject.file,
        line=line,
        field=field,
    )


RULES = (
    AuditRule(
        "fewshot.separator",
        "warning",
        "Few-shot examples are joined without a line break (an empty or space separator): answers run into the next "
        "question.",
        glued_examples,
    ),
    AuditRule(
        "prompt.contains-gold",
        "warning",
        "Most rows' prompts hold the right choice (and no other) or end with the reference, the template names one "
        "choice, or a printed field (a hint) holds the answer in a tenth of the rows: the answer is copied.",
        gold_in_prompt,
    ),
    AuditRule(
        "prompt.empty",
        "warning",
        "Some rows' prompts are blank, or the template's text alone, while others' are not: those rows are asked "
        "nothing.",
        empty_prompts,
    ),
    AuditRule(
        "fewshot.constant-label",
        "warning",
        "Every few-shot example's answer is the same choice position: the examples teach that position.",
        constant_example_label,
    ),
    AuditRule(
        "fewshot.wrong-answer",
        "warning",
        "The few-shot template shows a fixed choice (choices[0]) as each example's answer, not its right one, or "
        "prints the label's index where the choices are texts, or its examples' answers are words the task never "
        "scores (True/False for no/yes choices, a letter for text choices, nothing).",
        first_found(example_shows_fixed_choice, example_shows_index, example_answer_outside_labels),
    ),
)
