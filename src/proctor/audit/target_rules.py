"""Rules over targets and prompts: a label changed on its way in, an empty reference, a prompt that shows the
answer or the same question to every row."""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any, Iterator

from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

_INTEGER = re.compile(r"^\s*[+-]?\d+\s*$")
_TEMPLATE_GLOBALS = frozenset({"_fail"})  # proctor's own template functions (core/templates.py), not row fields


@lru_cache(maxsize=64)
def _variables(source: str) -> frozenset[str]:
    """The row fields a template reads (Jinja's undeclared variables); none for a template that does not parse
    (compiling it is prepare's job, which names the error)."""
    from jinja2 import meta
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment()
    try:
        names = meta.find_undeclared_variables(env.parse(source))
    except Exception:  # noqa: BLE001 - a template error is reported where the template is compiled
        return frozenset()
    return frozenset(names - set(env.globals) - _TEMPLATE_GLOBALS)


@lru_cache(maxsize=64)
def _int_filtered(source: str) -> frozenset[str]:
    """Fields the template passes straight through the ``int`` filter (``{{ label | int }}``), which turns "1.5"
    into 1 and True into 1 without a word (a text that is no number is an error already: core/templates.py)."""
    from jinja2 import nodes
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    try:
        tree = ImmutableSandboxedEnvironment().parse(source)
    except Exception:  # noqa: BLE001 - reported where the template is compiled
        return frozenset()
    return frozenset(
        f.node.name
        for f in tree.find_all(nodes.Filter)
        if f.name == "int" and isinstance(f.node, nodes.Name) and not f.args
    )


def _changed_by_int(value: Any) -> bool:
    """Whether ``int`` would make another number of this value (or a number of what is none)."""
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return False
    if isinstance(value, float):
        return not math.isfinite(value) or not value.is_integer()
    if isinstance(value, str):
        if _INTEGER.match(value):
            return False
        try:
            number = float(value)
        except ValueError:
            return True  # "two", "B", "": int gives 0
        return not math.isfinite(number) or not number.is_integer()
    return True


def coerced_target(subject: AuditSubject) -> Iterator[Hit]:
    if not subject.templated or not subject.spec.target:
        return
    names = _int_filtered(subject.spec.target)
    if not names:
        return
    for sample in subject.samples:
        for name in names:
            if name in sample.sample.fields and _changed_by_int(sample.sample.fields[name]):
                value = sample.sample.fields[name]
                yield Hit(
                    f"the target's '| int' turns {value!r:.40} ({type(value).__name__}) into a choice index without "
                    "a word (1.5 becomes 1, True becomes 1): the row's label is not a whole number",
                    file=sample.sample.file or subject.file,
                    row=sample.sample.row,
                    field=name,
                    sample=sample.sample.id,
                )
                break


def empty_reference(subject: AuditSubject) -> Iterator[Hit]:
    for sample in subject.samples:
        if sample.choices or sample.text is not None:
            continue
        blank = [i for i, r in enumerate(sample.references) if not r.strip()]
        if blank:
            yield Hit(
                f"reference {blank[0]} is empty ({sample.references[blank[0]]!r}): an empty or cut-off answer "
                "matches it",
                file=sample.sample.file or subject.file,
                row=sample.sample.row,
                field="target",
                sample=sample.sample.id,
            )


def prompt_reads_target(subject: AuditSubject) -> Iterator[Hit]:
    """The prompt template reads a field that only the target reads otherwise: it shows the answer."""
    spec = subject.spec
    if not subject.templated or not spec.prompt or not spec.target:
        return
    choice_fields: frozenset[str] = frozenset()
    if isinstance(spec.choices, str):
        choice_fields = _variables(spec.choices)
    elif isinstance(spec.choices, list):
        choice_fields = frozenset().union(*(_variables(c) for c in spec.choices))
    answer_fields = _variables(spec.target) - choice_fields
    shown = sorted(answer_fields & _variables(spec.prompt))
    if shown:
        yield Hit(
            f"the prompt shows {', '.join(repr(f) for f in shown)}, the field(s) the target reads the right answer "
            "from: the model is told the answer",
            file=subject.file,
            line=subject.line("prompt"),
            field="prompt",
        )


