"""Rules over targets and prompts: a label changed on its way in, an empty reference, a prompt that shows the
answer or the same question to every row."""

from __future__ import annotations

import re
from functools import lru_cache
from operator import attrgetter
from typing import TYPE_CHECKING, Iterator, Sequence

from proctor.audit.continuation_rules import prespaced_choices
from proctor.audit.fallback import first_found
from proctor.audit.probe_rows import PROBE_ROWS
from proctor.audit.reference_comparison import comparisons
from proctor.audit.setting_rules import (
    CONTEXT_FIELDS,
    GLUED_SHARE,
    glued_rows,
    scores_one_continuation,
    unspaced_join,
)
from proctor.audit.subject import AuditSubject
from proctor.core.answer_normalisation import SQUAD
from proctor.core.audit import AuditRule, Hit
from proctor.prompts.builder import PreparedSample

if TYPE_CHECKING:
    from jinja2 import nodes

_INTEGER = re.compile(r"^\s*[+-]?\d+\s*$")
_TEMPLATE_GLOBALS = frozenset({"_fail"})  # proctor's own template functions (core/templates.py), not row fields

_FIELDS = attrgetter("fields")


@lru_cache(maxsize=64)
def parsed_template(source: str) -> nodes.Template | None:
    """A template's syntax tree, for the rules that read what it does; None for a template that does not parse
    (compiling it is prepare's job, which names the error)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    try:
        return ImmutableSandboxedEnvironment().parse(source)
    except Exception:  # noqa: BLE001 - a template error is reported where the template is compiled
        return None


def as_template(expression: str) -> str:
    """A data setting's Jinja expression (a filter, a computed field) as a template ``template_fields`` reads; a
    setting written as a template already is left as it is."""
    return expression if "{{" in expression or "{%" in expression else "{{ " + expression + " }}"


@lru_cache(maxsize=64)
def _variables(source: str) -> frozenset[str]:
    """The row fields a template reads (Jinja's undeclared variables); none for a template that does not parse."""
    from jinja2 import meta
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    if parsed_template(source) is None:
        return frozenset()
    # a tree of its own: the code generator it runs folds constants in place ({'A': 0}[key] loses its mapping),
    # and the shared tree is read by the rules that look at what a template writes out
    tree = ImmutableSandboxedEnvironment().parse(source)
    try:  # the code generator it runs refuses a filter the plain environment lacks (proctor's regex_replace)
        names = meta.find_undeclared_variables(tree)
    except Exception:  # noqa: BLE001 - a template error is reported where the template is compiled
        return frozenset()
    return frozenset(names - set(ImmutableSandboxedEnvironment().globals) - _TEMPLATE_GLOBALS)


def template_fields(source: str) -> frozenset[str]:
    """The row fields a template reads (for rules in other modules)."""
    return _variables(source)


@lru_cache(maxsize=64)
def _read_field(source: str) -> tuple[str, tuple[str, ...]] | None:
    """The row field a target template gives as it is, through filters only (``{{ label }}``,
    ``{{ label | round | int }}``): (the field, the filters' names, outermost first); None for anything else."""
    from jinja2 import nodes

    tree = parsed_template(source)
    if tree is None:
        return None
    parts = [n for n in tree.body if not (isinstance(n, nodes.Output) and _blank(n))]
    if len(parts) != 1 or not isinstance(parts[0], nodes.Output) or len(parts[0].nodes) != 1:
        return None
    node = parts[0].nodes[0]
    filters: list[str] = []
    while isinstance(node, nodes.Filter) and node.node is not None:
        filters.append(node.name)
        node = node.node
    return (node.name, tuple(filters)) if isinstance(node, nodes.Name) else None


def _blank(output: nodes.Output) -> bool:
    from jinja2 import nodes

    return all(isinstance(n, nodes.TemplateData) and not n.data.strip() for n in output.nodes)


def answer_key(text: str) -> str:
    """A text as exact match compares it (SQuAD's normalisation, the metric's own: case, ASCII punctuation,
    articles and spacing aside; '。' or an emoji stay, as the metric keeps them)."""
    return SQUAD(text)


def _never_empty(subject: AuditSubject) -> bool:
    """Whether no answer the extraction reads normalises to the empty text but an option letter ('A', read as an
    article, where 'A' is the reference): a regex with no fallback that reads nothing, or one letter, out of the
    texts that normalise to nothing ('-', 'The', '.')."""
    extraction = subject.spec.extraction
    if extraction is None or not extraction.regex or extraction.fallback != "none":
        return False
    try:
        pattern = re.compile(extraction.regex, re.IGNORECASE if extraction.ignore_case else 0)
    except re.error:
        return False
    for text in ("", "-", ".", "The", "the", "an", "a"):
        match = pattern.search(text)
        if match is None:
            continue
        try:
            got = match.group(extraction.group) if extraction.group <= (pattern.groups or 0) else match.group(0)
        except IndexError:
            return False
        if got is not None and not SQUAD(got) and not (len(got.strip()) == 1 and got.strip().isalpha()):
            return False
    return True


def empty_reference(subject: AuditSubject) -> Iterator[Hit]:
    if subject.columns.all_multiple_choice:
        return  # every row has choices: no generated row (a multiple-choice task), told in C
    if subject.spec.no_reference == "scored":  # only such a task keeps a row without references
        bare = next((s for s in subject.samples if not (s.choices or s.text is not None or s.references)), None)
        if bare is not None:
            yield subject.at_row(
                bare.sample,
                "the row gives no reference answer (an empty list): no answer can be right, so every metric scores it "
                "as wrong and counts it (GLM-130B's rule); drop the row to score only the questions with an answer",
                "target",
            )
            return
    if _never_empty(subject):
        return  # 'A' is empty once normalised (an article), but no answer read by the regex is
    # each of the task's own comparisons: lm-eval's exact_match keeps the article 'A' that SQuAD's drops
    compared = comparisons(subject)
    for sample in subject.samples:
        if sample.choices or sample.text is not None:
            continue
        # any one empty reference is matched by an empty answer (a row scores its best-matching reference)
        blank = [(i, c) for i, r in enumerate(sample.references) for c in compared if c.empty(r)]
        if blank:
            i, comparison = blank[0]
            yield subject.at_row(
                sample.sample,
                f"reference {i} is empty ({sample.references[i]!r}) once answers are normalised "
                f"{comparison.how}: an empty or cut-off answer matches it",
                "target",
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
    shown_by = [("prompt", spec.prompt), ("chat.system", spec.chat.system if spec.chat else None)]
    for key, template in shown_by:
        shown = sorted(answer_fields & _variables(template)) if template else []
        if shown:
            yield Hit(
                f"the {key} template shows {', '.join(repr(f) for f in shown)}, the field(s) the target reads the "
                "right answer from: the model is told the answer",
                file=subject.file,
                line=subject.line(key.split(".")[0]),
                field=key,
            )
            return
    if spec.chat and spec.chat.system and spec.kind == "generate":
        from proctor.audit.told_answer_rules import answer_field_shown

        yield from answer_field_shown(subject, "chat.system", _variables(spec.chat.system) - answer_fields)


GOLD_IN_PROMPT_SHARE = 0.5  # a coincidence in some rows is normal; in most, the prompt prints the answer
GOLD_MIN_ROWS = 3
GOLD_MIN_CHARS = 4  # "A", "yes": short answers occur in prompts by chance


def shows_gold(text: str, choices: tuple[str, ...], gold: tuple[int, ...], references: tuple[str, ...]) -> bool:
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


def in_passage(sample: PreparedSample, text: str) -> bool:
    """Whether a multiple-choice row's prompt shows its right choice only inside its passage (reading
    comprehension: the passage holds the answer by design, and the question is which choice it supports)."""
    if not sample.choices:
        return False
    passages = [
        v for k, v in sample.sample.fields.items() if isinstance(v, str) and CONTEXT_FIELDS.match(k) and v in text
    ]
    for passage in passages:
        text = text.replace(passage, "\n")
    return bool(passages) and not shows_gold(text, sample.choices, sample.gold, sample.references)


def gold_text(sample: PreparedSample) -> str:
    """A multiple-choice row's right choice, stripped ('' without exactly one)."""
    return sample.choices[sample.gold[0]].strip() if sample.choices and len(sample.gold) == 1 else ""


def _said_regardless(samples: Sequence[PreparedSample], texts: Sequence[str], probe: int, hits: list[int]) -> set[str]:
    """Right answers that the prompts of the rows where they are wrong show as well ('Is it true?' with choices
    true / false): the template's word, not a leak of the answer."""
    said = set()
    for answer in {gold_text(samples[i]) for i in hits}:
        others = [
            i
            for i in range(probe)
            if gold_text(samples[i]) not in ("", answer) and any(c.strip() == answer for c in samples[i].choices)
        ]
        if others and 2 * sum(answer in texts[i] for i in others) >= len(others):
            said.add(answer)
    return said


def gold_in_prompt(subject: AuditSubject) -> Iterator[Hit]:
    """The right answer, and no other choice, written in the prompt of most rows (a multiple-choice row); the
    prompt ending with the reference answer (a generated one)."""
    samples, texts = subject.samples, subject.prompt_texts
    if len(samples) < GOLD_MIN_ROWS or scores_one_continuation(subject):
        return  # LAMBADA's passage holds its last word by design: the task is to predict it from there
    probe = min(len(samples), PROBE_ROWS)
    hits = [i for i in range(probe) if shows_gold(texts[i], samples[i].choices, samples[i].gold, samples[i].references)]
    hits = [i for i in hits if not in_passage(samples[i], texts[i])]
    if len(hits) < GOLD_IN_PROMPT_SHARE * probe:
        return
    asked = _said_regardless(samples, texts, probe, hits)
    hits = [i for i in hits if gold_text(samples[i]) not in asked]
    if len(hits) < GOLD_IN_PROMPT_SHARE * probe:
        return
    hits += [
        i
        for i in range(probe, len(samples))
        if shows_gold(texts[i], samples[i].choices, samples[i].gold, samples[i].references)
        and not in_passage(samples[i], texts[i])
        and gold_text(samples[i]) not in asked
    ]
    if len(hits) >= GOLD_IN_PROMPT_SHARE * len(samples) and len(hits) >= GOLD_MIN_ROWS:
        first = samples[hits[0]].sample
        where = (
            "holds the right choice's text and no other choice's"
            if samples[hits[0]].choices
            else "ends with the reference answer"
        )
        yield subject.at_row(
            first,
            f"the prompt {where} in {len(hits)} of {len(samples)} rows: the model can copy the answer",
            "prompt",
        )


def constant_prompt(subject: AuditSubject) -> Iterator[Hit]:
    """Every row asks the model the same thing: the template reads no field of the row."""
    samples, texts = subject.samples, subject.prompt_texts
    if len(samples) < 2 or not texts[0].strip() or any(t != texts[0] for t in texts):
        return  # prompt-less pairs (BLiMP) render empty prompts: the choices are the task
    if samples[0].text is not None:
        return
    yield subject.at_line(
        "prompt",
        f"all {len(samples)} rows render the same prompt ({texts[0]!r:.60}): the template reads nothing of the row, "
        "so every row gets the same answer",
        "prompt",
    )


def blank_prompts(subject: AuditSubject) -> Iterator[Hit]:
    """Some rows' prompts are blank and others' are not: those rows are asked nothing (a missing question)."""
    texts = subject.prompt_texts
    # no prompt is blank (nearly every task): answered in C, with no stripped copy made (isspace stops at the
    # first character that is not a space, the first of nearly every prompt)
    if all(texts) and not any(map(str.isspace, texts)):
        return
    blank = [i for i, t in enumerate(texts) if not t.strip() and subject.samples[i].text is None]
    if blank and len(blank) < len(texts):
        first = subject.samples[blank[0]].sample
        yield subject.at_row(
            first,
            f"the prompt is blank in {len(blank)} of {len(texts)} rows, and not in the others: those rows' "
            "answers are scored without a question",
            "prompt",
        )


def glued_answers(subject: AuditSubject) -> Iterator[Hit]:
    """``target_delimiter: ""`` with prompts that end without a space and choices that start with a letter or
    digit: the answer is scored glued to the prompt ("A:Paris")."""
    if not subject.templated:
        return
    delimiter = subject.spec.target_delimiter
    texts = subject.prompt_texts
    if delimiter:
        if delimiter[:1] not in (" ", "\t"):
            return
        probe = texts[:PROBE_ROWS]  # most tasks' prompts end alike: a probe decides before the whole task is read
        doubled = delimiter.startswith("  ") or (
            bool(probe)
            and sum(t[-1:] in (" ", "\t") for t in probe) >= GLUED_SHARE * len(probe)
            and sum(t[-1:] in (" ", "\t") for t in texts) >= GLUED_SHARE * len(texts)
        )
        if doubled:
            yield subject.at_line(
                "target_delimiter",
                f"target_delimiter is {delimiter!r} and the prompts end with a space: each answer follows two "
                "or more spaces ('A:  Paris'), which a model has rarely seen",
                "target_delimiter",
            )
            return
        rows = [(t, s) for t, s in zip(probe, subject.samples) if s.choices and t]
        foreign = [s for t, s in rows if unspaced_join(t, s.choices)]
        if foreign and len(foreign) >= GLUED_SHARE * len(rows):
            yield subject.at_line(
                "target_delimiter",
                f"target_delimiter is {delimiter!r}, and in {len(foreign)} of {len(rows)} rows read the prompt and its "
                "choices are in a script written without spaces (Chinese, Japanese, Thai, ...): each answer is "
                "scored after a space no text of the language has; set target_delimiter: ''",
                "target_delimiter",
            )
        return
    if subject.use_chat:
        return  # the chat template puts the assistant's header (a line break) between prompt and answer
    read, glued = glued_rows(subject)
    if glued and glued >= GLUED_SHARE * read:
        yield subject.at_line(
            "target_delimiter",
            f"target_delimiter is empty, and in {glued} of {read} rows the prompt ends without a space "
            "and every choice starts with a letter or digit: each answer is scored glued to the prompt ('A:Paris')",
            "target_delimiter",
        )


# prompt.contains-gold and prompt.empty are registered by example_rules, which adds what the template's own
# text shows to the checks here
RULES = (
    AuditRule(
        "references.empty",
        "warning",
        "A generated row's reference answer is empty or whitespace (an empty answer matches it), or it has none.",
        empty_reference,
    ),
    AuditRule(
        "prompt.shows-target",
        "warning",
        "The prompt template reads the field the target's right answer comes from: the model is told the answer.",
        prompt_reads_target,
    ),
    AuditRule(
        "prompt.delimiter",
        "warning",
        "target_delimiter is empty and prompts end without a space (answers glued on), or spaces are doubled (a "
        "prompt ending with a space, or choices stored with one, under a space delimiter).",
        first_found(glued_answers, prespaced_choices),
    ),
    AuditRule(
        "prompt.constant",
        "warning",
        "Every row renders the same prompt: the template reads nothing of the row.",
        constant_prompt,
    ),
)
