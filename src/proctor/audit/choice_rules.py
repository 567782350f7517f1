"""Rules over a multiple-choice row's choices and right answers: what makes accuracy count something else."""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterator, Mapping, Sequence

from proctor.audit import listed_choices
from proctor.audit.case_words import case_is_meaning
from proctor.audit.none_answers import answers_none_of_them, holds_null
from proctor.audit.probe_rows import MIN_ROWS
from proctor.audit.setting_rules import scores_one_continuation
from proctor.audit.source_rows import documents
from proctor.audit.subject import AuditSubject, loose, near, reads_alike
from proctor.core.audit import AuditRule, Hit
from proctor.prompts.builder import PreparedSample


def _one_answer(subject: AuditSubject, row: int, first: int, second: int) -> bool:
    """Whether a row's two choices that ``loose`` makes one are one answer to a reader: alike up to a plain change
    of case, where the row does not use case as meaning ('rr' / 'Rr' under a question about 'RR' and 'rr')."""
    choices = subject.samples[row].choices
    if not reads_alike(choices[first], choices[second]):
        return False
    return choices[first] == choices[second] or not case_is_meaning(first, second, choices, subject.prompt_texts[row])


def duplicate_choices(subject: AuditSubject) -> Iterator[Hit]:
    for row in subject.scan.choice_collisions:
        sample = subject.samples[row]
        choices = sample.choices
        if len(choices) < 2:
            continue
        keys = [loose(c) for c in choices]
        if len(set(keys)) == len(keys):
            continue
        seen: dict[str, int] = {}
        for i, key in enumerate(keys):
            if key in seen and _one_answer(subject, row, seen[key], i):
                j = seen[key]
                how = "the same text" if choices[i] == choices[j] else "the same text up to case and whitespace"
                yield subject.at_row(
                    sample.sample,
                    f"choices {j} and {i} are {how} ({choices[j]!r:.40} / {choices[i]!r:.40}): a model cannot tell "
                    "them apart, so the row scores by which of the two the data calls right",
                    "choices",
                )
                break
            seen[key] = i
    yield from listed_choices.duplicates(subject, loose, loose)


def near_duplicate_choices(subject: AuditSubject) -> Iterator[Hit]:
    """Choices a reader would not tell apart that ``choices.duplicate`` leaves (it compares case and spacing
    only): "Paris" and "Paris.", a quoted copy, "4" and "4.0", a Cyrillic "В" for a Latin "B"."""
    for sample in (subject.samples[i] for i in subject.scan.choice_collisions):
        choices = sample.choices
        if len(choices) < 2:
            continue
        keys = [near(c) for c in choices]
        if len(set(keys)) == len(keys):
            continue
        seen: dict[str, int] = {}
        for i, key in enumerate(keys):
            j = seen.setdefault(key, i)
            if j != i and loose(choices[i]) != loose(choices[j]):
                yield subject.at_row(
                    sample.sample,
                    f"choices {j} and {i} differ only in punctuation, quotes, a number's spelling or look-alike "
                    f"letters ({choices[j]!r:.40} / {choices[i]!r:.40}): a reader takes them for one answer",
                    "choices",
                )
                break
    yield from listed_choices.duplicates(subject, near, loose)


# what a CSV or pandas reader makes of a missing value, read back as a choice's text
PLACEHOLDERS = frozenset({"na", "n/a", "nan", "none", "null", "nil", "#n/a", "undefined"})
# written so, these are also words an answer can be ('none' of them, a score of 'nil', 'na' in a list of syllables):
# only the spellings a reader or a language writes for a missing value are placeholders
_WORDS_TOO = {"none": "None", "nil": "NIL", "na": "NA"}


def _placeholder(choice: str) -> bool:
    text = choice.strip()
    key = text.casefold()
    return key in PLACEHOLDERS and (key not in _WORDS_TOO or text in (_WORDS_TOO[key], text.upper()))


def _word_none(choices: Sequence[str], at: int, document: Mapping[str, Any] | None) -> bool:
    """Whether choice ``at`` ('None') is the answer "none of them" beside statement combinations (MMLU's 'III
    only', 'I and II only'), in a row whose source holds no null (none_answers.py)."""
    return choices[at].strip() == "None" and answers_none_of_them(at, choices) and not holds_null(document)


def placeholder_choices(subject: AuditSubject) -> Iterator[Hit]:
    rows = subject.scan.placeholder_choices
    docs = documents(subject) if rows else ()
    for row in rows:
        sample = subject.samples[row]
        for i, choice in enumerate(sample.choices):
            if _placeholder(choice) and not _word_none(sample.choices, i, docs[row]):
                yield subject.at_row(
                    sample.sample,
                    f"choice {i} is {choice!r}, what a CSV or pandas reader makes of a missing value: a choice "
                    "the data does not have is scored as one",
                    "choices",
                )
                break
    yield from listed_choices.placeholders(
        subject, PLACEHOLDERS, lambda r, at: _word_none(r.choices, at, r.sample.fields)
    )


