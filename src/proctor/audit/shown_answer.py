"""A template shows a field that holds the row's reference answer under another name: TriviaQA's ``answer``
printed by ``chat.system`` ("Hint: the answer is {{ answer }}") while the target reads ``aliases``. The field
names differ, so reading the templates alone does not tell; the rows' values do."""

from __future__ import annotations

from typing import Iterable, Iterator

from proctor.audit.subject import AuditSubject, loose
from proctor.core.audit import Hit

PROBE_ROWS = 200
SHOWN_SHARE = 0.5  # of the rows read: the field is the answer in most, not by chance in a few
MIN_ROWS = 3


def answer_field_shown(subject: AuditSubject, key: str, fields: Iterable[str]) -> Iterator[Hit]:
    """Each field of ``fields`` (those the ``key`` template reads) whose value is one of the row's references in
    most rows read: the template tells the model the answer."""
    samples = subject.samples[:PROBE_ROWS]
    if len(samples) < MIN_ROWS:
        return
    for name in sorted(fields):
        same = 0
        for sample in samples:
            value = sample.sample.fields.get(name)
            if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value).strip():
                text = loose(str(value))
                same += any(loose(r) == text for r in sample.references)
        if same >= MIN_ROWS and same >= SHOWN_SHARE * len(samples):
            yield subject.at_line(
                key.split(".")[0],
                f"the {key} template shows '{name}', which is the row's reference answer in {same} of the "
                f"{len(samples)} rows read: the model is told the answer",
                key,
            )
            return
