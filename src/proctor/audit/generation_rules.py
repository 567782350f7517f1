"""Rules over what a generated answer can be: stop strings and token limits that cut every reference, and
texts damaged on their way in."""

from __future__ import annotations

import re
from typing import Iterator

from proctor.audit import answer_shapes
from proctor.audit.answer_shapes import capitalised, offered_spellings
from proctor.audit.extraction_rules import extraction_pattern
from proctor.audit.metric_rules import metric_names
from proctor.audit.perplexity_rules import markup_texts
from proctor.audit.sampling_rules import epochs_under_greedy, one_sample_of_chance
from proctor.audit.setting_rules import generation_settings, lmeval_config
from proctor.audit.stop_shape_rules import answer_after_break, reasoning_cut, run_on_not_stopped
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit
from proctor.core.bounded_regex import BoundedPattern, RegexTooSlow
from proctor.core.errors import TaskDefinitionError

CUT_SHARE = 0.2  # a stop string inside this share of the references cuts answers the task counts as right
SHORT_SHARE = 0.1  # of the rows: a word is at least one token, so each of these rows is certainly cut


def _generated(subject: AuditSubject) -> list[tuple[int, tuple[str, ...]]]:
    """(sample position, references) of each generated row with references (a templated task's own settings)."""
    if not subject.templated or subject.spec.kind != "generate":
        return []
    return [(i, s.references) for i, s in enumerate(subject.samples) if s.references]


def _answers(subject: AuditSubject) -> list[tuple[int, tuple[str, ...]]]:
    """(sample position, references) of each row with references, whichever dialect built them."""
    return [(i, s.references) for i, s in enumerate(subject.samples) if s.references]


SPELLING_ROWS = 1000  # rows whose references make the label set the template's text is searched for


