"""Every instruction of Google's IFEval (the 25 ids AISteer360's ``StrictInstruction`` checks).

``CHECKS[id]`` is ``check(response, **kwargs) -> bool`` with IFEval's rules, including its quirks
(keywords are regular expressions, ``end_checker`` ignores surrounding double quotes, a paragraph
count drops only empty *first and last* paragraphs, ...). Where IFEval draws a random value for a
missing argument, proctor raises instead (a random verdict is no measurement). ``strict`` checks the
response as it is, ``loose`` also its seven variants (first / last line dropped, ``*`` removed), as
IFEval's two evaluation modes do; a blank response follows nothing in either.
"""

from __future__ import annotations

import collections
import inspect
import json
import re
from typing import Callable, Mapping

from proctor.dialects.aisteer import ifeval_text

RELATIONS = ("less than", "at least")
CONSTRAINED_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


def _relation(count: float, relation: str, threshold: float) -> bool:
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
    return count < threshold if relation == "less than" else count >= threshold


def _paragraphs_by_divider(response: str, num_paragraphs: int) -> bool:
    parts = re.split(r"\s?\*\*\*\s?", response)
    count = len(parts)
    for index, part in enumerate(parts):
        if not part.strip():
            if index not in (0, len(parts) - 1):
                return False  # an empty paragraph inside the response
            count -= 1
    return count == num_paragraphs


def _nth_paragraph_first_word(response: str, num_paragraphs: int, nth_paragraph: int, first_word: str) -> bool:
    parts = re.split(r"\n\n", response)
    count = sum(1 for p in parts if p.strip())
    if nth_paragraph > count:
        return False
    paragraph = parts[nth_paragraph - 1].strip()  # IFEval indexes the split list, blanks included
    if not paragraph:
        return False
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    found = ""
    for letter in word:
        if letter in ".,?!'\"":
            break
        found += letter.lower()
    return count == num_paragraphs and found == first_word.lower()


def _postscript(response: str, postscript_marker: str) -> bool:
    marker = postscript_marker.strip()
    if marker == "P.P.S":
        pattern = r"\s*p\.\s?p\.\s?s.*$"
    elif marker == "P.S.":
        pattern = r"\s*p\.\s?s\..*$"
    else:
        pattern = r"\s*" + marker.lower() + r".*$"
    return bool(re.findall(pattern, response.lower(), flags=re.MULTILINE))


def _highlights(response: str) -> int:
    single = [h for h in re.findall(r"\*[^\n\*]*\*", response) if h.strip("*").strip()]
    double = [h for h in re.findall(r"\*\*[^\n\*]*\*\*", response) if h.removeprefix("**").removesuffix("**").strip()]
    return len(single) + len(double)


def _json(response: str) -> bool:
    body = response.strip()
    for prefix in ("```json", "```Json", "```JSON", "```"):  # removed one after the other, as IFEval does
        body = body.removeprefix(prefix)
    body = body.removesuffix("```").strip()
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


def _two_responses(response: str) -> bool:
    kept = []
    parts = response.split("******")
    for index, part in enumerate(parts):
        if not part.strip():
            if index not in (0, len(parts) - 1):
                return False
        else:
            kept.append(part)
    return len(kept) == 2 and kept[0].strip() != kept[1].strip()


def _title(response: str) -> bool:
    return any(t.lstrip("<").rstrip(">").strip() for t in re.findall(r"<<[^\n]+>>", response))


def _quoted(response: str) -> bool:
    text = response.strip()
    return len(text) > 1 and text[0] == '"' and text[-1] == '"'


