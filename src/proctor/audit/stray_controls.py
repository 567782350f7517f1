"""Control characters a prompt carries that no print shows (read under ``text.damaged``): a byte-order mark at the
start of a row's field or of a prompt's line (a file joined to another mid-way keeps the second's BOM on its first
row), and carriage returns in the fields most prompts print (CRLF text pasted into quoted CSV fields). The model
reads each as a token of its own."""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from proctor.audit.probe_rows import PRINTED_ROWS
from proctor.audit.source_rows import documents, printed_values
from proctor.audit.subject import AuditSubject
from proctor.core.audit import Hit

CR_SHARE = 0.5  # of the rows read: a carriage return the data carries in most rows, not one row's accident
BOM = "\ufeff"


def _opens_with_bom(text: str, document: Mapping[str, Any]) -> bool:
    """Whether U+FEFF stands where a file's byte-order mark lands when files are joined: at the prompt's start, right
    after a line break, or at the start of one of the row's fields. Inside a line it is U+FEFF's other use, a
    zero-width no-break space (Wikipedia's coordinates in BoolQ's passages put one on either side of the ' / ' in
    '98°17′W / 30.567°N'): ordinary text, not damage."""
    if text.startswith(BOM) or "\n" + BOM in text:
        return True
    values = (x for v in document.values() for x in (v if isinstance(v, (list, tuple)) else (v,)))
    return any(isinstance(x, str) and x.startswith(BOM) for x in values)


def stray_controls(subject: AuditSubject) -> Iterator[Hit]:
    texts = subject.prompt_texts
    rows = [i for i in subject.scan.unusual_text if BOM in texts[i]]
    docs = documents(subject) if rows else ()
    for i in rows:
        if _opens_with_bom(texts[i], docs[i]):
            yield subject.at_row(
                subject.samples[i].sample,
                "the prompt holds U+FEFF, a byte-order mark (a file joined to another mid-way keeps the second's on "
                "its first row): an invisible token the model reads",
                "prompt",
            )
            return
    probe = min(len(subject.samples), PRINTED_ROWS)
    if probe < 2:
        return
    for name, values in printed_values(subject):
        stray = [i for i, value in enumerate(values) if "\r" in str(value or "")]
        if len(stray) >= 2 and len(stray) >= CR_SHARE * probe:
            yield subject.at_row(
                subject.samples[stray[0]].sample,
                f"the '{name}' the prompt prints holds a carriage return ('\\r') in {len(stray)} of the {probe} rows "
                "read (CRLF text pasted into a field): a control character the model reads, which no prompt of the "
                "format has",
                name,
            )
            return
