"""A CSV field that swallowed the rows after it: a quote opened inside a field and not closed where the writer
meant it to be (``1,"What is it,A`` on one line) makes the reader take every line up to the next quote as part
of that field. When the column count still comes out right, nothing fails: the rows in between are gone and one
question holds their text. A quoted field may hold line breaks by design (a passage), so what tells the two
apart is what the lines inside the field look like: rows of the file, with its number of columns."""

from __future__ import annotations

import csv

from proctor.core.audit import Hit

RULE = "data.quote-open"  # the audit rule that reports what is found here (audit/data_rules.py)


def _reads_as_row(line: str, width: int, delimiter: str) -> bool:
    if not line.strip():
        return False
    fields = next(csv.reader([line], delimiter=delimiter), [])
    return len(fields) == width


def swallowed_rows(
    record: list[str], header: list[str], delimiter: str, path: object, first_line: int, last_line: int
) -> Hit | None:
    """A hit for a record spanning ``first_line`` to ``last_line`` whose multi-line field holds lines that read
    as rows of the file (one such line where rows have three columns or more; two where they have two, as a
    passage's line often holds one comma), or None."""
    width = len(header)
    if width < 2:
        return None  # one column: every line reads as a row
    for column, value in zip(header, record):
        if "\n" not in value:
            continue
        lines = value.split("\n")
        rows = [(i, line) for i, line in enumerate(lines[1:], start=1) if _reads_as_row(line, width, delimiter)]
        if len(rows) < (1 if width >= 3 else 2):
            continue
        offset, text = rows[0]
        return Hit(
            f"the field '{column}' of the row starting at line {first_line} runs on to line {last_line} and holds "
            f"{len(rows)} line(s) that read as rows of the file (line {first_line + offset}: {text.strip()!r:.60}): "
            "a quote left open swallows the rows after it, which are then not evaluated",
            file=str(path),
            line=first_line,
            field=column,
        )
    return None
