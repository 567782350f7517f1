"""Rules over the few-shot pool: examples that are the evaluated rows themselves."""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from proctor.audit.subject import READER_FIELDS, AuditSubject
from proctor.core.audit import AuditRule, Hit
from proctor.core.task import OVERRIDDEN
from proctor.data.reserved_names import RESERVED
from proctor.data.sources import Sample


def _paths(rows: Iterable[Sample]) -> set[str]:
    """The files rows were read from, resolved (each distinct path once: a task may have 100,000 rows)."""
    return {str(Path(p).resolve()) for p in {r.fields.get("_path") for r in rows} if p}


DISTINCT_CHARS = 12  # a text this long that one row alone has names that row (its question, its passage)


# ASCII punctuation read as a space: a copy re-spaced around it ("webs ?" for "webs?") is the same text
_PUNCTUATION_AS_SPACE = str.maketrans({c: " " for c in string.punctuation})


def _composed(text: str) -> str:
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def _texts(fields: Mapping[str, object]) -> set[str]:
    """A row's long texts, spacing, case and punctuation aside: what a copy of the row keeps under new ids or
    field names, or re-spaced by a tokenizer's round trip; accents composed (NFC: a copy typed in decomposed
    accents is the same text to a reader)."""
    return {
        " ".join(_composed(v).translate(_PUNCTUATION_AS_SPACE).split()).casefold()
        for k, v in fields.items()
        if k not in READER_FIELDS and isinstance(v, str) and len(v) >= DISTINCT_CHARS
    }


def _distinct(rows: Iterable[Mapping[str, object]]) -> dict[str, int]:
    """Each long text that exactly one of ``rows`` holds, with that row's position (shared boilerplate left out)."""
    owner: dict[str, int] = {}
    shared: set[str] = set()
    for i, fields in enumerate(rows):
        for text in _texts(fields):
            if text in owner:
                shared.add(text)
            owner[text] = i
    return {t: i for t, i in owner.items() if t not in shared}


_NOT_CONTENT = frozenset(RESERVED)  # the reader's own fields (data/reserved_names.py)
# a column named as an id is one whatever the task declares: 'id', 'qid', 'idx', 'doc_id', 'question_id', 'uid', 'key'
# (not 'answer_key' or 'label_index': an answer, which a twin must share)
_ID_NAME = re.compile(r"^(q|u|g)?(id|idx|key|index)$|[_-](id|idx|uid)$", re.IGNORECASE)


def _twin(fields: Mapping[str, object], shot: object, ids: frozenset[str] = frozenset()) -> bool:
    """The example is the row itself under another id: every field but the ids (the task's declared id columns and
    any named as an id) and the reader's equal."""
    other = getattr(shot, "fields", None)
    if not isinstance(other, Mapping):
        return False
    keys = {k for k in set(fields) | set(other) if k not in _NOT_CONTENT and k not in ids and not _ID_NAME.search(k)}
    return bool(keys) and all(fields.get(k) == other.get(k) for k in keys)


def pool_leak(subject: AuditSubject) -> Iterator[Hit]:
    fewshot = subject.spec.fewshot
    if fewshot is None or not fewshot.count or not subject.pool:
        return
    if not subject.pool_is_own:
        same_file = _paths(subject.pool) & _paths(s.sample for s in subject.samples)
        if same_file:
            yield subject.at_line(
                "fewshot",
                f"fewshot.source reads {sorted(same_file)[0]}, the file the task evaluates: each row can be shown "
                "itself, answer included, as an example",
                "fewshot.source",
            )
            return
    pool_texts = _distinct(row.fields for row in subject.pool)
    by_id = {row.id: row for row in subject.pool}
    shot_texts: dict[str, set[str]] = {}  # a pool row's texts, made once however many rows it serves

    def texts_of(shot: str) -> set[str]:
        if shot not in shot_texts:
            shot_texts[shot] = _texts(by_id[shot].fields) if shot in by_id else set()
        return shot_texts[shot]

    shared = shown_itself = 0
    first = None
    ids = frozenset(d.id for d in subject.spec.data if d.id)  # the columns the task reads its ids from
    owned = [_texts(sample.sample.fields) for sample in subject.samples]
    # a long text several evaluated rows hold (a passage every question shares) is the task's, not a row's: an
    # example showing it shows no copy of the row
    counts = Counter(t for texts in owned for t in texts)
    for sample, texts in zip(subject.samples, owned):
        if not texts:
            continue
        own = {t for t in texts if counts[t] == 1}
        if not subject.pool_is_own and any(t in pool_texts for t in own):
            shared += 1
            first = first or sample.sample
        # the row itself among its own examples: a copy under another id (or a twin row in the task's own data)
        if any(own & texts_of(shot) or _twin(sample.sample.fields, by_id.get(shot), ids) for shot in sample.shots):
            shown_itself += 1
            first = first or sample.sample
    if first is not None:
        in_pool = (
            f"{shared} of {len(subject.samples)} evaluated rows are also in the few-shot pool (a copy of "
            "the evaluated split?); "
            if shared
            else ""
        )
        yield subject.at_row(
            first,
            f"{in_pool}{shown_itself} row(s) are shown a copy of themselves, answer included, as an example",
            "fewshot.source",
        )


