"""File readers: each returns a list of row dicts, and errors name the file and line/row."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Callable

from proctor.core.audit import Hit
from proctor.core.errors import TaskDefinitionError
from proctor.core.names import first_repeat
from proctor.core.special_files import refuse_special
from proctor.data.dataset_folders import folder_files
from proctor.data.file_text import (
    COMPRESSIBLE,
    COMPRESSIONS,
    UNREAD_COMPRESSIONS,
    compression,
    decode_utf8,
    file_bytes,
    read_lines_text,
)
from proctor.data.quote_span import RULE as QUOTE_RULE
from proctor.data.quote_span import glued_quote, swallowed_rows
from proctor.data.reserved_names import no_reserved
from proctor.data.strict_json import RefusedJson, loads

_SUFFIX_FORMATS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".arrow": "arrow",
    ".txt": "text",
    ".text": "text",
    ".raw": "text",
}

Row = dict[str, Any]  # one record: column name to its value (JSON, CSV text or Arrow's Python value)

ROW_KEY = "_row"  # 1-based line (jsonl, csv incl. header) or record number, for error messages
FILE_KEY = "_file"  # file stem; lets tasks break results down by file


def detect_format(path: Path) -> str:
    if path.is_dir():
        return folder_files(path, "auto")[0]
    suffixes = path.suffixes
    if suffixes and suffixes[-1].lower() in COMPRESSIONS:
        suffixes = suffixes[:-1]  # the format is the suffix before the compression's
    for suffix in reversed(suffixes):
        if suffix.lower() in _SUFFIX_FORMATS:
            return _SUFFIX_FORMATS[suffix.lower()]
    raise TaskDefinitionError(
        f"cannot tell the data format from the name; set 'format' to one of {sorted(set(_SUFFIX_FORMATS.values()))}",
        file=path,
    )


def read_rows(
    path: Path,
    fmt: str = "auto",
    columns: list[str] | None = None,
    records_key: str | None = None,
    noticed: dict[str, list[Hit]] | None = None,
) -> list[Row]:
    """Read one data file (or Arrow/Parquet folder) into row dicts. ``noticed`` (if given) receives, by audit
    rule id, what reading showed that is not an error (a CSV quote left open)."""
    if not path.exists():
        raise TaskDefinitionError("data file not found", file=path)
    refuse_special(path, "data file")
    unread = UNREAD_COMPRESSIONS.get(path.suffix.lower()) if path.is_file() else None
    if unread is not None:
        supported = ", ".join(f"{name} ({ext})" for ext, name in COMPRESSIONS.items())
        raise TaskDefinitionError(
            f"a {unread}-compressed file ('{path.suffix}'), which proctor does not read; it reads text files plain "
            f"or compressed as {supported}, and Parquet and Arrow uncompressed: decompress it, or recompress it as "
            "one of these",
            file=path,
        )
    if fmt == "auto":
        fmt = detect_format(path)
    kind = compression(path) if path.is_file() else None
    if kind is not None and fmt not in COMPRESSIBLE:
        raise TaskDefinitionError(
            f"a {kind}-compressed {fmt} file cannot be read: {fmt} compresses its own columns; "
            f"decompress it (or save it uncompressed)",
            file=path,
        )
    if (
        fmt not in _READERS and fmt not in _DELIMITERS and fmt != "json"
    ):  # pragma: no cover - the spec validates the format
        raise TaskDefinitionError(f"unknown format '{fmt}'", file=path)
    try:
        if fmt in _DELIMITERS:
            rows = _read_delimited(path, columns, _DELIMITERS[fmt], noticed)
        elif fmt == "json":
            rows = _read_json(path, records_key)
        elif path.is_dir():  # the files the folder's own record lists, of one format and one split
            fmt, files = folder_files(path, fmt, noticed)
            rows = [row for file in files for row in _READERS[fmt](file)]
            rows = [{**row, ROW_KEY: i} for i, row in enumerate(rows, start=1)]  # numbered across the files
        else:
            rows = _READERS[fmt](path)
    except TaskDefinitionError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskDefinitionError(f"cannot read the data file: {exc}", file=path) from None
    except Exception as exc:  # pyarrow and friends raise many kinds
        raise TaskDefinitionError(f"cannot read the data file as {fmt}: {exc}", file=path) from None
    if not rows:
        what = "only a header row" if fmt in ("csv", "tsv") and not columns and file_bytes(path) else "no rows"
        raise TaskDefinitionError(f"the data file holds {what} (it is empty)", file=path)
    return rows


def json_values(path: Path) -> list[tuple[int, Any]]:
    """Each non-blank line's number (from 1) and JSON value in a JSON Lines file, read as ``read_rows`` reads
    one (decompressed where the name says so; UTF-8 without NUL; no key twice in an object, no lone surrogate):
    a bad line is an error naming the file, the line and, for a repeated key, the field. For the dialects that
    hold a file's values as they are (no ``_row`` added, any JSON value)."""
    values = []
    for number, line in enumerate(decode_utf8(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            values.append((number, loads(line)))
        except RefusedJson as exc:
            raise TaskDefinitionError(f"line {number}: {exc}", file=path, line=number, field=exc.key) from None
        except json.JSONDecodeError as exc:
            message = f"line {number} is not valid JSON: {exc.msg}{_jsonl_layout_hint(line, number)}"
            raise TaskDefinitionError(message, file=path, line=number) from None
        except RecursionError:
            raise TaskDefinitionError(
                f"line {number}: arrays or objects nested too deeply to read", file=path, line=number
            ) from None
    return values


def _jsonl_layout_hint(line: str, number: int) -> str:
    """What a JSON Lines file's bad line says of the file's layout: line ends of carriage returns only (the whole
    file one line), or one JSON document (a .json file's array, or an object over several lines)."""
    if "\r" in line and line.count("\r") > 1:
        return "; the file's lines end with carriage returns only (an old Mac layout): save it with '\\n' line ends"
    if number == 1 and line.strip() in ("[", "{") or (number == 1 and line.lstrip().startswith("[")):
        return (
            "; the file is one JSON document (an array or an object over several lines), not one object per line: "
            "name it .json (or set format: json)"
        )
    return ""


def json_document(path: Path) -> Any:
    """A JSON file's one value, read with the checks of ``json_values``; errors name the file and line."""
    return parse_json(decode_utf8(path), path)


def parse_json(text: str, path: Path) -> Any:
    """``json_document`` for the text of ``path`` already decoded (a reader that also looks into the text)."""
    try:
        return loads(text)
    except RefusedJson as exc:
        raise TaskDefinitionError(str(exc), file=path, field=exc.key) from None
    except json.JSONDecodeError as exc:
        where = f"{exc.msg} (column {exc.colno})"
        if exc.msg == "Extra data" and exc.lineno > 1 and exc.colno == 1:  # a whole value, then another line's
            where += (
                "; the file holds one JSON value per line (JSON Lines), not one document: name it .jsonl (or set "
                "format: jsonl)"
            )
        raise TaskDefinitionError(f"not valid JSON: {where}", file=path, line=exc.lineno) from None
    except RecursionError:
        raise TaskDefinitionError("arrays or objects nested too deeply to read", file=path) from None


def _read_jsonl(path: Path) -> list[Row]:
    rows: list[Row] = []
    for number, row in json_values(path):
        if not isinstance(row, dict):
            whole = "; the file is one JSON array (a .json file's layout): name it .json (or set format: json)"
            raise TaskDefinitionError(
                f"line {number} is a {type(row).__name__}, expected a JSON object"
                + (whole if isinstance(row, list) and number == 1 else ""),
                file=path,
                line=number,
            )
        if not rows:
            no_reserved(row, path, number)
        row[ROW_KEY] = number
        rows.append(row)
    return rows


def _read_json(path: Path, records_key: str | None) -> list[Row]:
    data = json_document(path)
    if records_key is not None:
        if not isinstance(data, dict) or records_key not in data:
            raise TaskDefinitionError(f"no key '{records_key}' at the top level", file=path, field="records_key")
        data = data[records_key]
    if not isinstance(data, list):
        raise TaskDefinitionError(
            "expected a list of records (or set 'records_key' to the key that holds them)", file=path
        )
    rows: list[Row] = []
    for number, row in enumerate(data, start=1):
        if not isinstance(row, dict):
            raise TaskDefinitionError(f"record is a {type(row).__name__}, expected an object", file=path, row=number)
        if not rows:
            no_reserved(row, path)
        rows.append({**row, ROW_KEY: number})
    return rows


class _QuoteBroken(Exception):
    """A strict read met a quote not closed where its field ends (``csv.Error`` at ``line``)."""

    def __init__(self, line: int) -> None:
        self.line = line


def _read_delimited(
    path: Path, columns: list[str] | None, delimiter: str, noticed: dict[str, list[Hit]] | None = None
) -> list[Row]:
    text = decode_utf8(path)
    if '"' not in text:  # no quote: a strict read and a lax one are the same
        return _parse_delimited(text, path, columns, delimiter, noticed, strict=False)
    # a strict read (as fast as a lax one) stops where a field opens a quote and goes on after closing it
    # ('"Ligament" is a term', a TSV written without quoting): the lax read, which gives the rows as before,
    # drops those quotes and glues the rest of the field on, which the audit is told (data.quote-open)
    seen: dict[str, list[Hit]] = {}
    try:
        rows = _parse_delimited(text, path, columns, delimiter, seen, strict=True)
    except _QuoteBroken as broken:
        rows = _parse_delimited(text, path, columns, delimiter, noticed, strict=False)
        if noticed is not None:
            header = [k for k in rows[0] if k != ROW_KEY] if rows else list(columns or [])
            noticed.setdefault(QUOTE_RULE, []).append(glued_quote(text, broken.line, header, delimiter, path))
        return rows
    if noticed is not None:
        for rule, hits in seen.items():
            noticed.setdefault(rule, []).extend(hits)
    return rows


def _parse_delimited(
    text: str,
    path: Path,
    columns: list[str] | None,
    delimiter: str,
    noticed: dict[str, list[Hit]] | None,
    strict: bool,
) -> list[Row]:
    with io.StringIO(text, newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter, strict=strict)
        try:
            return _records(reader, path, columns, delimiter, noticed)
        except csv.Error:
            if strict:
                raise _QuoteBroken(reader.line_num) from None
            raise


def _records(
    reader: Any, path: Path, columns: list[str] | None, delimiter: str, noticed: dict[str, list[Hit]] | None
) -> list[Row]:
    """The reader's records as rows (the header's columns checked), with what reading noticed."""
    if columns:
        header = list(columns)
    else:
        first_line = next(reader, None)
        if first_line is None:  # no line at all
            return []
        header = first_line
    no_reserved(header, path, None if columns else 1)
    repeat = first_repeat(header)
    if repeat is not None:  # a row dict would keep only the last of them
        raise TaskDefinitionError(
            f"column '{repeat[1]}' is named twice in the header", file=path, line=1, field=repeat[1]
        )
    rows: list[Row] = []
    ended = reader.line_num  # the line the previous record ended on
    for record in reader:
        line, started, ended = reader.line_num, ended + 1, reader.line_num
        if not record:
            continue
        if line > started and noticed is not None:  # a quoted field spans lines: by design, or a quote left open
            swallowed = swallowed_rows(record, header, delimiter, path, started, line)
            if swallowed is not None:
                noticed.setdefault(QUOTE_RULE, []).append(swallowed)
        if columns and not rows and [c.strip() for c in record] == [c.strip() for c in header]:
            raise TaskDefinitionError(  # read as a row, the header would be a sample ("question", "answer")
                f"the first line names the columns ({', '.join(record)}): with 'columns' set it would be read "
                "as a row; leave 'columns' out, the file's header names them",
                file=path,
                line=line,
                field="columns",
            )
        if [c.strip() for c in record] == [c.strip() for c in header]:
            raise TaskDefinitionError(  # files joined with `cat`, each with its header: the header becomes a sample
                f"line {line} repeats the {'columns given' if columns else 'header'} ({', '.join(record)}): read "
                "as a row, it would be a sample whose "
                "values are the column names; were files joined with their headers? Remove the line, or read the "
                "files as they were (a 'path' glob)",
                file=path,
                line=line,
            )
        if len(record) != len(header):
            spanned = f" (a row running from line {started}: a quote left open?)" if line > started else ""
            raise TaskDefinitionError(
                f"has {len(record)} columns, expected {len(header)} ({', '.join(header)}){spanned}",
                file=path,
                line=line,
            )
        row: Row = dict(zip(header, record))
        row[ROW_KEY] = line
        rows.append(row)
    return rows


def _read_parquet(path: Path) -> list[Row]:
    import pyarrow.parquet as pq

    rows = _table_rows(pq.read_table(path), path)
    no_reserved(rows[0] if rows else (), path)
    return [{**row, ROW_KEY: i} for i, row in enumerate(rows, start=1)]


def _read_arrow(path: Path) -> list[Row]:
    """One Arrow file: Hugging Face ``save_to_disk`` shards are IPC streams; plain .arrow files may be either."""
    import pyarrow as pa

    with pa.memory_map(str(path)) as source:
        try:
            table = pa.ipc.open_stream(source).read_all()
        except pa.ArrowInvalid:
            source.seek(0)
            table = pa.ipc.open_file(source).read_all()
    rows = _table_rows(table, path)
    no_reserved(rows[0] if rows else (), path)
    return [{**row, ROW_KEY: i} for i, row in enumerate(rows, start=1)]


def _table_rows(table: Any, path: Path) -> list[Row]:
    """An Arrow table's rows, refusing a binary column of text. A writer that stores strings without their UTF8
    annotation (older Spark and Hive) gives binary columns: read as they are, every value is Python bytes, and a
    prompt shows ``b'caf\\xc3\\xa9'``, its reference the same, scored without a word. Bytes that are not UTF-8
    (an image's) are left to the field that reads them (``data/images.py``)."""
    import pyarrow as pa

    for name, column in zip(table.column_names, table.columns):
        kind = column.type
        if not (pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind)):
            continue
        values = [(i, v) for i, v in enumerate(column.to_pylist(), start=1) if v]
        if values and all(_is_utf8(v) for _, v in values):
            row, value = values[0]
            raise TaskDefinitionError(
                f"column '{name}' is binary ({kind}), and its values are UTF-8 text ({value[:40]!r}): read as they "
                "are, prompts and references would show Python's bytes; write it as a string column (Spark: "
                "spark.sql.parquet.binaryAsString, or cast to string)",
                file=path,
                row=row,
                field=name,
            )
    rows: list[Row] = table.to_pylist()
    return rows


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _read_text(path: Path) -> list[Row]:
    return [{"text": read_lines_text(path), ROW_KEY: 1}]


_DELIMITERS = {"csv": ",", "tsv": "\t"}  # read by _read_delimited, with the given column names
# json is read by _read_json (with its records_key); these read the path alone
_READERS: dict[str, Callable[[Path], list[Row]]] = {
    "jsonl": _read_jsonl,
    "parquet": _read_parquet,
    "arrow": _read_arrow,
    "text": _read_text,
}