def _spellings(reference: str, offered: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The reference as the data writes it and as a model writes it (capitalised, as the template offers it)."""
    upper = capitalised(reference)
    return (reference, *offered.get(reference.casefold(), ()), *((upper,) if upper else ()))


def stop_inside_answers(subject: AuditSubject) -> Iterator[Hit]:
    settings = generation_settings(subject)
    rows = _answers(subject) if settings is not None else []
    if settings is None or not rows:
        return
    stops = [stop for stop in settings.stop if stop]
    for stop in stops:
        if not stop.strip() and (" " in stop or "\t" in stop):  # answers start with a space after "A:"
            yield subject.at_line(
                settings.key,
                f"the stop string {stop!r} is a space: a generated answer (which starts with one after 'A:', and "
                "has one between its words) ends at once or after its first word",
                settings.stop_field,
            )
            return
    # a row is cut when one stop string occurs inside every reference, as the data writes it or as a model writes
    # it (capitalised, or in the case the template offers it: 'Answer Yes or No.' under stop 'No'); several stops
    # together can cut most rows (lm-eval's until: ['P', 'B', ...]) where none alone reaches the share
    prefix, suffix = subject.fixed_text
    offered = offered_spellings(prefix + suffix, [r for _, refs in rows[:SPELLING_ROWS] for r in refs])
    cut: list[tuple[int, str]] = []
    for i, refs in rows:
        spelt = [_spellings(r.strip(), offered) for r in refs]
        cutting = next((s for s in stops if all(any(s in w for w in ws) for ws in spelt)), "")
        if cutting:
            cut.append((i, cutting))
    if not cut or len(cut) < CUT_SHARE * len(rows):
        # no reference holds a stop: the answer as the prompt asks for it may (reasoning lines, a line break)
        yield from [*reasoning_cut(subject, settings), *answer_after_break(subject, settings)][:1]
        return
    if cut:
        first = subject.samples[cut[0][0]].sample
        named = sorted({stop for _, stop in cut}, key=[s for _, s in cut].index)
        which = (
            f"the stop string {named[0]!r}"
            if len(named) == 1
            else f"the stop strings {', '.join(map(repr, named[:5]))}"
        )
        example = subject.samples[cut[0][0]].references[0].strip()
        written = next((w for w in _spellings(example, offered) if cut[0][1] in w), example)
        how = f", which a model writes {written!r:.40}" if written != example else ""
        yield Hit(
            f"{which} occur{'s' if len(named) == 1 else ''} inside the reference answers of {len(cut)} of "
            f"{len(rows)} rows, as the data or a model writes them (e.g. {example!r:.40}{how}): generation ends "
            "there, so those answers can never be given whole",
            file=subject.file,
            line=subject.line(settings.key),
            field=settings.stop_field,
            sample=first.id,
        )


def limit_below_answers(subject: AuditSubject) -> Iterator[Hit]:
    settings = generation_settings(subject)
    rows = _answers(subject) if settings is not None else []
    if settings is None or settings.max_tokens is None or not rows:
        return
    limit = settings.max_tokens
    # a word is at least one token: a limit below the shortest reference's words (and the answer tag the model
    # must write before it) cannot give it
    short = [i for i, refs in rows if settings.tag_words + min(len(r.split()) for r in refs) > limit]
    if short and len(short) >= SHORT_SHARE * len(rows):
        tag = f" after the answer tag ({settings.tag_words} word(s))" if settings.tag_words else ""
        yield subject.at_line(
            settings.key,
            f"{settings.max_field.rsplit('.', 1)[-1]} is {limit}, and the shortest reference of {len(short)} of "
            f"{len(rows)} rows{tag} has more words than that (e.g. {subject.samples[short[0]].references[0]!r:.40}): "
            "those answers are cut before they can match",
            settings.max_field,
        )


def min_at_max(subject: AuditSubject) -> Iterator[Hit]:
    generation = subject.spec.generation
    if _generated(subject) and generation.min_tokens and generation.min_tokens >= generation.max_tokens:
        yield subject.at_line(
            "generation",
            f"min_tokens ({generation.min_tokens}) is not below max_tokens ({generation.max_tokens}): the end of "
            "the answer is banned until the limit, so every answer runs on past its end",
            "generation.min_tokens",
        )


WHOLE_ANSWER_METRICS = frozenset({"exact_match", "f1", "em"})  # compare the whole extracted text
SHORT_ANSWER_WORDS = 5  # references of at most this many words (median) are short answers
RUN_ON = 4  # a token limit this many times the longest reference's words (and a few more) lets answers run on


def _extracts(subject: AuditSubject) -> bool:
    """Whether the answer is read out of the model's text (a regex, an answer tag, lm-eval's filters)."""
    extraction = subject.spec.extraction
    if extraction is not None and (extraction.regex or extraction.answer_tag):
        return True
    return bool(getattr(lmeval_config(subject), "filter_list", None))


def unbounded_answers(subject: AuditSubject) -> Iterator[Hit]:
    """No stop string and no extraction while exact match compares the whole text with short references: a model
    that goes on after its answer (a base model writes the next question) scores 0 in every row."""
    settings = generation_settings(subject)
    if settings is not None and settings.stop:
        yield from run_on_not_stopped(subject, settings)  # stop strings the next question's cue does not hold
        return
    if settings is None or settings.max_tokens is None or _extracts(subject):
        return
    # GLM-130B names them EM and F1
    if subject.use_chat or not WHOLE_ANSWER_METRICS & {name.lower() for name in metric_names(subject)}:
        return  # a chat model's reply ends at its end of turn; other metrics read answers otherwise
    rows = _answers(subject)[:NGRAM_PROBE]
    words = sorted(max(len(r.split()) for r in refs) for _, refs in rows)
    if not words or words[len(words) // 2] > SHORT_ANSWER_WORDS or settings.max_tokens < RUN_ON * (words[-1] + 2):
        return
    yield subject.at_line(
        settings.key,
        f"nothing ends an answer before {settings.max_tokens} tokens (no stop string, no extraction), and exact "
        f"match compares the whole text with references of {words[len(words) // 2]} word(s) (median): a model "
        "that goes on after its answer (a base model writes the next question) scores 0 however right it is; give "
        "a stop string (a newline) or an extraction",
        settings.stop_field,
    )


NGRAM_PROBE = 200  # rows read for the n-gram ban: a task's answers are spans of its prompts in most rows or few
NGRAM_SHARE = 0.2  # of those rows whose answer repeats n words of the prompt: the ban costs those answers


def _repeats_ngram(reference: str, prompt: str, n: int) -> bool:
    """Whether ``reference`` holds n words in a row that the prompt holds too (each word is a token at least)."""
    words = reference.split()
    if len(words) < n:
        return False
    return any(" ".join(words[i : i + n]) in prompt for i in range(len(words) - n + 1))


def ngram_ban_on_answers(subject: AuditSubject) -> Iterator[Hit]:
    """``no_repeat_ngram_size`` bans any n tokens in a row already in the sequence, and the sequence is the
    prompt and the answer: an answer copied from the prompt (a span of a passage) cannot be written."""
    n = subject.spec.generation.no_repeat_ngram_size
    rows = _generated(subject)[:NGRAM_PROBE] if n else []
    if not rows:
        return
    texts = subject.prompt_texts
    copied = [i for i, refs in rows if all(_repeats_ngram(r, " ".join(texts[i].split()), n) for r in refs)]
    if copied and len(copied) >= NGRAM_SHARE * len(rows):
        yield subject.at_line(
            "generation",
            f"no_repeat_ngram_size is {n}: no {n} tokens in a row may repeat what the prompt holds, and the reference "
            f"answers of {len(copied)} of {len(rows)} rows repeat {n} words of their prompt (e.g. "
            f"{subject.samples[copied[0]].references[0]!r:.40}): those answers cannot be written as they are",
            "generation.no_repeat_ngram_size",
        )


_LITERAL_END = re.compile(r"[\\()\[\].^$*+?{}|]")
PHRASE_CHARS = 4  # a phrase the prompt asks for ('The answer is'), not a letter it holds by chance
PHRASE_PROBE = 50  # references tried after the phrase


def _asked_phrase_reads(pattern: BoundedPattern, subject: AuditSubject, references: list[str]) -> bool:
    """Whether the regex starts with a phrase the prompt asks the model to write ('The answer is N'), and reads the
    references out of that phrase: the regex is meant for the model's answer, not for the bare reference."""
    source = pattern.source.lstrip("^")
    end = _LITERAL_END.search(source)
    phrase = source[: end.start() if end else len(source)]
    texts = subject.prompt_texts
    if len(phrase.strip()) < PHRASE_CHARS or not texts or phrase.strip().lower() not in texts[0].lower():
        return False
    try:
        return any(pattern.search(phrase + r.strip()) for r in references[:PHRASE_PROBE])
    except RegexTooSlow:
        return False


