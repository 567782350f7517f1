"""``target.index-after-transform``: the choices (or the options the prompt lists under letters) are the row's own
list in another order (``| sort``, ``| reverse``, ``choices[1:] + choices[:1]``, two columns swapped by a typo),
while the target passes on the row's index as the row holds it: the gold counts in the row's order and so names
another option in most rows.

The check is the same for every way of reordering: per probed row, the option the gold names (the gold choice's
text, or the text the prompt lists under the gold's letter) is compared with the row's own item at the row's key.
It speaks where the target gives the row's key unchanged (the gold is the key's position in every probed row),
the choices or the listing hold the row's items in another order, and the two disagree in a good part of the rows.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator, Sequence

from proctor.audit.probe_rows import MIN_ROWS, PROBE_ROWS
from proctor.audit.row_lists import row_lists
from proctor.audit.sorted_rows import sorted_options
from proctor.audit.source_rows import documents, target_reads
from proctor.audit.subject import AuditSubject, loose
from proctor.audit.target_rules import template_fields
from proctor.core.audit import AuditRule, Hit
from proctor.prompts.builder import PreparedSample

DISAGREE_SHARE = 0.25  # a key that names another option in this share of rows (a swap of two of four: about half)
_OPTION_LETTER = re.compile(r"^\W*([A-Z])\W*$")  # a choice that is an option letter: 'A', '(B)', 'C.'


def _position(value: object) -> int | None:
    """A row's answer key as a position counted from 0: a whole number, its digits, or a letter ('A' is 0)."""
    if type(value) is int:
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit() and len(text) <= 3:
            return int(text)
        if len(text) == 1 and "A" <= text <= "Z":
            return ord(text) - ord("A")
    return None


def _listed_letters(prompt: str, items: Sequence[str]) -> list[str] | None:
    """The letter the prompt lists each item under ('B. Paris', '(B) Paris', 'B) Paris'), or None where an item is
    not listed under one letter of its own."""
    letters = []
    for item in items:
        found = re.search(r"(?:^|[\s(\[])([A-Z])\s*[.):\]]\s*" + re.escape(item.strip()) + r"(?=\s|$)", prompt)
        if found is None:
            return None
        letters.append(found.group(1))
    return letters if len(set(letters)) == len(letters) else None


def _letters(choices: Sequence[str]) -> list[str] | None:
    """The option letters the choices are ('A', '(B)', 'C.'), or None where one is not a letter."""
    found = [_OPTION_LETTER.match(c.strip()) for c in choices]
    return [m.group(1) for m in found if m is not None] if all(found) else None


def _in_order(sample: PreparedSample, lists: list[list[str]], prompt: str | None) -> bool:
    """Whether the choices (or the prompt's lettered listing) are one of the row's lists as the row holds it: the
    choices are the row's own, whatever another list of the row holds."""
    if prompt is None:
        choices = [loose(c) for c in sample.choices]
        return any([loose(i) for i in items] == choices for items in lists)
    return any(_listed_letters(prompt, items) == [chr(ord("A") + j) for j in range(len(items))] for items in lists)


def _named(sample: PreparedSample, items: list[str], prompt: str | None) -> str | None:
    """What the gold names, compared with the row's own item at its key: the gold choice's text where the choices
    are the row's items reordered, or where the choices are option letters, the letters the prompt lists the row's
    items under (the gold's letter first); None where the row is neither."""
    gold = sample.gold[0]
    if prompt is not None and _letters(sample.choices) is None:
        return None  # choices that are not option letters (most tasks): no listing to read, and no loose() needed
    keys = [loose(i) for i in items]
    if len(set(keys)) != len(keys):
        return None
    if prompt is None:
        choices = [loose(c) for c in sample.choices]
        return choices[gold] if sorted(choices) == sorted(keys) else None
    letters = _letters(sample.choices)
    listed = _listed_letters(prompt, items) if letters is not None else None
    return letters[gold] + "".join(listed) if letters is not None and listed is not None else None


def _compare(subject: AuditSubject, rows: list[int], name: str, listed: str, in_prompt: bool) -> tuple[int, int, int]:
    """(rows compared, rows whose gold names another option than the row's own item at its key, the first such)."""
    docs = documents(subject)
    texts = subject.prompt_texts if in_prompt else None
    compared = wrong = 0
    first = -1
    for i in rows:
        sample, doc = subject.samples[i], docs[i]
        key = _position(doc.get(name))
        lists = dict(row_lists(doc, len(sample.choices)))
        items = lists.get(listed)
        if key is None or items is None or not 0 <= key < len(items):
            continue
        if key != sample.gold[0]:
            return 0, 0, -1  # the target computes the index: it may count in the order the choices have
        prompt = texts[i] if texts is not None else None
        if prompt is None and any(list(sample.choices) == own for own in lists.values()):
            continue  # the choices are one of the row's lists as it is (most rows): in order, as told without loose()
        named = _named(sample, items, prompt)
        if named is None or _in_order(sample, list(lists.values()), prompt):
            continue  # not the row's items, or in the order of one of the row's lists: nothing moved
        compared += 1
        # the gold's text against the key's item; or the gold's letter against the letter the key's item is under
        same = named[0] == named[1 + key] if in_prompt else named == loose(items[key])
        if not same:
            wrong += 1
            first = i if first < 0 else first
    return compared, wrong, first


