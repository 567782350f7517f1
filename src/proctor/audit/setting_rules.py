"""Rules over a task's settings as they meet its rows: options labelled by letters that no prompt shows, an answer
tag or a target delimiter left empty, a long field the prompt never reads, a filter that leaves a handful of rows, a
group member of a row or two (metrics that cannot mean their name here: ``metric_rules.py``).

Some settings live in a dialect's own shape (lm-eval's ``generation_kwargs``, a SEA-HELM language's
``max_tokens``): ``generation_settings`` reads them from the handler the dialect built (duck-typed: the audit
imports no dialect), so that ``generation_rules`` holds for every dialect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit
from proctor.data.sources import Sample

# rows a per-row rule reads: most tasks' rows are rendered alike, so a probe decides; a quarter of
# probe_rows.PROBE_ROWS, on purpose: these rules run on every multiple-choice task, with a search per row and
# choice or field
PROBE_ROWS = 50


@dataclass(frozen=True)
class GenerationSettings:
    """What bounds a generated answer, wherever the task keeps it."""

    stop: tuple[str, ...]
    max_tokens: int | None  # None: not known before the model loads
    key: str  # the task file's key holding the settings (for its line)
    stop_field: str
    max_field: str
    tag_words: int = 0  # words the model must write before its answer (SEA-HELM's answer tag)


def lmeval_config(subject: AuditSubject) -> Any:
    """lm-eval's ``TaskConfig`` of the task the handler built (None for other dialects)."""
    task = getattr(subject.handler, "task", None)
    config = getattr(task, "config", None)
    return config if config is not None and hasattr(config, "target_delimiter") else None


def scores_one_continuation(subject: AuditSubject) -> bool:
    """lm-eval's ``output_type: loglikelihood`` (LAMBADA): each row's one continuation is scored by whether it is
    the model's greedy answer, not picked among choices, and the passage holds the word by design."""
    return getattr(lmeval_config(subject), "output_type", None) == "loglikelihood"


def _seahelm_language(subject: AuditSubject) -> dict[str, Any] | None:
    """The SEA-HELM config's settings of the task's language (None for other dialects)."""
    config, lang = getattr(subject.handler, "config", None), getattr(subject.handler, "lang", None)
    if not isinstance(config, dict) or not isinstance(lang, str):
        return None
    settings = (config.get("languages") or {}).get(lang)
    return settings if isinstance(settings, dict) else None


def _uses_tag(template: object) -> bool:
    return isinstance(template, dict) and any(isinstance(v, str) and "{answer_tag}" in v for v in template.values())


def generation_settings(subject: AuditSubject) -> GenerationSettings | None:
    """A generated task's stop strings and token limit: a native task's ``generation``, lm-eval's
    ``generation_kwargs`` (``until``, ``max_gen_toks``), a SEA-HELM language's ``max_tokens``."""
    if subject.spec.kind != "generate":
        return None
    if subject.templated:
        generation = subject.spec.generation
        if subject.task.dialect == "glm":  # GLM-130B's file keeps them as stop and max_gen_length
            key = "stop" if "stop" in subject.task.lines else "max_gen_length"
            return GenerationSettings(tuple(generation.stop), generation.max_tokens, key, "stop", "max_gen_length")
        return GenerationSettings(
            tuple(generation.stop), generation.max_tokens, "generation", "generation.stop", "generation.max_tokens"
        )
    config = lmeval_config(subject)
    if config is not None:
        kwargs = getattr(config, "generation_kwargs", None) or {}
        if not isinstance(kwargs, dict):
            return None
        until = kwargs.get("until") or ()
        until = (until,) if isinstance(until, str) else tuple(u for u in until if isinstance(u, str))
        limit = kwargs.get("max_gen_toks")
        return GenerationSettings(
            until,
            limit if isinstance(limit, int) and not isinstance(limit, bool) else None,
            "generation_kwargs",
            "generation_kwargs.until",
            "generation_kwargs.max_gen_toks",
        )
    language = _seahelm_language(subject)
    if language is not None:
        limit = language.get("max_tokens")
        if getattr(getattr(subject.handler, "options", None), "reasoning", None):
            limit = None  # thinking tokens are added to the limit
        template = language.get("prompt_template")
        tag = template.get("answer_tag") if _uses_tag(template) and isinstance(template, dict) else None
        return GenerationSettings(
            (),
            limit if isinstance(limit, int) and not isinstance(limit, bool) else None,
            "max_tokens",
            "stop",
            f"languages.{subject.handler.lang}.max_tokens",
            len(tag.split()) if isinstance(tag, str) else 0,
        )
    return None