def regex_misses_references(subject: AuditSubject) -> Iterator[Hit]:
    extraction = subject.spec.extraction
    rows = _generated(subject)
    if extraction is None or not extraction.regex or not rows:
        return
    pattern = extraction_pattern(subject)
    if pattern is None:
        return
    try:
        matched = any(pattern.search(r) for _, refs in rows for r in refs)
    except RegexTooSlow as exc:  # every answer of a run would meet it: an error now, not a stalled run later
        raise TaskDefinitionError(
            f"extraction: {exc}", file=subject.file, line=subject.line("extraction"), field="extraction.regex"
        ) from None
    references = [r for _, refs in rows for r in refs]
    if matched or _asked_phrase_reads(pattern, subject, references):
        return
    prefix, suffix = subject.fixed_text
    probed = references[:PHRASE_PROBE]
    shape_plan = answer_shapes.plan(subject.prompt_texts, prefix + suffix, probed, pattern.source)
    if not answer_shapes.reads_some_shape(shape_plan, probed, pattern, extraction.group):
        yield subject.at_line(
            "extraction",
            f"the extraction regex {extraction.regex!r} matches none of the reference answers (e.g. "
            f"{rows[0][1][0]!r:.40}): an answer shaped like the references is never extracted",
            "extraction.regex",
        )


# text decoded in the wrong encoding (UTF-8 read as Latin-1 / cp1252), and the replacement character
_MOJIBAKE = re.compile("\ufffd|Ã[\u0080-\u00bf]|â€[\u0080-\u00bf\u2018-\u201e\u2122]|Â[\u00a0-\u00bf]")


def damaged_text(subject: AuditSubject) -> Iterator[Hit]:
    from proctor.audit.spreadsheet_dates import spreadsheet_dates
    from proctor.audit.stray_controls import stray_controls

    yield from stray_controls(subject)
    yield from spreadsheet_dates(subject)
    for sample, text in ((subject.samples[i], subject.prompt_texts[i]) for i in subject.scan.unusual_text):
        for field, value in (("prompt", text), *(("choices", c) for c in sample.choices)):
            if value.isascii():
                continue
            match = _MOJIBAKE.search(value)
            if match:
                yield subject.at_row(
                    sample.sample,
                    f"the {field} holds {match.group()!r}, text decoded in the wrong encoding (UTF-8 read as Latin-1) "
                    "or a character lost on the way in: the model reads a damaged text",
                    field,
                )
                break


def tag_not_asked(subject: AuditSubject) -> Iterator[Hit]:
    extraction = subject.spec.extraction
    tag = extraction.answer_tag if extraction else None
    if not tag or not _generated(subject):
        return
    if not any(tag in t for t in subject.prompt_texts):
        yield subject.at_line(
            "extraction",
            f"the answer is read after the tag {tag!r}, which no prompt mentions: a model not asked to write it "
            "rarely does, and its answers are then unreadable",
            "extraction.answer_tag",
        )


