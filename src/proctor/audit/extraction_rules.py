"""Rules over how a generated answer is read back (``extraction``): settings under which the answer the model
writes can never be extracted, or under which anything at all is extracted as a parsed answer.

``generation_rules.py`` holds the first two extraction rules (a regex no reference matches, a tag no prompt
asks for); these look at what the model's text will look like: it starts after the prompt (a space after
"A:"), it stops at the stop strings, and a pattern that matches nothing still matches the empty text.
"""

from __future__ import annotations

import re
from typing import Iterator, Sequence

from proctor.audit import answer_shapes
from proctor.audit.setting_rules import generation_settings
from proctor.audit.subject import AuditSubject
from proctor.audit.target_rules import answer_key
from proctor.core.audit import AuditRule, Hit
from proctor.core.bounded_regex import BoundedPattern, RegexTooSlow
from proctor.core.task_spec import ExtractionSpec

PROBE_REFERENCES = 50  # references a pattern is tried on: enough to see what answers look like


def _generated_references(subject: AuditSubject) -> list[str]:
    if not subject.templated or subject.spec.kind != "generate":
        return []
    return [r for s in subject.samples[:PROBE_REFERENCES] for r in s.references if r.strip()]


def extraction_pattern(subject: AuditSubject) -> BoundedPattern | None:
    """The task's extraction regex, searched with the time bound; None without one (or with one the spec's own
    check refuses)."""
    extraction = subject.spec.extraction
    if extraction is None or not extraction.regex:
        return None
    try:
        return BoundedPattern(extraction.regex, extraction.ignore_case)
    except Exception:  # noqa: BLE001 - the spec's own check names a bad pattern
        return None


def matches_empty(subject: AuditSubject) -> Iterator[Hit]:
    """``(\\d*)`` finds its empty match at the start of any text: every answer is 'parsed', most as ''."""
    pattern = extraction_pattern(subject)
    if pattern is None or not _generated_references(subject):
        return
    try:
        match = pattern.search("")
    except RegexTooSlow:
        return
    if match is not None:
        yield subject.at_line(
            "extraction",
            f"the extraction regex {pattern.source!r} matches the empty text: an answer without what it looks for is "
            "extracted as '' and counted as parsed (null_count stays 0); make the group need at least one character "
            "(+ rather than *)",
            "extraction.regex",
        )


def anchored_at_start(subject: AuditSubject) -> Iterator[Hit]:
    """``^(\\d+)`` on answers that begin with the space after 'A:': no answer is ever read."""
    pattern = extraction_pattern(subject)
    references = _generated_references(subject)
    if pattern is None or not references or not pattern.source.startswith("^"):
        return
    if any(t and t[-1].isspace() for t in subject.prompt_texts[:PROBE_REFERENCES]):
        return  # the prompt ends with the space itself: answers start at the word
    try:
        bare = any(pattern.search(r.strip()) for r in references)
        spaced = any(pattern.search(" " + r.strip()) for r in references)
    except RegexTooSlow:
        return
    if bare and not spaced:
        yield subject.at_line(
            "extraction",
            f"the extraction regex {pattern.source!r} is anchored at the start of the answer, which begins with a "
            "space (the prompt ends without one, and the model writes it): it matches the references but no answer "
            "written after the prompt; start it with ^\\s*",
            "extraction.regex",
        )


ROUND_TRIP_ROWS = 1000  # rows whose references are read back: each one a row scored 0 whatever the model says


def _read_back(pattern: BoundedPattern, group: int, reference: str) -> str | None:
    """What the extraction reads out of ``reference`` written as the model's answer (None: nothing)."""
    match = pattern.search(" " + reference.strip())
    found = match.group(group) if match else None
    return found.strip() if isinstance(found, str) else None


_LETTER = re.compile(r"[A-Za-z]")
# how an answer of one letter is written: a letter class without a word boundary reads a capital of these first
LETTER_ANSWERS = ("Answer: {}", "According to the text, the answer is {}.", "Based on this, {}")