# ---------------------------------------------------------------- options shown by letter


# digits are left out: "1", "2", "3", "4" are as often the answers themselves (What is 1 + 2?)
_LABEL_RUNS = ("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _are_labels(choices: Sequence[str]) -> bool:
    """Whether the choices are option labels: A, B, C, ... in order from the first."""
    labels = "".join(c.strip() for c in choices)
    return len(labels) == len(choices) and any(run.startswith(labels) for run in _LABEL_RUNS)


def _shows_option(prompt: str, label: str) -> bool:
    """Whether the prompt lists an option under ``label``: "A. ", "A) ", "(A)", "A: ", "[A]", "A - "."""
    return re.search(rf"(?:^|[\s(\[]){re.escape(label)}\s*[.):\]-]", prompt) is not None


def letters_not_shown(subject: AuditSubject) -> Iterator[Hit]:
    """Choices that are option labels (A, B, C, ...) while the prompt lists no option under them: the model picks a
    letter for options it never saw, so the score is chance."""
    probe = [(i, s) for i, s in enumerate(subject.samples[:PROBE_ROWS]) if len(s.choices) > 1]
    labelled = [(i, s) for i, s in probe if _are_labels(s.choices)]
    if not labelled or len(labelled) < len(probe) / 2:
        return
    texts = subject.prompt_texts
    hidden = [(i, s) for i, s in labelled if not all(_shows_option(texts[i], c.strip()) for c in s.choices)]
    # the template is one for every row: rows whose prompt lists no options (an {% if %} that leaves them out,
    # a row without its options) are answered blind, however few
    if hidden:
        i, sample = hidden[0]
        labels = ", ".join(c.strip() for c in sample.choices)
        yield subject.at_row(
            sample.sample,
            f"the choices are the labels {labels}, and the prompt of {len(hidden)} of the {len(labelled)} rows read "
            "lists no option under them ('A. ...'): the model picks a letter for options it was never shown",
            "choices",
        )


# ---------------------------------------------------------------- empty answer tag, glued answers


def empty_answer_tag(subject: AuditSubject) -> Iterator[Hit]:
    """A SEA-HELM template that asks for the answer after its tag ('Jawaban: ANSWER') with the tag empty: the
    answer is read after an empty tag, the first line's text, whatever the model wrote first."""
    language = _seahelm_language(subject)
    template = language.get("prompt_template") if language else None
    if not _uses_tag(template) or not isinstance(template, dict):
        return
    tag = template.get("answer_tag")
    if isinstance(tag, str) and not tag.strip():
        yield subject.at_line(
            "answer_tag",
            f"the prompt template asks for the answer after its answer tag, and answer_tag is {tag!r}: the prompt "
            "shows no tag to write and the answer is read from wherever the reply starts",
            f"languages.{subject.handler.lang}.prompt_template.answer_tag",
        )


GLUED_SHARE = 0.5


# scripts written without spaces between words (Han, kana, Thai, Lao, Myanmar, Khmer, their punctuation): there a
# continuation follows its prompt with nothing between, and a space is the foreign join
_UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]"
)


def unspaced_join(prompt: str, choices: Sequence[str]) -> bool:
    """Whether a prompt and every choice meet between characters of scripts written without spaces: the prompt's
    last letter (a cue's colon after it aside: 'คำตอบ:', '答案：') and each choice's first."""
    end = next((c for c in reversed(prompt) if c.isalnum()), "")
    return bool(end) and bool(_UNSPACED.match(end)) and all(_UNSPACED.match(c.lstrip()[:1] or " ") for c in choices)


def glued_rows(subject: AuditSubject) -> tuple[int, int]:
    """(rows read, rows glued) under ``target_delimiter: ""``, for ``prompt.delimiter`` and ``prompt.glued-answer``:
    a prompt ending without a space, choices starting with a letter or digit, not in a script without spaces."""
    rows = [(t, s.choices) for t, s in zip(subject.prompt_texts, subject.samples) if s.choices and t]
    glued = [t for t, c in rows if not t[-1:].isspace() and all(x[:1].isalnum() for x in c) and not unspaced_join(t, c)]
    return len(rows), len(glued)