def shots_from_evaluated(subject: AuditSubject) -> Iterator[Hit]:
    fewshot = subject.spec.fewshot
    if fewshot is None or not fewshot.count or not subject.pool_is_own:
        return
    yield subject.at_line(
        "fewshot",
        f"the {fewshot.count} few-shot example(s) per row are drawn from the rows being evaluated (never the row "
        "itself): test items serve as examples, and numbers differ from a run whose examples come from a "
        "training or dev split; give fewshot.source such a split",
        "fewshot.source",
    )


def fewshot_settings(subject: AuditSubject) -> Iterator[Hit]:
    """Few-shot settings that do nothing, or show examples without their answers."""
    fewshot = subject.spec.fewshot
    if fewshot is None:
        return
    if not fewshot.count and fewshot.source is not None:
        if "fewshot" in subject.task.resources.get(OVERRIDDEN, ()):
            return  # --num-fewshot 0 asked for no example: the file's source is not the file's mistake
        yield subject.at_line(
            "fewshot",
            "fewshot.source is given but fewshot.count is 0: no example is shown (--num-fewshot N sets the count)",
            "fewshot.count",
        )
        return
    if not fewshot.count or not fewshot.template or not subject.templated:
        return
    from proctor.audit.target_rules import template_fields

    shown = template_fields(fewshot.template)
    asked = template_fields(subject.spec.prompt or "")
    if not shown:
        yield subject.at_line(
            "fewshot",
            "the few-shot template reads no field of its example: every example is the same text",
            "fewshot.template",
        )
    elif shown <= asked:
        yield subject.at_line(
            "fewshot",
            f"the few-shot template reads only what the prompt asks ({', '.join(sorted(shown))}): the examples "
            "are shown without their answers",
            "fewshot.template",
        )
    elif asked and not shown & asked and shown <= _answer_fields(subject):
        yield subject.at_line(
            "fewshot",
            f"the few-shot template reads only the answer's fields ({', '.join(sorted(shown))}) and nothing the "
            f"prompt asks ({', '.join(sorted(asked))}): the examples are answers without their questions",
            "fewshot.template",
        )


def _answer_fields(subject: AuditSubject) -> frozenset[str]:
    """The fields the target and the choices read (a native task's own templates)."""
    from proctor.audit.target_rules import template_fields

    spec = subject.spec
    sources = [spec.target or ""]
    sources += (
        [spec.choices] if isinstance(spec.choices, str) else [c for c in spec.choices or [] if isinstance(c, str)]
    )
    return frozenset().union(*(template_fields(s) for s in sources if s))


RULES = (
    AuditRule(
        "fewshot.leak",
        "warning",
        "The few-shot pool holds evaluated rows (the same file, or rows with the same fields): answers leak.",
        pool_leak,
    ),
    AuditRule(
        "fewshot.settings",
        "warning",
        "Few-shot settings that show nothing (a source with count 0), or examples without their answers or without "
        "their questions.",
        fewshot_settings,
    ),
    AuditRule(
        "fewshot.from-evaluated",
        "warning",
        "Few-shot examples are drawn from the evaluated rows themselves, not from a separate split.",
        shots_from_evaluated,
    ),
)
