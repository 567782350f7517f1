"""``text.damaged``: choices or references that a spreadsheet turned into dates. Opened in Excel (or LibreOffice)
and saved again, a cell '1-2' or '1/2' becomes the date 2 January and is written back as '2-Jan'; '1-45' becomes
'Jan-45'; read through pandas, a date cell comes out as '2001-01-02 00:00:00'. The option the question meant is
gone and the row offers a date among numbers (a nonsense distractor, or a right answer no model gives).

A choice that is a whole date in one of those forms is named where the probed rows also hold values written as
numbers, ranges or fractions (what the spreadsheet read as dates); a midnight timestamp ('2001-01-02 00:00:00'),
which no answer is written as, is named alone. A real date in words ('January 2') or in a year's form
('2001-01-02') is left alone."""

from __future__ import annotations

import re
from itertools import chain
from typing import Iterator, Sequence

from proctor.audit.form_rules import field_of
from proctor.audit.source_rows import documents
from proctor.audit.subject import AuditSubject
from proctor.core.audit import Hit

PROBE_ROWS = 1000  # a column a spreadsheet converted shows in many rows: the first ones tell
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH = f"(?:{'|'.join(_MONTHS)})"
# Excel's short date forms (d-mmm, mmm-yy) and a date cell as pandas writes it (a midnight timestamp)
_SHORT_DATE = rf"\d{{1,2}}-{_MONTH}|{_MONTH}-\d{{2}}"
_TIMESTAMP = r"\d{4}-\d{2}-\d{2} 00:00:00"
# a whole value of those forms, in the values joined each after a NUL: led by that literal, the search jumps from
# one value to the next in C (a search for the months anywhere reads every character, several times slower)
_WHOLE = re.compile(rf"\x00\s*(?:{_SHORT_DATE}|{_TIMESTAMP})\s*(?=\x00|$)")
_IS_TIMESTAMP = re.compile(rf"\s*{_TIMESTAMP}\s*")
_IS_DATE = re.compile(rf"\s*(?:{_SHORT_DATE}|{_TIMESTAMP})\s*")
# a value a spreadsheet reads as a date, or a plain number: '3', '1-2', '48-49', '3/4', '2.5'
_NUMBER_LIKE = re.compile(r"(?:^|\x00)\s*[+-]?\d+(?:[-/.:]\d+)?\s*(?=\x00|$)")


def _values(subject: AuditSubject, rows: int) -> list[tuple[int, str, Sequence[str]]]:
    """(row, 'choices' or 'references', the texts) of the first ``rows`` samples that have any."""
    out: list[tuple[int, str, Sequence[str]]] = []
    for i, sample in enumerate(subject.samples[:rows]):
        if sample.choices:
            out.append((i, "choices", sample.choices))
        if sample.references:
            out.append((i, "references", sample.references))
    return out


def spreadsheet_dates(subject: AuditSubject) -> Iterator[Hit]:
    columns = subject.columns
    every = chain(
        chain.from_iterable(columns.choices[:PROBE_ROWS]), chain.from_iterable(columns.references[:PROBE_ROWS])
    )
    joined = "\x00" + "\x00".join(every)
    if _WHOLE.search(joined) is None:
        return  # most tasks: no whole value is a date of these forms
    values = _values(subject, PROBE_ROWS)
    numbers = _NUMBER_LIKE.search(joined) is not None
    for i, part, texts in values:
        for text in texts:
            if _IS_DATE.fullmatch(text) is None or not (numbers or _IS_TIMESTAMP.fullmatch(text)):
                continue
            sample = subject.samples[i]
            field = field_of(documents(subject)[i], text, part)
            dated = sum(1 for _, _, t in values for x in t if _IS_DATE.fullmatch(x))
            beside = ", beside values written as numbers" if numbers else ""
            yield subject.at_row(
                sample.sample,
                f"the {part[:-1]} {text!r} is a date as a spreadsheet writes one ({dated} such value(s) in the "
                f"{min(len(subject.samples), PROBE_ROWS)} rows read{beside}): a value such as '1-2' or '1/2' "
                "opened in a spreadsheet and saved again becomes '2-Jan' (read through pandas, '2001-01-02 "
                "00:00:00'), so the value the row meant is gone and a date stands in its place",
                field,
            )
            return