def lmeval_glued_answers(subject: AuditSubject) -> Iterator[Hit]:
    """lm-eval's ``target_delimiter: ""`` with prompts that end without a space: each choice is scored glued to
    the prompt ('A:Paris'), a text a model has rarely seen (a native task's is ``prompt.delimiter``; Chinese
    '答案：北京' is written so, ``glued_rows``)."""
    config = lmeval_config(subject)
    if config is None or config.target_delimiter != "" or subject.spec.kind != "multiple_choice":
        return
    rows, glued = glued_rows(subject)
    if glued and glued >= GLUED_SHARE * rows:
        yield subject.at_line(
            "target_delimiter",
            f"target_delimiter is empty, and in {glued} of {rows} documents the prompt ends without a "
            "space and every choice starts with a letter or digit: each answer is scored glued to the prompt "
            "('A:Paris')",
            "target_delimiter",
        )


# ---------------------------------------------------------------- columns named in another order

_QUESTION_NAMES = frozenset({"question", "query", "prompt", "problem", "q"})
ASKS_SHARE = 0.25  # of a column's values that end with "?": that column holds the questions
RARELY = 0.05


def shifted_columns(subject: AuditSubject) -> Iterator[Hit]:
    """``columns:`` names a headerless file's columns in order; named one place off, the column called
    'question' holds an option and an option column holds the questions (which end with '?')."""
    if not subject.templated or not subject.spec.data or not subject.spec.data[0].columns:
        return
    rows = subject.rows[: PROBE_ROWS * 4]
    if len(rows) < 4:
        return
    asks: dict[str, int] = {}
    for row in rows:
        for key, value in row.fields.items():
            if isinstance(value, str) and value.rstrip().endswith("?"):
                asks[key] = asks.get(key, 0) + 1
    named = [k for k in subject.spec.data[0].columns if k.casefold() in _QUESTION_NAMES]
    others = [k for k in subject.spec.data[0].columns if k.casefold() not in _QUESTION_NAMES]
    asking = [k for k in others if asks.get(k, 0) >= max(2, ASKS_SHARE * len(rows))]
    for key in named:
        if asks.get(key, 0) <= RARELY * len(rows) and asking:
            yield subject.at_line(
                "data",
                f"columns: the column named '{key}' ends with '?' in {asks.get(key, 0)} of {len(rows)} rows, and "
                f"the column named '{asking[0]}' in {asks[asking[0]]}: the names look shifted against the file's "
                "columns, so the prompt shows an option as the question",
                "data.columns",
            )
            return


# ---------------------------------------------------------------- a long field the prompt never reads

# fields that hold what a question is about: a prompt that leaves them out asks without the evidence
CONTEXT_FIELDS = re.compile(
    r"^(passage|context|article|document|doc|paragraph|story|background|evidence|support|premise|dialogue|"
    r"conversation|table|source_text|text)s?$",
    re.IGNORECASE,
)
LONG_FIELD = 80  # characters: a passage, not a label
DROPPED_SHARE = 0.8


def dropped_field(subject: AuditSubject) -> Iterator[Hit]:
    if not subject.templated:
        return
    probe = subject.samples[:PROBE_ROWS]
    texts = subject.prompt_texts
    counts: dict[str, list[int]] = {}  # field -> [rows with a long value, rows whose prompt lacks it]
    first: dict[str, Sample] = {}
    for i, sample in enumerate(probe):
        shown = "\x00".join((texts[i], sample.text or "", *sample.choices, *sample.references))
        for key, value in sample.sample.fields.items():
            if not isinstance(value, str) or len(value.strip()) < LONG_FIELD or not CONTEXT_FIELDS.match(key):
                continue
            seen = counts.setdefault(key, [0, 0])
            seen[0] += 1
            if " ".join(value.split())[:40] not in " ".join(shown.split()):
                seen[1] += 1
                first.setdefault(key, sample.sample)
    for key, (long_rows, missing) in counts.items():
        if missing and missing >= DROPPED_SHARE * long_rows and long_rows >= DROPPED_SHARE * len(probe):
            yield subject.at_row(
                first[key],
                f"every row has a '{key}' ({missing} of {long_rows} rows read hold {LONG_FIELD}+ characters there) "
                "that no prompt shows: the model answers without the text the question is about",
                key,
            )
            return


