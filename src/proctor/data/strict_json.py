"""JSON as the data readers read it: ``json.loads`` refusing what json would read silently, a key given twice in
one object (json keeps the last) and a lone surrogate escape (``\\ud800``: no text). ``RefusedJson`` says which;
the readers (``data/readers.py``) turn it into an error naming the file, the line and the field.
"""

from __future__ import annotations

import json
from typing import Any


class RefusedJson(ValueError):
    """A JSON object names a key twice (``key``), or a string is no text (``key`` None)."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def _object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object; a key given twice is an error (json keeps the last one silently)."""
    row = dict(pairs)
    if len(row) != len(pairs):
        seen: set[str] = set()
        twice = None
        for key, _ in pairs:  # the first key met a second time
            if key in seen:
                twice = key
                break
            seen.add(key)
        assert twice is not None  # fewer keys than pairs: one repeats
        raise RefusedJson(f"key '{twice}' is given twice in one object", twice)
    return row


def loads(text: str) -> Any:
    """``json.loads`` refusing duplicate keys (``RefusedJson``) and lone surrogate escapes (``\\ud800``: no
    text, and no UTF-8 file can hold them)."""
    value = json.loads(text, object_pairs_hook=_object)
    if "\\u" in text:
        _no_lone_surrogates(value)
    return value


def _no_lone_surrogates(value: object) -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise RefusedJson(f"a string holds a lone surrogate escape ({value!r:.40}), which is not text") from None
    elif isinstance(value, dict):
        for item in value.values():
            _no_lone_surrogates(item)
    elif isinstance(value, list):
        for item in value:
            _no_lone_surrogates(item)