def _candidates(subject: AuditSubject, rows: list[int]) -> list[tuple[str, str]]:
    """(the field the target reads, the row's list) pairs to compare: the first probed row's."""
    doc = documents(subject)[rows[0]]
    lists = [listed for listed, _ in row_lists(doc, len(subject.samples[rows[0]].choices))]
    return [(name, listed) for name in sorted(target_reads(subject)) for listed in lists if listed != name]


def _fixed_native_choices(subject: AuditSubject) -> bool:
    """A native task's own fixed choices ([yes, no]): ``target.flipped`` speaks for their order."""
    choices = subject.spec.choices
    return subject.templated and isinstance(choices, list) and not any(template_fields(c) for c in choices)


def choices_setting(subject: AuditSubject, in_prompt: bool = False) -> str:
    """The task file's setting that makes the choices (or the prompt): lm-eval's ``doc_to_choice`` (``doc_to_text``)
    where the handler built an lm-eval task, else ``choices`` (``prompt``)."""
    config = getattr(getattr(subject.handler, "task", None), "config", None)
    if not subject.templated and hasattr(config, "doc_to_choice"):
        return "doc_to_text" if in_prompt else "doc_to_choice"
    return "prompt" if in_prompt else "choices"


def setting_line(subject: AuditSubject, setting: str) -> int | None:
    """The task file's line of ``setting``: the line the dialect recorded, else the first line of the file that
    begins with it (an lm-eval YAML's ``doc_to_choice:``; read only for a finding)."""
    line = subject.task.lines.get(setting)
    if line is not None or subject.task.file is None:
        return line if line is not None else subject.task.line
    try:
        text = Path(subject.task.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return subject.task.line
    found = next((n for n, row in enumerate(text.splitlines(), 1) if row.startswith(setting + ":")), None)
    return found if found is not None else subject.task.line


def index_after_transform(subject: AuditSubject) -> Iterator[Hit]:
    if subject.spec.kind != "multiple_choice":
        return
    rows = [i for i, s in enumerate(subject.samples[:PROBE_ROWS]) if len(s.gold) == 1 and len(s.choices) >= 2]
    if len(rows) < MIN_ROWS:
        return
    for name, listed in _candidates(subject, rows):
        for in_prompt in (False, True):
            if not in_prompt and _fixed_native_choices(subject):
                continue
            compared, wrong, first = _compare(subject, rows, name, listed, in_prompt)
            if compared < MIN_ROWS or compared * 2 < len(rows) or wrong < 2 or wrong < DISAGREE_SHARE * compared:
                continue
            yield _hit(subject, first, name, listed, in_prompt, (compared, wrong))
            return
    yield from sorted_options(subject)  # the data's own lists, sorted after labelling


def _hit(subject: AuditSubject, i: int, name: str, listed: str, in_prompt: bool, counts: tuple[int, int]) -> Hit:
    sample = subject.samples[i]
    doc = documents(subject)[i]
    key = _position(doc.get(name))
    assert key is not None
    items = dict(row_lists(doc, len(sample.choices)))[listed]
    gold = sample.gold[0]
    what = (
        f"the prompt lists under the gold's letter {sample.choices[gold].strip()!r} another option than "
        if in_prompt
        else f"the gold, choice {gold} ({sample.choices[gold]!r:.40}), is not "
    )
    setting = choices_setting(subject, in_prompt)
    named = "" if setting in ("prompt", "choices") else f" ({setting})"
    moved = f"the prompt's listing{named} holds" if in_prompt else f"the choices{named} hold"
    return Hit(
        f"row {sample.sample.row}: {what}the row's own '{listed}' item {key} ({items[key]!r:.40}), which its "
        f"'{name}' ({doc.get(name)!r}) names; in {counts[1]} of {counts[0]} probed rows the gold names another "
        f"option: {moved} the row's items in another order (sorted, reversed, rotated, two swapped) while the "
        "target counts in the row's order",
        file=subject.file,
        line=setting_line(subject, setting),
        field=setting,
        sample=sample.sample.id,
    )


RULES = (
    AuditRule(
        "target.index-after-transform",
        "warning",
        "The choices (or the prompt's lettered options) reorder the row's list while the target indexes it as the row "
        "holds it: the gold names another option.",
        index_after_transform,
    ),
)