# HTML entities and escapes written out: text that went through a markup or JSON encoder twice
_ESCAPED = re.compile(r"&(?:amp|lt|gt|quot|apos|nbsp|#\d{2,5}|#x[0-9a-fA-F]{2,4});|\\n|\\u[0-9a-fA-F]{4}")
ESCAPED_SHARE = 0.2


_ENTITY = re.compile(r"&(?:amp|lt|gt|quot|apos|nbsp|#\d{2,5}|#x[0-9a-fA-F]{2,4});")


def escaped_text(subject: AuditSubject) -> Iterator[Hit]:
    if subject.spec.kind == "perplexity":  # its prompts are empty: the texts it scores
        yield from markup_texts(subject)
        return
    unusual = subject.scan.unusual_text
    for sample in (subject.samples[i] for i in unusual):  # an answer with markup in it: no model writes "&amp;"
        answers = sample.choices or sample.references
        entity = next((m for a in answers if "&" in a for m in [_ENTITY.search(a)] if m), None)
        if entity is not None:
            yield subject.at_row(
                sample.sample,
                f"an answer holds the HTML entity {entity.group()!r}, written out: it is scored as those characters",
                "choices" if sample.choices else "target",
            )
            return
    texts = subject.prompt_texts
    found = [i for i in unusual if ("&" in texts[i] or "\\" in texts[i]) and _ESCAPED.search(texts[i])]
    if found and len(found) >= ESCAPED_SHARE * len(texts):
        i = found[0]
        match = _ESCAPED.search(texts[i])
        assert match is not None
        first = subject.samples[i].sample
        yield subject.at_row(
            first,
            f"{len(found)} of {len(texts)} prompts hold escapes written out ({match.group()!r}): the model reads "
            "markup or escape codes where the text had a character",
            "prompt",
        )


RULES = (
    AuditRule(
        "generation.stop-inside-answer",
        "warning",
        "A stop string (a native `generation.stop`, lm-eval's `until`) occurs inside the reference answers: generation "
        "ends before the answer is whole.",
        stop_inside_answers,
    ),
    AuditRule(
        "generation.too-short",
        "warning",
        "max_tokens (lm-eval's max_gen_toks, a SEA-HELM language's max_tokens, with its answer tag) is below the word "
        "count of a tenth of the rows' reference answers or more: those answers are cut before they match.",
        limit_below_answers,
    ),
    AuditRule(
        "generation.min-tokens",
        "warning",
        "min_tokens is not below max_tokens: the end of the answer is banned, so answers run on.",
        min_at_max,
    ),
    AuditRule(
        "generation.unbounded-answer",
        "warning",
        "No stop string and no extraction, while exact match or f1 compares the whole text with short references: "
        "an answer that runs on scores 0.",
        unbounded_answers,
    ),
    AuditRule(
        "generation.ngram-ban",
        "warning",
        "no_repeat_ngram_size bans n tokens the prompt holds, and the answers are copied from the prompt.",
        ngram_ban_on_answers,
    ),
    AuditRule(
        "extraction.never-matches",
        "warning",
        "The extraction regex matches none of the reference answers.",
        regex_misses_references,
    ),
    AuditRule(
        "extraction.tag-not-asked",
        "warning",
        "The answer is read after a tag that no prompt asks the model to write.",
        tag_not_asked,
    ),
    AuditRule(
        "generation.sampling",
        "warning",
        "Sampled generation (temperature > 0, lm-eval's do_sample) with one epoch: each score is one random draw; "
        "or top_p under greedy decoding, which reads it not.",
        one_sample_of_chance,
    ),
    AuditRule(
        "generation.greedy-epochs",
        "warning",
        "--epochs K above 1 with greedy decoding (temperature 0): the K epochs are K copies of one answer, so pass@K "
        "is pass@1 and the epochs' spread is 0.",
        epochs_under_greedy,
    ),
    AuditRule(
        "text.escaped",
        "warning",
        "Prompts hold HTML entities or escapes written out (&amp;, a literal \\n); a perplexity task's texts hold "
        "entities or HTML tags.",
        escaped_text,
    ),
    AuditRule(
        "text.damaged",
        "warning",
        "Prompts or choices hold mojibake (UTF-8 read as Latin-1) or the replacement character; choices or "
        "references hold values a spreadsheet turned into dates ('2-Jan' from '1-2').",
        damaged_text,
    ),
)