CHECKS: dict[str, Callable[..., bool]] = {
    "keywords:existence": lambda r, keywords: all(re.search(k, r, flags=re.IGNORECASE) for k in keywords),
    "keywords:frequency": lambda r, keyword, frequency, relation: _relation(
        len(re.findall(keyword.strip(), r, flags=re.IGNORECASE)), relation, frequency
    ),
    "keywords:forbidden_words": lambda r, forbidden_words: not any(
        re.search(r"\b" + w + r"\b", r, flags=re.IGNORECASE) for w in forbidden_words
    ),
    "keywords:letter_frequency": lambda r, letter, let_frequency, let_relation: _relation(
        collections.Counter(r.lower())[letter.strip().lower()], let_relation, let_frequency
    ),
    "language:response_language": lambda r, language: ifeval_text.detected_language(r) in (language, None),
    "length_constraints:number_sentences": lambda r, num_sentences, relation: _relation(
        len(ifeval_text.sentences(r)), relation, num_sentences
    ),
    "length_constraints:number_paragraphs": _paragraphs_by_divider,
    "length_constraints:number_words": lambda r, num_words, relation: _relation(
        len(re.findall(r"\w+", r)), relation, num_words
    ),
    "length_constraints:nth_paragraph_first_word": _nth_paragraph_first_word,
    "detectable_content:number_placeholders": lambda r, num_placeholders: len(re.findall(r"\[.*?\]", r))
    >= num_placeholders,
    "detectable_content:postscript": _postscript,
    "detectable_format:number_bullet_lists": lambda r, num_bullets: (
        len(re.findall(r"^\s*\*[^\*].*$", r, flags=re.MULTILINE)) + len(re.findall(r"^\s*-.*$", r, flags=re.MULTILINE))
    )
    == num_bullets,
    "detectable_format:constrained_response": lambda r: any(o in r.strip() for o in CONSTRAINED_OPTIONS),
    "detectable_format:number_highlighted_sections": lambda r, num_highlights: _highlights(r) >= num_highlights,
    "detectable_format:multiple_sections": lambda r, section_spliter, num_sections: len(
        re.split(r"\s?" + section_spliter.strip() + r"\s?\d+\s?", r)
    )
    - 1
    >= num_sections,
    "detectable_format:json_format": _json,
    "detectable_format:title": _title,
    "combination:two_responses": _two_responses,
    "combination:repeat_prompt": lambda r, prompt_to_repeat: r.strip()
    .lower()
    .startswith(prompt_to_repeat.strip().lower()),
    "startend:end_checker": lambda r, end_phrase: r.strip().strip('"').lower().endswith(end_phrase.strip().lower()),
    "change_case:capital_word_frequency": lambda r, capital_frequency, capital_relation: _relation(
        sum(1 for w in ifeval_text.words(r) if w.isupper()), capital_relation, capital_frequency
    ),
    "change_case:english_capital": lambda r: r.isupper() and ifeval_text.detected_language(r) in ("en", None),
    "change_case:english_lowercase": lambda r: r.islower() and ifeval_text.detected_language(r) in ("en", None),
    "punctuation:no_comma": lambda r: "," not in r,
    "startend:quotation": _quoted,
}


def arguments(instruction_id: str) -> tuple[str, ...]:
    """The keyword arguments an instruction takes (all required)."""
    return tuple(inspect.signature(CHECKS[instruction_id]).parameters)[1:]


def prepare(instruction_id: str, kwargs: Mapping[str, object] | None) -> dict[str, object]:
    """The instruction's arguments with ``None`` values dropped (as AISteer360 does), checked."""
    if instruction_id not in CHECKS:
        raise ValueError(f"unknown IFEval instruction '{instruction_id}'; known: {', '.join(sorted(CHECKS))}")
    given = {k: v for k, v in (kwargs or {}).items() if v is not None}
    expected = arguments(instruction_id)
    unknown = sorted(set(given) - set(expected))
    missing = [k for k in expected if k not in given]
    if unknown:
        raise ValueError(f"instruction '{instruction_id}' takes no argument(s) {unknown}; it takes {list(expected)}")
    if missing:
        raise ValueError(
            f"instruction '{instruction_id}' needs argument(s) {missing} (IFEval would draw them at random)"
        )
    return given


def strict(response: str | None, instruction_id: str, kwargs: Mapping[str, object] | None) -> bool:
    """IFEval's strict verdict: the response as generated."""
    arguments_ = prepare(instruction_id, kwargs)
    if response is None or not response.strip():
        return False
    return bool(CHECKS[instruction_id](response, **arguments_))


def loose_variants(response: str) -> list[str]:
    """IFEval's loose mode tries the response, without its first / last / both lines, each also without ``*``."""
    lines = response.split("\n")
    trimmed = ["\n".join(lines[1:]).strip(), "\n".join(lines[:-1]).strip(), "\n".join(lines[1:-1]).strip()]
    return [response, response.replace("*", ""), *trimmed, *(t.replace("*", "") for t in trimmed)]


def loose(response: str | None, instruction_id: str, kwargs: Mapping[str, object] | None) -> bool:
    """IFEval's loose verdict: followed by any of ``loose_variants`` that is not blank."""
    arguments_ = prepare(instruction_id, kwargs)
    if response is None:
        return False
    check = CHECKS[instruction_id]
    return any(v.strip() and check(v, **arguments_) for v in loose_variants(response))


class Instruction:
    """One instruction with IFEval's object interface (``instructions_registry.INSTRUCTION_DICT[id](id)``,
    ``build_description(**kwargs)``, ``get_instruction_args()``, ``check_following(response)``)."""

    def __init__(self, instruction_id: str) -> None:
        if instruction_id not in CHECKS:
            raise ValueError(f"unknown IFEval instruction '{instruction_id}'")
        self.id = instruction_id
        self._kwargs: dict[str, object] | None = None

    def build_description(self, **kwargs: object) -> str:
        self._kwargs = prepare(self.id, kwargs)
        return f"{self.id} {self._kwargs}"

    def get_instruction_args(self) -> dict[str, object] | None:
        return dict(self._kwargs) if self._kwargs else None

    def get_instruction_args_keys(self) -> list[str]:
        return list(arguments(self.id))

    def check_following(self, value: str) -> bool:
        if self._kwargs is None:
            raise ValueError(f"call build_description() before check_following() ('{self.id}')")
        return bool(CHECKS[self.id](value, **self._kwargs))


INSTRUCTION_DICT: dict[str, type[Instruction]] = {i: Instruction for i in CHECKS}