# metrics that read each row's distribution over its choices: a task scored by them reports the distributions,
# whether or not a row has a right answer
DISTRIBUTION_METRICS = frozenset({"distribution_acc"})


def _distributions_by_design(subject: AuditSubject) -> bool:
    """A dialect's task whose unscored value is its format's documented one and whose output is the distributions:
    probsem's `expected: -1` ("no gold: the sample gets its distribution", docs/probsem.md), an opinion question's
    suite. Not a native task: its file sets ``unscored_target`` itself, and every row on it is a mistake to name.
    (The run still says the accuracy is not a number: engine/task_warnings.warn_not_numbers.)"""
    return not subject.templated and any(m.name in DISTRIBUTION_METRICS for m in subject.spec.metrics)


def no_right_answer(subject: AuditSubject) -> Iterator[Hit]:
    """A multiple-choice task none of whose rows has a right answer: every accuracy is undefined."""
    if _distributions_by_design(subject):
        return
    columns = subject.columns
    if columns.choice_counts.any() and not columns.any_scored_multiple_choice():  # told in C, column by column
        yield subject.at_line(
            "target",
            f"none of the {columns.multiple_choice()} rows has a right answer (every target is the task's unscored "
            "value): accuracy is not a number, only the distributions are reported",
            "target",
        )


FEW_SCORED = 3  # fewer scored rows than this: the accuracy is one or two rows' 0 or 1


def few_scored(subject: AuditSubject) -> Iterator[Hit]:
    """A multiple-choice task most of whose rows have no right answer (probsem's ``expected: -1``, the task's
    unscored value) and one or two that do: its accuracy is those rows' score, with no word that it is."""
    scored = subject.scored  # computed once for every rule that reads it (columns.scored)
    if not 0 < len(scored) < FEW_SCORED:
        return  # most tasks; none at all is target.none
    total = subject.columns.multiple_choice()
    if total == len(scored):
        return  # one or two rows, each scored: a small task says so itself
    first = scored[0].sample
    yield subject.at_row(
        first,
        f"only {len(scored)} of the task's {total} multiple-choice rows ha{'s' if len(scored) == 1 else 've'} a right "
        f"answer (the others' target is the unscored value): the accuracy reported is {len(scored)} row(s)' 0 or 1; "
        "give the other rows their answers, or read only the distributions",
        "target",
    )


def ambiguous_target(subject: AuditSubject) -> Iterator[Hit]:
    for row in subject.scan.choice_collisions:
        sample = subject.samples[row]
        if not sample.gold:
            continue
        keys = [loose(c) for c in sample.choices]
        counts = Counter(keys)
        for g in sample.gold:
            if counts[keys[g]] > 1:
                others = [i for i, k in enumerate(keys) if k == keys[g] and i != g and _one_answer(subject, row, g, i)]
                if not others:
                    continue
                yield subject.at_row(
                    sample.sample,
                    f"the right answer, choice {g} ({sample.choices[g]!r:.40}), has the text of choice(s) "
                    f"{', '.join(map(str, others))} too: which one is right is a guess (a target given as text "
                    "picks the first)",
                    "target",
                )
                break
    yield from listed_choices.ambiguous(subject, loose)


def every_choice_right(subject: AuditSubject) -> Iterator[Hit]:
    if subject.columns.gold_counts.max(initial=0) <= 1:  # one right answer per row (most tasks), in C
        return
    for sample in [s for s in subject.scored if len(s.gold) > 1]:
        if len(sample.choices) >= 2 and len(set(sample.gold)) >= len(sample.choices):
            yield subject.at_row(
                sample.sample,
                f"the target names every one of the {len(sample.choices)} choices as right: any answer scores 1",
                "target",
            )


def single_choice(subject: AuditSubject) -> Iterator[Hit]:
    if not (subject.columns.choice_counts == 1).any():  # no row of one choice (nearly every task), in C
        return
    if scores_one_continuation(subject):
        return  # its one choice is scored by greedy match, not picked
    for sample in [s for s in subject.scored if len(s.choices) == 1]:
        yield subject.at_row(
            sample.sample,
            f"the row has one choice ({sample.choices[0]!r:.40}): the model's pick is always right",
            "choices",
        )


CHANCE = 1 / 8  # a pattern this unlikely among rows whose answers fall at random is worth a word (four two-choice rows)


def _by_chance_all_same(rows: list[PreparedSample]) -> float:
    """The chance that ``rows`` all share one right position if each row's were uniform over its choices."""
    same = 1.0
    for s in rows[1:]:
        same /= len(s.choices)
    return same


