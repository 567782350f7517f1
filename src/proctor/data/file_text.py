"""A data file's bytes and text: decompressed where its name says so (and named where its content is compressed
otherwise), UTF-8 checked with the line and column of a bad byte, line ends as Python's text mode reads them.
Every reader (``readers.py``) and the dialects that read files of their own go through here."""

from __future__ import annotations

import io
from pathlib import Path

from proctor.core.errors import TaskDefinitionError

# A data file may be compressed: its last suffix names how (``test.jsonl.gz`` is JSON lines, gzipped); the
# text formats are read through the same reader, with the same checks, after decompressing in memory.
COMPRESSIONS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}
COMPRESSIBLE = {"jsonl", "json", "csv", "tsv", "text"}  # Parquet and Arrow compress their own columns
# How a compressed file begins (its magic number), for a file that is not text: one compressed twice, compressed
# without the suffix that says so, or in a format not read (zstd, common on the hub) is named as such, not as text
# that is "not UTF-8" or "holds a NUL byte". (bzip2's 'BZh' is also text: only asked of a file that is not.)
_MAGIC = {
    b"\x1f\x8b": ("gzip", ".gz"),
    b"BZh": ("bzip2", ".bz2"),
    b"\xfd7zXZ\x00": ("xz", ".xz"),
    b"(\xb5/\xfd": ("zstd", ".zst"),
    b"\x04\x22\x4d\x18": ("lz4", ".lz4"),
    b"PK\x03\x04": ("zip", ".zip"),
    b"7z\xbc\xaf\x27\x1c": ("7z", ".7z"),
}
# compressions whose suffix names a file proctor does not read (an error naming it, not a reader's confusion)
UNREAD_COMPRESSIONS = {".zst": "zstd", ".zstd": "zstd", ".lz4": "lz4", ".br": "brotli", ".zip": "zip", ".7z": "7z"}
MOST_DECOMPRESSED = 4 << 30  # bytes a compressed data file may unpack to (rows are held in memory)


def compression(path: Path) -> str | None:
    """How a file is compressed, from its last suffix (``gzip``, ``bzip2``, ``xz``), or None."""
    return COMPRESSIONS.get(path.suffix.lower())


def file_bytes(path: Path) -> bytes:
    """A file's bytes, decompressed where its name says it is compressed (``.gz``, ``.bz2``, ``.xz``)."""
    kind = compression(path)
    if kind is None:
        return path.read_bytes()
    import bz2
    import gzip
    import lzma
    import zlib

    try:
        handle: io.BufferedIOBase  # GzipFile, BZ2File and LZMAFile all are
        if kind == "gzip":
            handle = gzip.open(path, "rb")
        else:
            handle = bz2.open(path, "rb") if kind == "bzip2" else lzma.open(path, "rb")
        with handle:
            data = handle.read(MOST_DECOMPRESSED + 1)  # never more: a small file can unpack to any size
    except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError) as exc:  # not that format, or cut short
        raise TaskDefinitionError(
            f"cannot decompress the {kind} file ({type(exc).__name__}: {exc}); "
            f"is it whole, and {kind}-compressed as its name '{path.suffix}' says?",
            file=path,
        ) from None
    if len(data) > MOST_DECOMPRESSED:
        raise TaskDefinitionError(
            f"decompresses to more than {MOST_DECOMPRESSED:,} bytes, more than a data file read into memory may "
            "hold (a decompression bomb?); split it into several files (a 'path' glob reads them in order)",
            file=path,
        )
    return data


def _still_compressed(data: bytes, path: Path) -> None:
    """An error naming the compression where ``data`` (not text) begins as a compressed file does."""
    for magic, (kind, suffix) in _MAGIC.items():
        if not data.startswith(magic):
            continue
        read = {name: ext for ext, name in COMPRESSIONS.items()}
        if compression(path) is not None:
            how = f"decompressed as {compression(path)}, its content is {kind}-compressed again (compressed twice?)"
        elif kind in read:
            how = f"its content is {kind}-compressed, but its name does not end in '{read[kind]}'"
        else:
            how = f"its content is {kind}-compressed ({suffix}), which proctor does not read"
        supported = ", ".join(f"{name} ({ext})" for ext, name in COMPRESSIONS.items())
        raise TaskDefinitionError(
            f"{how}; proctor reads text files plain or compressed as {supported}, named by their last suffix: "
            "decompress it, or recompress it as one of these",
            file=path,
        )


def decode_utf8(path: Path) -> str:
    """A file's text (decompressed where its name says so); bytes that are not UTF-8 are an error naming the
    line and column (or the compression, where the bytes are a compressed file's)."""
    data = file_bytes(path)
    if b"\x00" in data:
        _still_compressed(data, path)  # UTF-8 text never holds NUL: a binary file, or UTF-16
        at = data.index(b"\x00")
        line = data.count(b"\n", 0, at) + 1
        raise TaskDefinitionError(
            f"line {line} holds a NUL byte: this is not UTF-8 text (a binary file, or UTF-16?); save it as UTF-8",
            file=path,
            line=line,
        )
    try:
        return data.decode("utf-8-sig")  # a byte-order mark (Windows editors write one) is not part of the data
    except UnicodeDecodeError as exc:
        _still_compressed(data, path)
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise TaskDefinitionError(
            f"line {line} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at column {column}); save the file as UTF-8",
            file=path,
            line=line,
        ) from None


def read_lines_text(path: Path, keep_bom: bool = False) -> str:
    """A text file as Python's ``open()`` in text mode gives it, which GLM-130B's and probsem's readers use: line
    ends of any system ('\r\n', '\r') read as '\n'. A file saved on Windows is the same text (no carriage return
    scored as a character of it). ``keep_bom``: a leading byte-order mark kept as U+FEFF, as ``open(encoding=
    'utf-8')`` keeps it (probsem's prompt files: its scored texts start with it, and the audit names it)."""
    text = decode_utf8(path).replace("\r\n", "\n").replace("\r", "\n")
    if keep_bom and file_bytes(path).startswith(b"\xef\xbb\xbf"):
        text = "\ufeff" + text
    return text
