"""Metrics that cannot mean their name on a task's rows: acc_norm on choices of one length (acc under another
name), a choice temperature that makes every distribution one choice at 1.0 or near uniform, f1 on answers written
without spaces (exact match under another name) or on one-word labels (partial credit for naming several),
word_perplexity on text without spaces (a whole text's loss), exact match on whole worked solutions (about 0 for any
model), GLM's raw-text Accuracy on references ending with punctuation."""

from __future__ import annotations

import re
from typing import Iterator

from proctor.audit.fallback import first_found
from proctor.audit.perplexity_rules import pretokenized_texts
from proctor.audit.setting_rules import PROBE_ROWS, lmeval_config
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit


def metric_names(subject: AuditSubject) -> set[str]:
    """The task's metric names: a native task's, or lm-eval's ``metric_list``."""
    names = {m.name.split(",")[0] for m in subject.spec.metrics}
    if subject.templated and not names and subject.spec.kind == "generate":
        names = {"exact_match", "f1"}  # a generated task's default metrics (with null_count)
    config = lmeval_config(subject)
    for entry in getattr(config, "metric_list", None) or []:
        if isinstance(entry, dict) and isinstance(entry.get("metric"), str):
            names.add(entry["metric"])
    return names


TINY_TEMPERATURE = 0.01  # log-probabilities divided by this: every distribution is one choice at 1.0
HUGE_TEMPERATURE = 100.0  # and by this: every distribution is near uniform (a gap of 20 nats becomes 0.2)


# scripts written without spaces between words (Chinese, Japanese kana, Thai, Lao, Khmer, Myanmar): an answer in
# them is one "word" to a metric that splits at spaces; Korean puts spaces between words and is left out
_UNSPACED = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]{2}")


def _f1_on_unspaced(subject: AuditSubject) -> Iterator[Hit]:
    """f1 counts shared words split at spaces: on answers written without spaces each answer is one word, and f1
    is exact match under another name (half the answer right scores 0)."""
    if not subject.templated or "f1" not in metric_names(subject):
        return
    rows = [s.references for s in subject.samples[:PROBE_ROWS] if s.references]
    unspaced = [refs for refs in rows if any(_UNSPACED.search(r) and " " not in r.strip() for r in refs)]
    if rows and len(unspaced) * 2 > len(rows):
        yield subject.at_line(
            "metrics",
            f"f1 counts the words an answer shares with the reference, split at spaces, and the references of "
            f"{len(unspaced)} of {len(rows)} rows read have none (e.g. {unspaced[0][0]!r:.30}): each answer is one "
            "word, so f1 is exact match under another name (split the text into characters or words first)",
            "metrics",
        )


LONG_WORD = 10  # characters per space-separated "word": no language writes words this long on average
LABEL_VALUES = 10  # distinct one-word references at most: a label set (A-E, yes/no), not answers


_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")


def _f1_on_labels(subject: AuditSubject) -> Iterator[Hit]:
    """f1 on one-word labels (options B to E, yes/no) or one-number answers (GSM8K's): an answer naming several
    ('C or B', '12 or 15') shares the right word and scores 0.67, so f1 rewards hedging where exact match would
    not."""
    if not subject.templated or "f1" not in {m.name for m in subject.spec.metrics}:
        return  # the default metrics report exact_match beside f1
    rows = [s.references for s in subject.samples[:PROBE_ROWS] if s.references]
    words = {r.strip() for refs in rows for r in refs}
    if len(rows) < 4:
        return
    if len(words) <= LABEL_VALUES and all(w.isalpha() and len(w) <= 3 for w in words):
        shown = ", ".join(sorted(words)[:5])
        what, example = f"one short label ({shown})", f"{sorted(words)[0]} or {sorted(words)[-1]}"
    elif all(_NUMBER.fullmatch(w) for w in words):
        first, second = sorted(words)[:2] if len(words) > 1 else (next(iter(words)), "0")
        what, example = f"one number ({first}, {second}, ...)", f"{second} or {first}"
    else:
        return
    yield subject.at_line(
        "metrics",
        f"f1 counts the words an answer shares with the reference, and every reference of the {len(rows)} rows read "
        f"is {what}: an answer naming several ('{example}') shares the right one and scores 0.67, so f1 rewards "
        "hedging; use exact_match on such answers",
        "metrics",
    )