def constant_target(subject: AuditSubject) -> Iterator[Hit]:
    scored = subject.scored
    if len(scored) < MIN_ROWS or any(s.gold != scored[0].gold for s in scored):
        return  # most tasks: two rows differ within the first few
    rows = [s for s in scored if len(s.choices) >= 2]
    if len(rows) < MIN_ROWS:
        return
    if _by_chance_all_same(rows) > CHANCE:
        return
    if not any(t.strip() for t in subject.prompt_texts):
        return  # prompt-less pairs (BLiMP): the right sentence is listed first by the format's design
    yield subject.at_line(
        "target",
        f"every one of the {len(rows)} rows has the same right answer (choice index "
        f"{', '.join(map(str, rows[0].gold))}): a model that always picks that position scores 1, so accuracy "
        "measures position bias (a label column read wrongly, or a filter that kept one class?)",
        "target",
    )


OFF_BY_ONE_CHANCE = 0.2  # label 0 missing by chance from n rows of k choices: ((k-1)/k)^n
# the same of rows a --limit took from a larger task: a smoke test's ten rows of four choices miss label 0 in one
# run of 18 (0.056), so a limited subset must be far less likely by chance before the data is blamed
OFF_BY_ONE_CHANCE_SUBSET = 0.01


def off_by_one_chance(subject: AuditSubject) -> float:
    """The chance below which labels missing choice 0 are blamed on the data: the stricter one where the evaluated
    samples are a subset the run's --limit took of the rows the source gave."""
    return OFF_BY_ONE_CHANCE_SUBSET if len(subject.rows) > len(subject.samples) else OFF_BY_ONE_CHANCE


def counted_from_one(labels: Sequence[int], width: int, chance: float = OFF_BY_ONE_CHANCE) -> bool:
    """Whether ``labels`` never name choice 0 while every other position occurs, in more rows than leave 0 out by
    chance (((k-1)/k)^n below ``chance``)."""
    if len(labels) <= width or ((width - 1) / width) ** len(labels) >= chance:
        return False
    used = Counter(labels)
    return used[0] == 0 and all(used[i] > 0 for i in range(1, width))


def shifted_labels(subject: AuditSubject) -> Iterator[Hit]:
    """Labels counted from 1 (the last choice's label out of range, an error) or with the first choice never
    right: the target is read one off."""
    if any(s.gold[:1] == (0,) for s in subject.scored):
        return  # the first choice is right somewhere (most tasks: within the first rows)
    rows = [s for s in subject.scored if len(s.gold) == 1 and len(s.choices) >= 2]
    widths = {len(s.choices) for s in rows}
    if len(widths) != 1:
        return
    (width,) = widths
    if counted_from_one([s.gold[0] for s in rows], width, off_by_one_chance(subject)):
        yield subject.at_line(
            "target",
            f"no row's right answer is choice 0, while every other position is right in some of the {len(rows)} "
            "rows: labels counted from 1 read as indices counted from 0? (the last choice would then be out of "
            "range, and every gold answer one off)",
            "target",
        )


# target.ambiguous, target.constant and labels.off-by-one are registered by label_rules, which adds the other
# dialects' forms to the checks here
RULES = (
    AuditRule(
        "choices.duplicate",
        "warning",
        "A row lists the same choice twice (or twice up to case and whitespace): a model cannot tell them apart.",
        duplicate_choices,
    ),
    AuditRule(
        "choices.near-duplicate",
        "warning",
        "Two choices differ only in end punctuation, quotes, a number's spelling or look-alike letters.",
        near_duplicate_choices,
    ),
    AuditRule(
        "choices.empty",
        "warning",
        "A row lists an empty choice (a use case's rows, whose choices the task's samples do not carry).",
        listed_choices.empty,
    ),
    AuditRule(
        "choices.placeholder",
        "warning",
        "A choice reads 'NA', 'nan', 'None' or 'null': a missing value read back as text is scored as a choice.",
        placeholder_choices,
    ),
    AuditRule(
        "target.none",
        "warning",
        "No row of a multiple-choice task has a right answer: accuracy is undefined.",
        no_right_answer,
    ),
    AuditRule(
        "data.few-scored",
        "warning",
        "A multiple-choice task has one or two rows with a right answer among unscored ones: its accuracy is theirs.",
        few_scored,
    ),
    AuditRule(
        "target.all-choices",
        "error",
        "The target names every choice as right: every answer scores 1, whatever the model does.",
        every_choice_right,
    ),
    AuditRule(
        "choices.single",
        "warning",
        "A multiple-choice row with one choice: the model's pick is always right.",
        single_choice,
    ),
)
