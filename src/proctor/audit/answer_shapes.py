"""Answers shaped as a model writes them, built around each reference: what the extraction rules try besides the
reference itself (``extraction.cuts-reference``, lm-eval's ``lmeval.filter-cuts-reference``).

A regex tried on the reference '18' alone passes where the model's '... 3 + 7 = 10. The answer is 18.' is read
as '3' (a first-number regex under a step-by-step prompt), 'Yes' (as the prompt offers it) is not read by a
case-sensitive ``\\b(yes|no)\\b`` and '18.' not by ``(-?\\d+)$``. Which shapes are tried follows the prompt, so
that a right regex is never named for an answer no model is asked to write:

- a prompt that asks for reasoning or for an answer phrase (step by step, 'The answer is', in every prompt read)
  gets one shape: a sentence of reasoning holding other numbers, then the phrase the prompt uses ('The answer is'
  where it names none) and the reference; none where the regex reads after a marker of its own ('#### ',
  '<answer>') the prompt does not spell as a phrase. A model so asked writes no bare answer.
- any other prompt gets the short shapes: the reference capitalised, in the case the template's own text offers
  it ('Answer Yes or No.'), with a full stop, between a space and a line break; and 'The answer is <ref>.' where
  the regex itself looks for 'answer is'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from proctor.audit.target_rules import answer_key
from proctor.core.bounded_regex import BoundedPattern, RegexTooSlow

REASONING = "First, 3 + 7 = 10, and 10 - 4 = 6."  # numbers no reference of a row is likely to be all of
SHORT_WORDS = 5  # references of more words are worked answers already: the reference itself is model-shaped
PROMPTS_READ = 20  # prompts that must all ask for reasoning: a cue in a row's own text is in a few of them only
OFFERED_LABELS = 20  # distinct references at most for the template's text to be searched for their spellings
MISREAD_SHARE = 0.5  # of the rows tried: a shape that fails in most rows is the settings', not a row's

_ASKS_REASONING = re.compile(
    r"step[- ]by[- ]step|\bthink\b|\breasoning\b|\bexplain\b|show (?:your|the) work|\banswer is\b", re.IGNORECASE
)
_PHRASE = re.compile(r"\b(?:so )?the (?:final )?answer is\b", re.IGNORECASE)
_LITERAL_END = re.compile(r"[\\()\[\].^$*+?{}|]")
_END_PUNCTUATION = ".!?。"


def literal_prefix(source: str) -> str:
    """The literal text a regex starts with ('The answer is ' of ``The answer is (\\d+)``; '' for ``(\\d+)``)."""
    source = source.lstrip("^")
    end = _LITERAL_END.search(source)
    return source[: end.start() if end else len(source)]


def literal_suffix(source: str) -> str:
    """The literal text a regex ends with after its last group ('</answer>' of ``<answer>(.*?)</answer>``)."""
    tail = source.rstrip("$")[source.rstrip("$").rfind(")") + 1 :]
    return tail if ")" in source and not _LITERAL_END.search(tail) else ""


@dataclass(frozen=True)
class Shape:
    name: str  # how a message names it
    text: str  # the answer as the model writes it (after the prompt)
    hint: str  # what a regex that reads it does


@dataclass(frozen=True)
class ShapePlan:
    """Which shapes a task's prompts ask for: the phrase ending reasoning (None: the prompt asks for a short
    answer), the spellings the template offers each reference in, whether the regex looks for 'answer is'."""

    reasoning: bool  # the prompt asks for reasoning or an answer phrase: no bare answer is tried
    reasoning_phrase: str | None  # the phrase that ends the reasoning (None: nothing the prompt asks for)
    closing: str  # what follows the answer: a full stop, or the regex's own closing marker ('</answer>')
    offered: dict[str, tuple[str, ...]]
    phrase_in_regex: bool

    def shapes(self, reference: str) -> list[Shape]:
        ref = reference.strip()
        if not ref or len(ref.split()) > SHORT_WORDS:
            return []
        if self.reasoning:
            if self.reasoning_phrase is None:
                return []
            return [
                Shape(
                    "after a sentence of reasoning",
                    f" {REASONING} {self.reasoning_phrase}{ref}{self.closing}",
                    "read the answer after the phrase the prompt asks for, or the last number, not the first",
                )
            ]
        shapes = [
            Shape("as the prompt offers it", f" {form}", "match it in any case (ignore_case)")
            for form in self.offered.get(ref.casefold(), ())
        ]
        upper = capitalised(ref)
        if upper is not None:
            shapes.append(Shape("capitalised", f" {upper}", "match it in any case (ignore_case)"))
        if ref[-1] not in _END_PUNCTUATION:
            shapes.append(Shape("with a full stop", f" {ref}.", "let the answer end with punctuation (no bare $)"))
        shapes.append(Shape("followed by a line break", f" {ref}\n", "let the answer end with whitespace"))
        if self.phrase_in_regex:
            shapes.append(
                Shape("after 'The answer is'", f" The answer is {ref}.", "make the group read the answer itself")
            )
        return shapes


def plan(prompts: Sequence[str], template_text: str, references: Sequence[str], regex: str) -> ShapePlan:
    """What the prompts ask the model to write: ``prompts`` the first rows' prompts (few-shot examples included),
    ``template_text`` the text every prompt shares (the template's own: a row's question offers nothing)."""
    read = [p for p in prompts[:PROMPTS_READ] if p]
    phrase: str | None = None
    closing = "."
    reasoning = bool(read) and all(_ASKS_REASONING.search(p) for p in read)
    if reasoning:
        found = list(_PHRASE.finditer(read[0]))
        if found:
            phrase = found[-1].group() + " "  # as the prompt (or its examples) writes it, the last time
        elif len(literal_prefix(regex).strip()) < 4:
            phrase = "The answer is "  # a regex with no marker of its own: the phrase most models write
        elif literal_prefix(regex).strip().casefold() in read[0].casefold():
            phrase = literal_prefix(regex)  # the regex's own marker, which the prompt asks for ('#### ', '<answer>')
            closing = literal_suffix(regex) or "."
        # else a marker the prompt does not ask for: tag-not-asked and never-matches speak of it
    return ShapePlan(
        reasoning, phrase, closing, offered_spellings(template_text, references), "answer is" in regex.casefold()
    )


def offered_spellings(template_text: str, references: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The spellings the template's own text offers a small label set in, other than the references' own
    ('Answer Yes or No.' offers 'Yes' and 'No' for 'yes' and 'no'), by the label's casefolded text."""
    labels = {r.strip() for r in references if r.strip()}
    offered: dict[str, tuple[str, ...]] = {}
    if len(labels) > OFFERED_LABELS or not template_text:
        return offered
    for label in labels:
        forms = {
            m.group()
            for m in re.finditer(rf"(?<!\w){re.escape(label)}(?!\w)", template_text, re.IGNORECASE)
            if m.group() != label
        }
        if forms:
            offered[label.casefold()] = tuple(sorted(forms))
    return offered


