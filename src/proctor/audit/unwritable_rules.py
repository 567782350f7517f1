"""References that hold what no model writes: markup tags (``<b>Paris</b>``), characters a reader does not see
(a zero-width space, a soft hyphen, a BOM) or, where the comparison keeps them, a script's own end punctuation
(``北京。``: SQuAD's normalisation drops ASCII punctuation only). An answer of the reference's visible words
then differs from it once both are normalised, so the row scores 0 whatever the model says.

Unicode's form is read too (``_form``): decomposed accents (NFD 'Tích cực', where a model writes the composed
NFC form), compatibility characters (the ligature 'ﬁ' of a PDF's text, full-width digits '１８') and typographic
punctuation inside an answer ('O’Connor', 'mini–game', where a model writes ASCII's). The metrics compare
characters as they stand (SQuAD's normalisation drops ASCII punctuation only), so such a row scores 0. These are
named where a tenth of the rows or more hold one, and a reference whose row also lists the written form as an
alias is left alone (many datasets spell an apostrophe ’ and also accept it as ').

Every dialect's generated rows are read (their references are what the metrics compare); the rows are found
with one pass over the references' joined text, so a task without such characters costs one ``isascii``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterator

from proctor.audit.metric_rules import metric_names
from proctor.audit.reference_comparison import Comparison, comparisons
from proctor.audit.source_rows import target_reads
from proctor.audit.subject import INVISIBLE, AuditSubject
from proctor.core.answer_normalisation import SQUAD
from proctor.core.audit import AuditRule, Hit

# HTML's inline and block tags, opened or closed: a bare '<' or a type such as List<int> is not one
_TAG = re.compile(
    r"</?(?:b|i|u|s|em|strong|br|p|span|div|sup|sub|small|font|a|li|ul|ol|td|tr|th|table|hr|mark)"
    r"(?:\s+[\w-]+=[^<>]*)?\s*/?>",
    re.IGNORECASE,
)
_LATIN_END = 0x0250  # Latin letters end with Latin Extended-B
SHORT_ANSWER = 12  # characters: a name or a number, where an end punctuation is the data's, not the answer's


def _end_punctuation(text: str) -> str:
    """The non-ASCII punctuation a reference ends with ('。', '！', '؟'), which SQuAD's normalisation keeps."""
    end = len(text)
    while end and not text[end - 1].isascii() and unicodedata.category(text[end - 1]).startswith("P"):
        end -= 1
    return text[end:]


# Unicode's compatibility blocks a pipeline leaves in text: Latin and Hebrew ligatures, full-width ASCII
_COMPATIBILITY = re.compile("[\ufb00-\ufb4f\uff01-\uff5e]")
# typographic punctuation a word processor writes where a model writes ASCII's (SQuAD's set is ASCII only)
_TYPOGRAPHIC = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "–": "-", "—": "-", "…": "..."})


def _form(reference: str) -> tuple[str, str]:
    """(the reference as a model writes it, what differs, as the message shows it) where Unicode's form is what
    no model writes: decomposed accents, a compatibility character, typographic punctuation."""
    composed = unicodedata.normalize("NFC", reference)
    if composed != reference:
        return composed, "decomposed accents (Unicode NFD; a model writes the composed NFC form)"
    odd = _COMPATIBILITY.search(reference)
    if odd is not None:
        return unicodedata.normalize("NFKC", reference), (
            f"{odd.group()!r} ({unicodedata.name(odd.group(), '?').lower()}, where a model writes "
            f"{unicodedata.normalize('NFKC', odd.group())!r})"
        )
    plain = reference.translate(_TYPOGRAPHIC)
    if plain != reference:
        mark = next(c for c in reference if c in "’‘“”–—…")
        return plain, f"the typographic {mark!r} (a model writes {mark.translate(_TYPOGRAPHIC)!r})"
    return reference, ""