# ---------------------------------------------------------------- too few rows for a number

FEW_ROWS = 5  # fewer rows than this: a mean of a handful of 0s and 1s, with no useful standard error


def _lmeval_documents(subject: AuditSubject) -> tuple[int, int] | None:
    """(the documents of lm-eval's test split, those its ``process_docs`` keeps) for an lm-eval task (None for
    another, or where lm-eval cannot count them)."""
    task = getattr(subject.handler, "task", None)
    config = getattr(task, "config", None)
    try:
        split = getattr(config, "test_split", None) or getattr(config, "validation_split", None)
        kept = len(task.eval_docs)  # type: ignore[union-attr]
        read = len(task.dataset[split]) if split else kept  # type: ignore[union-attr]
    except Exception:  # noqa: BLE001 - not an lm-eval task, or one whose docs lm-eval lists otherwise
        return None
    return read, kept


def filter_leaves_few(subject: AuditSubject) -> Iterator[Hit]:
    counts = _lmeval_documents(subject)
    if counts is not None:
        read, kept = counts
        if read - kept > kept and kept < FEW_ROWS:
            yield subject.at_line(
                "process_docs",
                f"process_docs keeps {kept} of the {read} documents of the test split: the task's number is the "
                "mean of those few documents",
                "process_docs",
            )
        return
    dropped, read = subject.stats.get("n_filtered", 0), subject.stats.get("n_rows", 0)
    kept = read - dropped
    if dropped and kept < FEW_ROWS and dropped > kept:
        yield subject.at_line(
            "data",
            f"the filter keeps {kept} of the {read} rows of {subject.stats.get('source', 'the data')}: "
            "the task's number is the mean of those few rows (a filter that names one row's id, or compares "
            "with a value most rows lack?)",
            "data.filter",
        )


def tiny_group_member(subject: AuditSubject) -> Iterator[Hit]:
    """A task of a group (averaged with equal weight) with a row or two: its 0 or 1 counts as much as every
    other member's mean."""
    spec = subject.spec
    equal = [g for g in spec.group if g not in spec.size_weighted_groups]
    counts = _lmeval_documents(subject) if equal else None
    if counts is not None:
        n = counts[1]  # lm-eval's documents before --limit
    elif not equal or hasattr(subject.handler, "load_samples"):  # a handler that reads its own rows: cut by --limit
        return
    else:
        n = len(subject.rows)
    if n < FEW_ROWS:
        yield subject.at_line(
            "group",
            f"the task has {n} row(s) and is a member of group '{equal[0]}', whose score is its members' mean with "
            "equal weight: this task's near 0-or-1 score counts as much as every other member's",
            "group",
        )
        return
    yield from subject.source_hits.get("group.tiny-member", ())  # beside a member five times its size or more


RULES = (
    AuditRule(
        "data.columns",
        "warning",
        "columns: names a file's columns one place off: the 'question' column holds options, another the questions.",
        shifted_columns,
    ),
    AuditRule(
        "choices.not-in-prompt",
        "warning",
        "The choices are option labels (A, B, C, ...) and the prompt of some rows lists no options under them: the "
        "model guesses.",
        letters_not_shown,
    ),
    AuditRule(
        "extraction.tag-empty",
        "warning",
        "A SEA-HELM template asks for the answer after its answer tag, and the tag is empty.",
        empty_answer_tag,
    ),
    AuditRule(
        "prompt.glued-answer",
        "warning",
        "An lm-eval task's target_delimiter is empty and its prompts end without a space: answers are glued on (not "
        "where prompt and choices meet in a script written without spaces, Chinese '答案：北京').",
        lmeval_glued_answers,
    ),
    AuditRule(
        "prompt.drops-field",
        "warning",
        "Every row has a passage or context field that no prompt shows: the model answers without it.",
        dropped_field,
    ),
    AuditRule(
        "data.filter-drops-most",
        "warning",
        "The data filter keeps fewer than 5 rows, and drops most: the number is a handful of rows' mean.",
        filter_leaves_few,
    ),
    AuditRule(
        "group.tiny-member",
        "warning",
        "A task averaged with equal weight in a group has fewer than 5 rows, or fewer than 20 beside a member five "
        "times its size: its score weighs as much as the others'.",
        tiny_group_member,
    ),
)