def capitalised(reference: str) -> str | None:
    """The reference as it starts a sentence ('Yes' of 'yes'); None where that is the reference itself."""
    ref = reference.strip()
    return f"{ref[0].upper()}{ref[1:]}" if ref and ref[0].upper() != ref[0] else None


@dataclass(frozen=True)
class Misread:
    """A shape that scores 0 in most rows tried: the first such row's position, text and what was read."""

    shape: str
    hint: str
    position: int
    reference: str
    text: str
    read: object  # what the extraction gives the metric (None: nothing, the answer is unparsed)
    count: int
    tried: int


def first_misread(
    shape_plan: ShapePlan,
    rows: Sequence[tuple[int, Sequence[str]]],
    score: Callable[[int, str, Sequence[str]], tuple[object, bool]],
) -> Misread | None:
    """The first shape that ``score`` (the row's position, the answer text and the row's references -> what is
    read, whether it scores) finds wrong in ``MISREAD_SHARE`` of the rows it is tried on or more."""
    failed: dict[str, list[tuple[int, str, str, object]]] = {}
    hints: dict[str, str] = {}
    tried: dict[str, int] = {}
    order: list[str] = []
    for position, references in rows:
        reference = next((r for r in references if r.strip()), "")
        for shape in shape_plan.shapes(reference):
            if shape.name not in tried:
                order.append(shape.name)
                hints[shape.name] = shape.hint
            tried[shape.name] = tried.get(shape.name, 0) + 1
            read, right = score(position, shape.text, references)
            if not right:
                failed.setdefault(shape.name, []).append((position, reference, shape.text, read))
    for name in order:
        misses = failed.get(name, [])
        if misses and len(misses) >= MISREAD_SHARE * tried[name]:
            position, reference, text, read = misses[0]
            return Misread(name, hints[name], position, reference, text, read, len(misses), tried[name])
    return None


def describe(misread: Misread) -> str:
    """ "the answer '... The answer is 18.' (the reference '18' after a sentence of reasoning) is read as '3' and
    scored 0, in 39 of the 40 rows tried"."""
    read = "nothing (the answer is unparsed)" if misread.read is None else f"{misread.read!r:.40}"
    return (
        f"the answer {misread.text.strip()!r:.90} (the reference {misread.reference!r:.30} {misread.shape}) is read "
        f"as {read} and scored 0, in {misread.count} of the {misread.tried} rows tried"
    )


def reads_some_shape(shape_plan: ShapePlan, references: Sequence[str], pattern: BoundedPattern, group: int) -> bool:
    """Whether the regex reads a reference out of a shape the prompt asks the model to write it in ('... So the
    answer is 18.' for a lookbehind, '<answer>18</answer>', 'Yes' as offered): a regex that matches no bare
    reference is then meant for that answer (``extraction.never-matches`` stays silent)."""
    try:
        for reference in references:
            for shape in shape_plan.shapes(reference):
                match = pattern.search(shape.text)
                found = match.group(group) if match else None
                if isinstance(found, str) and answer_key(found) == answer_key(reference):
                    return True
    except RegexTooSlow:
        return False
    return False