def _visible(reference: str, compared_whole: bool) -> tuple[str, str]:
    """(the reference as a model would write it, what was taken out of it, as the message shows it);
    ``compared_whole``: the task scores exact match or F1, which keep a script's own punctuation."""
    tag = _TAG.search(reference)
    if tag is not None:
        return _TAG.sub("", reference), repr(tag.group())
    hidden = INVISIBLE.search(reference)
    if hidden is not None:
        visible = INVISIBLE.sub("", reference)
        # joiners and zero-width spaces belong to some scripts' own spelling (Persian, Indic, Thai line breaks,
        # emoji): only a Latin text's are stray
        if max(map(ord, visible), default=0) < _LATIN_END:
            return visible, f"U+{ord(hidden.group()):04X} ({unicodedata.name(hidden.group(), '?')})"
        return reference, ""
    stripped = reference.rstrip()
    end = _end_punctuation(stripped)
    short = stripped[: len(stripped) - len(end)]
    # a short answer ('北京。'), not a sentence (a translation's references end as the model's do)
    if end and compared_whole and len(short) <= SHORT_ANSWER and not any(c.isspace() for c in short):
        return short, repr(end)
    return reference, ""


PROBE_ROWS = 1000  # rows read for the numbers' form: a pipeline's float column is in every row
_FLOAT_TEXT = re.compile(r"-?\d+\.0+")  # an integer a float column wrote ('18.0'): SQuAD makes it '180'
_DECIMAL = re.compile(r"-?\d*\.\d*[1-9]\d*")  # a number with a fraction: the answers are decimals
_LATEX = re.compile(r"\\(?:boxed|fbox|frac|dfrac|text|mathrm)\{")  # MATH's wrappers: SQuAD makes '\boxed{18}' 'boxed18'


# a spreadsheet's formula saved in place of its value ('=40+2', '=SUM(1;2;3)'): an export that kept the cell's text
_FORMULA = re.compile(r"=\s*(?:[A-Za-z][A-Za-z0-9.]*\s*\(.*\)|[-+]?\d[\d.,]*(?:\s*[-+*/^]\s*[-+]?\d[\d.,]*)+)")
# a number grouped by a no-break, narrow no-break or thin space ('1\u00a0234', French spreadsheets): no model writes it
_SPACED_NUMBER = re.compile(r"\d{1,3}(?:[\u00a0\u202f\u2009]\d{3})+")


def _spreadsheet_forms(subject: AuditSubject, rows: list[tuple[int, tuple[str, ...]]]) -> Iterator[Hit]:
    """References a spreadsheet export left as the cell's formula or with its digit grouping's no-break spaces:
    a model answers the value ('42', '1234'), which never matches."""
    for pattern, what, fix in (
        (_FORMULA, "a spreadsheet formula, not its value", "export the values, not the formulas"),
        (_SPACED_NUMBER, "a number grouped by no-break spaces", "write the numbers without grouping spaces"),
    ):
        found = [(i, r) for i, refs in rows for r in refs[:1] if pattern.fullmatch(r.strip())]
        if found:
            i, reference = found[0]
            yield subject.at_row(
                subject.samples[i].sample,
                f"the reference {reference!r:.40} is {what} ({len(found)} of {len(rows)} rows read): a model answers "
                f"the number itself, which never matches it, so the row scores 0; {fix}",
                "target",
            )
            return


def _number_forms(subject: AuditSubject) -> Iterator[Hit]:
    """Most references an integer written as a float ('18.0', a pandas column's), where no reference read has a
    fraction, or a LaTeX wrapper (``\\boxed{18}``) the prompts do not mention: a model answers '18', and the
    metric's normalisation ('180', 'boxed18') never matches it."""
    rows = [(i, refs) for i, refs in enumerate(subject.columns.references[:PROBE_ROWS]) if refs]
    spreadsheet = list(_spreadsheet_forms(subject, rows))
    if spreadsheet:
        yield from spreadsheet
        return
    if len(rows) < 4:
        return
    floats = [(i, r) for i, refs in rows for r in refs[:1] if _FLOAT_TEXT.fullmatch(r.strip())]
    if len(floats) * 2 >= len(rows) and not any(_DECIMAL.fullmatch(r.strip()) for _, refs in rows for r in refs):
        i, reference = floats[0]
        fields = subject.samples[i].sample.fields
        if any(isinstance(fields.get(name), float) for name in target_reads(subject)):
            return  # a float the row holds as a number: references.coerced's own finding names it
        yield subject.at_row(
            subject.samples[i].sample,
            f"the reference {reference!r} is a whole number written as a float ({len(floats)} of {len(rows)} rows "
            f"read, and none has a fraction): a model answers {reference.split('.')[0]!r}, and the metric's "
            f"normalisation makes the reference {SQUAD(reference)!r}, so the row scores 0; write the references as "
            "integers (a float column read from pandas?)",
            "target",
        )
        return
    wrapped = [(i, r, found.group()) for i, refs in rows for r in refs[:1] if (found := _LATEX.search(r))]
    prompts = subject.columns.prompt_texts
    if len(wrapped) * 2 >= len(rows) and not any("\\" in prompts[i] for i, _, _ in wrapped[:20]):
        i, reference, wrapper = wrapped[0]
        yield subject.at_row(
            subject.samples[i].sample,
            f"the reference {reference!r:.40} holds LaTeX ({wrapper}...) in {len(wrapped)} of {len(rows)} rows "
            f"read, which the prompts do not ask for: the metric's normalisation makes it {SQUAD(reference)!r:.30}, "
            "which an answer of the number alone never matches; strip the wrapper",
            "target",
        )