def letter_inside_words(subject: AuditSubject) -> Iterator[Hit]:
    """References of one letter (options A to D) read by a regex that also matches a letter inside a word: the
    'A' of 'Answer: C' or 'According to ...' is extracted first."""
    extraction = subject.spec.extraction
    pattern = extraction_pattern(subject)
    if pattern is None or extraction is None or extraction.answer_tag or subject.spec.kind != "generate":
        return  # with an answer tag, the regex reads what follows the tag
    letters = sorted({r.strip() for s in subject.samples[:ROUND_TRIP_ROWS] for r in s.references if r.strip()})
    if not letters or not all(_LETTER.fullmatch(r) for r in letters):
        return
    try:
        for written in LETTER_ANSWERS:
            for letter in letters:
                text = " " + written.format(letter)
                back = _read_back(pattern, extraction.group, text)
                if back is not None and answer_key(back) != answer_key(letter):
                    yield subject.at_line(
                        "extraction",
                        f"the extraction regex {pattern.source!r} reads {back!r} out of the answer {text.strip()!r}: "
                        "it matches a letter inside a word, so the first capital of an answer that says more than "
                        "its letter is taken for it; bound the letter (\\b([A-D])\\b)",
                        "extraction.regex",
                    )
                    return
    except RegexTooSlow:
        return


def cuts_references(subject: AuditSubject) -> Iterator[Hit]:
    """The regex matches a reference but extracts another part of it ('2,125' read as '2', the number at the end
    of a worked solution): an answer written as the reference is scored wrong."""
    extraction = subject.spec.extraction
    pattern = extraction_pattern(subject)
    if pattern is None or extraction is None or extraction.answer_tag or subject.spec.kind != "generate":
        return
    cut: list[tuple[int, str, str]] = []  # (sample position, reference, what is read back)
    read = 0
    try:
        for i, sample in enumerate(subject.samples[:ROUND_TRIP_ROWS]):
            tried = [(r, _read_back(pattern, extraction.group, r)) for r in sample.references if r.strip()]
            # a reference the regex does not match at all is written in another form than the answer (which
            # follows 'Answer:'): extraction.never-matches speaks of those
            back = [(r, b) for r, b in tried if b is not None]
            if not back:
                continue
            read += 1
            if all(answer_key(b) != answer_key(r) for r, b in back):
                cut.append((i, back[0][0], back[0][1]))
    except RegexTooSlow:
        return  # reported where the pattern is searched for the first time (extraction.never-matches)
    if cut:
        i, reference, shown = cut[0]
        yield subject.at_row(
            subject.samples[i].sample,
            f"the extraction regex {pattern.source!r} reads {shown!r:.30} out of the reference {reference!r:.50} "
            f"({len(cut)} of the {read} rows whose references it matches): an answer written as the reference is "
            "scored wrong; the regex should capture the whole answer, or the reference be the part it captures",
            "extraction.regex",
        )
        return
    if any(anchored_at_start(subject)):
        return  # no answer after the prompt's space is read at all: extraction.anchored says so
    yield from _misreads_shaped_answers(subject, pattern, extraction)


SHAPED_ROWS = 200  # rows whose references are written in a model's shapes


