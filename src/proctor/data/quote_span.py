"""A CSV field that swallowed the rows after it: a quote opened inside a field and not closed where the writer
meant it to be (``1,"What is it,A`` on one line) makes the reader take every line up to the next quote as part
of that field. When the column count still comes out right, nothing fails: the rows in between are gone and one
question holds their text. A quoted field may hold line breaks by design (a passage), so what tells the two
apart is what the lines inside the field look like: rows of the file, with its number of columns."""

from __future__ import annotations

import csv
import re

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


# a field that opens a quote, closes it and goes on ('"Ligament" is a term'), its quotes doubled inside or not
_GLUED = re.compile(r'\s*"(?:[^"]|"")*"(?!")(.+)', re.DOTALL)


def glued_quote(text: str, line: int, header: list[str], delimiter: str, path: object) -> Hit:
    """A hit for the line a strict read stopped at: a field there opens a quote that closes before the field
    ends (the reader drops the quotes and glues the rest on) or never closes. The field is told from the raw
    line split on the delimiter."""
    lines = text.splitlines()
    raw = lines[line - 1] if 0 < line <= len(lines) else ""
    parts = raw.split(delimiter)
    glued = next((i for i, part in enumerate(parts) if _GLUED.fullmatch(part)), None)
    opened = next((i for i, part in enumerate(parts) if part.lstrip().startswith('"')), None)
    column = glued if glued is not None else opened
    field = header[column] if column is not None and column < len(header) else None
    shown = parts[column] if column is not None else raw
    if glued is not None:
        what = (
            "begins with a quote that closes before the field ends: the reader takes the quotes for the file's "
            "quoting, drops them and glues the rest of the field on, so the text read is not the file's"
        )
    else:
        what = "opens a quote that is not closed where the field ends: the reader runs the field on past it"
    return Hit(
        f"line {line}: the field {f'{field!r} ' if field else ''}{what} ({shown.strip()!r:.70}); a file written "
        "without quoting (a TSV) keeps its quotes as text only where no field begins with one: write it with "
        "quoting (the field in quotes, its own quotes doubled)",
        file=str(path),
        line=line,
        field=field,
    )