def _unwritable(reference: str, row: tuple[str, ...], compared_whole: bool, comparison: Comparison) -> tuple[str, str]:
    """('odd' or 'formed', what no model writes) for a reference whose compared part no model writes; ('', '')
    for one a model can write."""
    scored = comparison.scored(reference)
    if scored.isascii() and "<" not in scored:
        return "", ""
    key = comparison.normalise
    visible, taken = _visible(scored, compared_whole)
    if taken and visible.strip() and key(visible) != key(scored):
        return "odd", taken
    visible, taken = _form(scored)
    # an alias in the form a model writes answers the row
    if taken and visible.strip() and key(visible) not in {comparison.key(r) for r in row}:
        return "formed", taken
    return "", ""


def unwritable_references(subject: AuditSubject) -> Iterator[Hit]:
    columns = subject.columns
    if columns.all_multiple_choice:
        return  # a multiple-choice task: the model writes nothing to compare
    yield from _number_forms(subject)
    references = columns.references
    joined = "".join("".join(r) for r in references)
    if joined.isascii() and "<" not in joined:
        return
    compared_whole = bool(metric_names(subject) & {"exact_match", "f1"})
    # the metric's own comparison: what its regexes_to_ignore delete (a worked solution before '#### 20') is
    # never compared, and its case and punctuation settings say what differs
    comparison = comparisons(subject)[0]
    odd: list[tuple[int, str, str]] = []  # (sample position, reference, what no model writes)
    formed: list[tuple[int, str, str]] = []  # the same, for Unicode's form
    for i, row in enumerate(references):
        if columns.choices[i]:
            continue
        found = [(reference, *_unwritable(reference, row, compared_whole, comparison)) for reference in row]
        if not row or any(not kind for _, kind, _ in found):
            continue  # a row is scored by its best-matching reference: one a model writes answers it
        reference, kind, taken = next((f for f in found if f[1] == "odd"), found[0])
        (odd if kind == "odd" else formed).append((i, reference, taken))
    if not odd and len(formed) * 10 >= len(references):
        odd = formed  # a stray row or two is the data's spelling; a tenth of them is how the data was made
    if odd:
        i, reference, taken = odd[0]
        yield subject.at_row(
            subject.samples[i].sample,
            f"the reference {reference!r:.60} holds {taken}, which no model writes ({len(odd)} of "
            f"{len(references)} rows): an answer of its visible words is scored 0 even once normalised; clean "
            "the references (strip markup, invisible characters and the end punctuation the metric keeps; "
            "NFKC-normalise them, or write punctuation as ASCII)",
            "target",
        )


RULES = (
    AuditRule(
        "references.unwritable",
        "warning",
        "A reference holds what no model writes (markup tags, zero-width or soft-hyphen characters, a non-ASCII end "
        "punctuation that exact match and F1 keep, decomposed accents, ligatures, full-width digits, typographic "
        "punctuation, an integer written as a float, a LaTeX wrapper, a spreadsheet formula or a number grouped by "
        "no-break spaces): its row scores 0 whatever the model says.",
        unwritable_references,
    ),
)