GOLD_IN_PROMPT_SHARE = 0.5  # a coincidence in some rows is normal; in most, the prompt prints the answer
GOLD_MIN_ROWS = 3
GOLD_MIN_CHARS = 4  # "A", "yes": short answers occur in prompts by chance
_PROBE_ROWS = 200  # rows looked at before the whole task is (the rule costs little on tasks that pass)


def _shows_gold(text: str, choices: tuple[str, ...], gold: tuple[int, ...], references: tuple[str, ...]) -> bool:
    if choices:
        if len(gold) != 1:
            return False
        answer = choices[gold[0]].strip()
        if len(answer) < GOLD_MIN_CHARS or answer not in text:
            return False
        return not any(c.strip() and c.strip() in text for i, c in enumerate(choices) if i != gold[0])
    if not references:
        return False
    answer = references[0].strip()
    return len(answer) >= GOLD_MIN_CHARS and text.rstrip().endswith(answer)


def gold_in_prompt(subject: AuditSubject) -> Iterator[Hit]:
    """The right answer, and no other choice, written in the prompt of most rows (a multiple-choice row); the
    prompt ending with the reference answer (a generated one)."""
    samples, texts = subject.samples, subject.prompt_texts
    if len(samples) < GOLD_MIN_ROWS:
        return
    probe = min(len(samples), _PROBE_ROWS)
    hits = [
        i for i in range(probe) if _shows_gold(texts[i], samples[i].choices, samples[i].gold, samples[i].references)
    ]
    if len(hits) < GOLD_IN_PROMPT_SHARE * probe:
        return
    hits += [
        i
        for i in range(probe, len(samples))
        if _shows_gold(texts[i], samples[i].choices, samples[i].gold, samples[i].references)
    ]
    if len(hits) >= GOLD_IN_PROMPT_SHARE * len(samples) and len(hits) >= GOLD_MIN_ROWS:
        first = samples[hits[0]].sample
        where = (
            "holds the right choice's text and no other choice's"
            if samples[hits[0]].choices
            else "ends with the reference answer"
        )
        yield Hit(
            f"the prompt {where} in {len(hits)} of {len(samples)} rows: the model can copy the answer",
            file=first.file or subject.file,
            row=first.row,
            field="prompt",
            sample=first.id,
        )


def constant_prompt(subject: AuditSubject) -> Iterator[Hit]:
    """Every row asks the model the same thing: the template reads no field of the row."""
    samples, texts = subject.samples, subject.prompt_texts
    if len(samples) < 2 or not texts[0].strip() or any(t != texts[0] for t in texts):
        return
    if samples[0].choices and any(s.choices != samples[0].choices for s in samples):
        return  # the same instruction over different choices (a BLiMP-style pair) is a task
    if samples[0].text is not None:
        return
    yield Hit(
        f"all {len(samples)} rows render the same prompt ({texts[0]!r:.60}): the template reads nothing of the row, "
        "so every row gets the same answer",
        file=subject.file,
        line=subject.line("prompt"),
        field="prompt",
    )


RULES = (
    AuditRule(
        "target.coerced",
        "error",
        "The target's '| int' changes a label that is not a whole number (1.5 -> 1, True -> 1) without a word.",
        coerced_target,
    ),
    AuditRule(
        "references.empty",
        "warning",
        "A generated row's reference answer is empty or whitespace: an empty answer matches it.",
        empty_reference,
    ),
    AuditRule(
        "prompt.shows-target",
        "warning",
        "The prompt template reads the field the target's right answer comes from: the model is told the answer.",
        prompt_reads_target,
    ),
    AuditRule(
        "prompt.contains-gold",
        "warning",
        "Most rows' prompts hold the right choice (and no other) or end with the reference: the answer is copied.",
        gold_in_prompt,
    ),
    AuditRule(
        "prompt.constant",
        "warning",
        "Every row renders the same prompt: the template reads nothing of the row.",
        constant_prompt,
    ),
)