def _misreads_shaped_answers(
    subject: AuditSubject, pattern: BoundedPattern, extraction: ExtractionSpec
) -> Iterator[Hit]:
    """The reference written as a model writes it (after the reasoning a step-by-step prompt asks for, as the
    prompt offers it, capitalised, with a full stop): read as another number, or not at all, in most rows."""
    rows = [(i, s.references) for i, s in enumerate(subject.samples[:SHAPED_ROWS]) if s.references]
    settings = generation_settings(subject)
    stops = [s for s in settings.stop if s] if settings else []
    prefix, suffix = subject.fixed_text
    shape_plan = answer_shapes.plan(
        subject.prompt_texts, prefix + suffix, [r for _, refs in rows for r in refs], pattern.source
    )
    probed = [r for _, refs in rows[: answer_shapes.PROMPTS_READ] for r in refs]
    try:
        if not any(pattern.search(r) for r in probed) and not answer_shapes.reads_some_shape(
            shape_plan, probed, pattern, extraction.group
        ):
            return  # it matches no reference in any form: extraction.never-matches says so
    except RegexTooSlow:
        return

    def score(_: int, text: str, references: Sequence[str]) -> tuple[object, bool]:
        for stop in stops:  # generation ends at a stop string, which the answer does not keep
            text = text.split(stop, 1)[0]
        match = pattern.search(text)
        found = match.group(extraction.group) if match else None
        if isinstance(found, str):
            value: str | None = found.strip() if extraction.strip else found
        else:  # no match, or the group took no part in it: the fallback
            value = (text.strip() if extraction.strip else text) if extraction.fallback == "full" else None
        return value, value is not None and any(answer_key(value) == answer_key(r) for r in references)

    try:
        misread = answer_shapes.first_misread(shape_plan, rows, score)
    except RegexTooSlow:
        return
    if misread is not None:
        yield subject.at_row(
            subject.samples[misread.position].sample,
            f"the extraction regex {pattern.source!r} (group {extraction.group}, fallback {extraction.fallback}) "
            f"misreads answers shaped as a model writes them: {answer_shapes.describe(misread)}: a right answer "
            f"is scored wrong; {misread.hint}",
            "extraction.regex",
        )


def tag_cut_or_given(subject: AuditSubject) -> Iterator[Hit]:
    """An answer tag the model never writes: a stop string ends the answer at it, or the prompt has written it."""
    extraction = subject.spec.extraction
    tag = extraction.answer_tag if extraction else None
    if not tag or not _generated_references(subject):
        return
    settings = generation_settings(subject)
    stops = [s for s in settings.stop if s] if settings else []
    cutting = next((s for s in stops if s in tag), None)
    if cutting is not None and settings is not None:
        yield subject.at_line(
            settings.key,
            f"the stop string {cutting!r} occurs in the answer tag {tag!r}: generation ends where the tag would begin, "
            "so no answer holds the tag and none is read",
            settings.stop_field,
        )
        return
    texts = subject.prompt_texts[:PROBE_REFERENCES]
    if texts and all(t.rstrip().endswith(tag.rstrip()) for t in texts):
        yield subject.at_line(
            "extraction",
            f"every prompt ends with the answer tag {tag!r}: the model's text starts after it and does not write it "
            "again, so the answer is read after a tag that is not there (give the tag in the instructions, not at "
            "the end of the prompt, or leave answer_tag out)",
            "extraction.answer_tag",
        )


RULES = (
    AuditRule(
        "extraction.cuts-reference",
        "warning",
        "The extraction regex matches a reference but reads another part of it ('2,125' as '2'), or misreads the "
        "reference written as a model writes it (after reasoning, as the prompt offers it): a right answer is scored "
        "wrong.",
        cuts_references,
    ),
    AuditRule(
        "extraction.letter-in-word",
        "warning",
        "References of one letter, read by a regex that also matches a letter inside a word: the 'A' of 'Answer: C' "
        "is extracted.",
        letter_inside_words,
    ),
    AuditRule(
        "extraction.matches-empty",
        "warning",
        "The extraction regex matches the empty text: every answer counts as parsed, most of them as ''.",
        matches_empty,
    ),
    AuditRule(
        "extraction.anchored",
        "warning",
        "The extraction regex is anchored with ^ while answers begin with the space after the prompt: nothing is read.",
        anchored_at_start,
    ),
    AuditRule(
        "extraction.tag-unwritten",
        "warning",
        "The answer tag is cut off by a stop string, or ends every prompt: the model's text never holds it.",
        tag_cut_or_given,
    ),
)
