"""The lists of texts a source row holds that could be its choices: a list field, a list inside a mapping (ARC's
``choices.text``), or lettered columns (MMLU's A, B, C, D); read by the rules that compare a row's own list with
the choices the task shows (``order_rules``, ``sorted_rows``)."""

from __future__ import annotations

from typing import Any, Mapping

from proctor.audit.subject import READER_FIELDS


def _texts(value: object, width: int) -> list[str] | None:
    if type(value) is list and len(value) == width and all(isinstance(v, str) for v in value):
        return value
    return None


def row_lists(doc: Mapping[str, Any], width: int) -> list[tuple[str, list[str]]]:
    """The lists of ``width`` texts a row holds: a list field, a list inside a mapping (ARC's ``choices.text``), or
    lettered columns (MMLU's A, B, C, D)."""
    out = []
    for key, value in doc.items():
        if key in READER_FIELDS:
            continue
        listed = _texts(value, width)
        if listed is not None:
            out.append((key, listed))
        elif isinstance(value, Mapping):
            out += [(f"{key}.{k}", v) for k, v in value.items() if _texts(v, width) is not None]
    columns = [doc.get(chr(ord("A") + i)) for i in range(width)]
    if width <= 26 and all(isinstance(v, str) for v in columns):
        out.append((f"A..{chr(ord('A') + width - 1)}", [str(v) for v in columns]))
    return out