def _word_perplexity_on_unspaced(subject: AuditSubject) -> Iterator[Hit]:
    """word_perplexity divides by the words split at spaces: a text without spaces is one word, and the number is
    the exponent of a whole document's loss."""
    names = metric_names(subject) or {"word_perplexity"}  # a perplexity task's default metrics include it
    if "word_perplexity" not in names:
        return
    texts = [s.text for s in subject.samples[:PROBE_ROWS] if s.text]
    unspaced = [t for t in texts if _UNSPACED.search(t) and len(t) > LONG_WORD * len(t.split())]
    if texts and len(unspaced) * 2 > len(texts):
        key = "metrics" if subject.spec.metrics else "kind"
        yield subject.at_line(
            key,
            f"word_perplexity divides the loss by the words split at spaces, and {len(unspaced)} of the {len(texts)} "
            f"texts read are written without spaces (e.g. {unspaced[0]!r:.30}): each counts as a word or two, so "
            "word_perplexity is the exponent of a whole text's loss; use bits_per_byte or token_perplexity",
            "metrics",
        )


LONG_REFERENCE_WORDS = 15  # median words of a row's shortest reference: a worked answer, not an answer


def _exact_match_on_long(subject: AuditSubject) -> Iterator[Hit]:
    """Exact match with references that are whole worked answers (GSM8K's solution with its <<...>> marks, text
    over several lines) and no extraction: only the same text word for word scores, so any model scores about 0."""
    extraction = subject.spec.extraction
    if not subject.templated or (extraction is not None and (extraction.regex or extraction.answer_tag)):
        return
    names = {name.lower() for name in metric_names(subject)}
    if not names & {"exact_match", "em"}:
        return
    rows = [s.references for s in subject.samples[:PROBE_ROWS] if s.references]
    words = sorted(min(len(r.split()) for r in refs) for refs in rows)
    lines = [refs for refs in rows if all("\n" in r.strip() for r in refs)]
    if len(rows) < 2 or (words[len(words) // 2] <= LONG_REFERENCE_WORDS and len(lines) * 2 <= len(rows)):
        return
    example = rows[0][0].strip()
    key = "metrics" if subject.spec.metrics else "target"
    yield subject.at_line(
        key,
        f"exact match compares the whole answer with references of {words[len(words) // 2]} words (median of the "
        f"{len(rows)} rows read){', over several lines' if lines else ''} (e.g. {example!r:.60}), and nothing "
        "extracts a part of either: only the same text word for word scores, so any model scores about 0; extract "
        "the final answer (a regex, an answer tag) and make the reference that answer, or score with f1 or rouge",
        "metrics",
    )


_RAW_EQUALITY = "Accuracy"  # GLM-130B's Accuracy on generation: the stripped texts equal, case and punctuation kept
PUNCTUATED_SHARE = 0.5
SHORT_REFERENCE_WORDS = 5  # a short answer: a model stopped at the line's end writes no full stop after it


def _raw_equality_on_punctuated(subject: AuditSubject) -> Iterator[Hit]:
    """GLM's generation Accuracy compares the stripped texts as they are: short references that end with a full
    stop ('Onion.') score only the answers that write it, which a model stopped at the line's end rarely does."""
    if not subject.templated or _RAW_EQUALITY not in {m.name for m in subject.spec.metrics}:
        return
    rows = [s.references for s in subject.samples[:PROBE_ROWS] if s.references]
    short = [refs for refs in rows if all(len(r.split()) <= SHORT_REFERENCE_WORDS for r in refs)]
    ended = [refs for refs in short if all(r.strip() and r.strip()[-1] in ".!?,;:" for r in refs)]
    if not ended or len(ended) < PUNCTUATED_SHARE * len(rows):
        return
    yield subject.at_line(
        "metrics",
        f"Accuracy on generated answers compares the stripped texts as they are (case and punctuation kept), and the "
        f"short references of {len(ended)} of the {len(rows)} rows read end with punctuation (e.g. "
        f"{ended[0][0]!r:.30}): an answer without it scores 0; use EM (SQuAD's normalisation), or references "
        "without the punctuation",
        "metrics",
    )


# lm-eval metrics whose direction is theirs, not a setting's: a better model scores higher (or lower)
_HIGHER = frozenset({"acc", "acc_norm", "acc_mutual_info", "exact_match", "f1", "mcc", "bleu", "chrf"})
_LOWER = frozenset({"perplexity", "word_perplexity", "byte_perplexity", "bits_per_byte", "ter", "brier_score"})
# and those scored per document (0 or 1, or a share), whose task score is their mean
_MEAN = frozenset({"acc", "acc_norm", "acc_mutual_info", "exact_match", "brier_score"})


def _lmeval_settings(subject: AuditSubject) -> Iterator[Hit]:
    """An lm-eval ``metric_list`` entry that gives a known metric another direction (``acc`` with
    ``higher_is_better: false``: comparisons rank the worse model first) or aggregates a per-document score other
    than by its mean (``aggregation: median``: a 0-or-1 score's median is 0 or 1)."""
    config = lmeval_config(subject)
    for entry in getattr(config, "metric_list", None) or []:
        name = entry.get("metric") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            continue
        better, how = entry.get("higher_is_better"), entry.get("aggregation")
        if isinstance(better, bool) and (name in _HIGHER and not better or name in _LOWER and better):
            right = "higher" if name in _HIGHER else "lower"
            yield subject.at_line(
                "metric_list",
                f"metric_list gives {name} higher_is_better: {str(better).lower()}, and a better model's {name} is "
                f"{right}: the results and every comparison of runs rank the worse model first",
                "metric_list",
            )
            return
        if name in _MEAN and isinstance(how, str) and how != "mean":
            yield subject.at_line(
                "metric_list",
                f"metric_list aggregates {name} by {how!r}, and {name} is scored per document (0 or 1, or a share): "
                f"the task's score is the documents' mean, and their {how} says little of it (the median of 0s and "
                "1s is 0 or 1)",
                "metric_list",
            )
            return


# GLM-130B's names of the length-normalised accuracies
_GLM_NAMES = {"Accuracy_norm": "acc_norm", "Accuracy_per_token": "acc_per_token"}


def _normalised_on_one_length(subject: AuditSubject) -> Iterator[Hit]:
    """acc_norm divides by a choice's length in characters, acc_per_token by its tokens: on choices of one length
    (options A to D), or of one character each (a token each), both are acc under another name."""
    shown = metric_names(subject)
    names = {_GLM_NAMES.get(n, n): n for n in shown}
    if not subject.scored or not {"acc_norm", "acc_per_token"} & set(names):
        return
    key = "metrics" if lmeval_config(subject) is None else "metric_list"  # lm-eval's
    if "acc_norm" in names:
        length = len(subject.scored[0].choices[0])
        # one length throughout: stops at the first row with another (most tasks' first or second row)
        if all(len(c) == length for s in subject.scored for c in s.choices):
            yield subject.at_line(
                key,
                f"{names['acc_norm']} divides each choice's log-likelihood by its length, and every choice is "
                f"{length} character(s) long: it is acc under another name, not a length-normalised accuracy",
                key,
            )
            return
    if "acc_per_token" in names:
        one = subject.scored[0].choices[0].strip()
        if len(one) == 1 and all(len(c.strip()) == 1 and c.isascii() for s in subject.scored for c in s.choices):
            yield subject.at_line(
                key,
                f"{names['acc_per_token']} divides each choice's log-likelihood by its tokens, and every choice is "
                f"one character ({one!r}), one token: it is acc under another name, not a per-token accuracy",
                key,
            )


BLEU_ORDER = 4  # corpus BLEU's highest n-gram (sacrebleu's and lm-eval's): a shorter reference has none of them


def _bleu_on_short(subject: AuditSubject) -> Iterator[Hit]:
    """Corpus BLEU multiplies the precisions of 1- to 4-grams: where nearly every reference is under four words no
    4-gram matches, and the score is 0 (or its smoothing's floor) whatever the answers, right ones included."""
    if "bleu" not in metric_names(subject):
        return
    rows = [s.references for s in subject.samples[:PROBE_ROWS] if s.references]
    short = [refs for refs in rows if all(len(str(r).split()) < BLEU_ORDER for r in refs)]
    if len(rows) >= 4 and len(short) >= 0.9 * len(rows):
        yield subject.at_line(
            "metrics",
            f"bleu multiplies the precisions of 1- to {BLEU_ORDER}-word sequences, and the references of "
            f"{len(short)} of {len(rows)} rows read are shorter than {BLEU_ORDER} words (e.g. {short[0][0]!r:.30}): "
            "no 4-word sequence can match, so corpus BLEU is 0 whatever the answers (exact answers too); use chrf "
            "or exact match for short answers",
            "metrics",
        )


def _brier_on_several_golds(subject: AuditSubject) -> Iterator[Hit]:
    """brier_score sums (p_i - y_i)^2 over a one-hot y; with k right choices y has k ones, and the best distribution
    (1/k on each) scores (k-1)^2/k, not 0: such rows' scores sit on another scale than single-answer rows'."""
    if "brier_score" not in metric_names(subject) or subject.columns.gold_counts.max(initial=0) <= 1:
        return
    several = [s for s in subject.scored if len(set(s.gold)) > 1]
    if several:
        k = len(set(several[0].gold))
        yield subject.at_row(
            several[0].sample,
            f"brier_score with {k} right choices ({len(several)} of {len(subject.scored)} scored rows have more than "
            f"one): the best a model can score on such a row is {(k - 1) ** 2 / k:g} (1/{k} on each), not 0, so "
            "their scores are on another scale than one-answer rows' and the mean mixes the two; score such rows "
            "with gold_probability, or keep one right choice per row",
            "target",
        )


def metrics_mismatch(subject: AuditSubject) -> Iterator[Hit]:
    spec = subject.spec
    yield from _lmeval_settings(subject)
    if spec.kind == "generate":
        yield from _bleu_on_short(subject)
        yield from _f1_on_unspaced(subject)
        yield from _f1_on_labels(subject)
        yield from _exact_match_on_long(subject)
        yield from _raw_equality_on_punctuated(subject)
    if spec.kind == "perplexity" and "word_perplexity" in (metric_names(subject) or {"word_perplexity"}):
        yield from first_found(_word_perplexity_on_unspaced, pretokenized_texts)(subject)
    if spec.kind != "multiple_choice":
        return
    if spec.choice_temperature < TINY_TEMPERATURE:
        yield subject.at_line(
            "choice_temperature",
            f"choice_temperature is {spec.choice_temperature:g}: the choices' log-probabilities divided by it give "
            "distributions with one choice at 1.0 and the rest at 0, so probability and calibration numbers only "
            "say which choice won",
            "choice_temperature",
        )
    elif spec.choice_temperature > HUGE_TEMPERATURE:
        yield subject.at_line(
            "choice_temperature",
            f"choice_temperature is {spec.choice_temperature:g}: the choices' log-probabilities divided by it are "
            "all near 0, so every distribution is near uniform (each choice about 1/n) and probability and "
            "calibration numbers say nothing of the model",
            "choice_temperature",
        )
    yield from _normalised_on_one_length(subject)
    yield from _brier_on_several_golds(subject)


RULES = (
    AuditRule(
        "metrics.mismatch",
        "warning",
        "A metric cannot mean its name here: acc_norm on choices of one length (acc_per_token on one-letter ones), a "
        "choice_temperature near 0 or huge, f1 on answers written without spaces or on one-word or one-number "
        "references, word_perplexity on text without spaces or split WikiText-style, an lm-eval metric given the "
        "other direction or a median, exact match on whole worked solutions, GLM's raw Accuracy on punctuated "
        "references, corpus BLEU over references shorter than four words, brier_score on rows with several right "
        "choices.",
        metrics_mismatch,
    ),
)
