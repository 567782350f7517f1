"""A row's own text that ends with the cue the template's own text names: every SEA-HELM text ending with its
answer tag ('... menyenangkan\\nJawaban:', copied from a formatted dump) inside the prompt's text block, a probsem
context ending with the answer cue its prompt file uses. The model is shown the tag where the row's text should
end, so the prompt is not the benchmark's (and a base model answers inside the block). ``prompt.doubled-cue``
speaks where the template's cue follows at once ('Answer:\\nAnswer:'); this is the case where the template puts
other text between them, which no dialect's template reveals: the rendered prompts are read, any dialect.

The row's own part is the prompt with the text every prompt shares at its start and end taken off (whole lines,
``subject.fixed_text``); a cue counts where that shared text names it too (the template's own cue, or the answer
tag its instructions ask for), in most of the rows read and the first rows, and where the prompt goes on after it.
A cue that ends the prompt is where the model answers (rows written as whole prompts, 'Question: ...\nAnswer:',
under a template that only adds an instruction before them), and a task without a template (GLM-130B's inputs, a
native ``{{ prompt }}``) shares nothing."""

from __future__ import annotations

import re
from typing import Iterator

from proctor.audit.subject import AuditSubject
from proctor.core.audit import Hit

PROBE_ROWS = 200
FIRST_ROWS = 20  # rows read before giving up: a cue most rows end with shows in these
MIN_ROWS = 3
MOST = 0.5

# a cue of one or two words and its colon at the very end ('Answer:', 'Jawaban:', 'Câu trả lời:')
_END_CUE = re.compile(r"(?<![\w])([^\W\d_][^\W\d_]{0,24}(?: [^\W\d_]{1,20})?):\Z")


def _own_part(text: str, prefix: str, suffix: str) -> str:
    end = len(text) - len(suffix) if suffix and text.endswith(suffix) else len(text)
    start = len(prefix) if prefix and text.startswith(prefix) else 0
    return text[start:end].rstrip()


def _named(cue: str, shared: str) -> bool:
    return re.search(r"(?<![\w])" + re.escape(cue), shared) is not None


def _field_ends_with_cue(subject: AuditSubject, shared: str) -> Iterator[Hit]:
    """A field the prompt prints (native, lm-eval's ``doc_to_text``, SEA-HELM's ``task_template``: the rows as
    ``field_pairs.field_view`` reads them) ends with the cue in most rows: the shared text around it may then hold
    the cue itself (SEA-HELM's rows all ending with 'Jawaban:' make it part of every prompt's common ending)."""
    from proctor.audit.field_pairs import field_view

    view = field_view(subject)
    if view is None or not view.prompt_fields:
        return
    rows = view.rows[:PROBE_ROWS]
    texts = subject.prompt_texts
    for name in sorted(view.prompt_fields):
        found: list[tuple[int, str]] = []
        for i, (_, row) in enumerate(rows):
            if i == FIRST_ROWS and not found:
                break
            value = row.get(name)
            match = _END_CUE.search(value.rstrip()) if isinstance(value, str) else None
            if match is not None and not texts[i].rstrip().endswith(match.group()):
                found.append((i, match.group(1) + ":"))
        hit = _most(found, len(rows), shared)
        if hit is not None:
            i, cue, count = hit
            yield subject.at_row(
                rows[i][0],
                f"the row's '{name}' ends with {cue!r}, the cue the template's own text names, in {count} of the "
                f"{len(rows)} rows read: the rows already hold the cue (copied from a formatted dump?), so the model "
                "is shown it inside the row's text, a prompt no example of the format looks like",
                name,
            )
            return


def _most(found: list[tuple[int, str]], probe: int, shared: str) -> tuple[int, str, int] | None:
    """(the first row, the cue, its count) where one cue the shared text names ends most rows read."""
    if len(found) < MIN_ROWS or len(found) < MOST * probe:
        return None
    cue = max({c for _, c in found}, key=lambda c: sum(1 for _, x in found if x == c))
    rows = [i for i, c in found if c == cue]
    if len(rows) < MIN_ROWS or len(rows) < MOST * probe or not _named(cue, shared):
        return None  # a cue of the rows' own (a question's 'Options:'), not the template's
    return rows[0], cue, len(rows)


def row_ends_with_cue(subject: AuditSubject) -> Iterator[Hit]:
    probe = min(len(subject.samples), PROBE_ROWS)
    if probe < MIN_ROWS:
        return
    prefix, suffix = subject.fixed_text
    shared = prefix + "\n" + suffix
    if ":" not in shared:
        return  # the template's own text names no cue
    hits = list(_field_ends_with_cue(subject, shared))
    if hits:
        yield from hits
        return
    texts = subject.prompt_texts
    found: list[tuple[int, str]] = []
    for i in range(probe):
        if i == FIRST_ROWS and not found:
            return
        match = _END_CUE.search(_own_part(texts[i], prefix, suffix))
        if match is not None and not texts[i].rstrip().endswith(match.group()):
            found.append((i, match.group(1) + ":"))
    hit = _most(found, probe, shared)
    if hit is None:
        return
    i, cue, count = hit
    yield subject.at_row(
        subject.samples[i].sample,
        f"the row's own text ends with {cue!r}, the cue the template's own text names, in {count} of the "
        f"{probe} rows read: the rows already hold the cue (copied from a formatted dump?), so the model is shown "
        "it inside the row's text, a prompt no example of the format looks like",
        "prompt",
    )
