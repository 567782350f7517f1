"""Options that point at other options by their place or letter ('All of the above', 'None of the following',
'Both A and B') where the model never sees that listing: a cloze-scored task (the options are continuations and
the prompt lists none under labels), or a handler that shuffles the options and letters them itself (a Python use
case). Such a row cannot be answered, or has its answer changed by the shuffle.

The rows are found by the row scan's one pass over the choices' cheap keys (``row_scan.REFERRING_KEYS``), so
the rule costs a lookup of fingerprints on a 100,000-row task; only the rows found have their prompts read.
"""

from __future__ import annotations

import re
from typing import Iterator

from proctor.audit.choice_keys import cheap_key
from proctor.audit.row_scan import REFERRING_KEYS
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

# an option listed under a label, one line each ('A. text', '(B) text', 'C) text'). Not asked_form_rules' or
# example_format_rules' pattern, on purpose: only counted (two listed lines silence the rule), so it errs wide,
# towards silence: the first ten labels in either case, and the full-width and colon forms ('A: text').
_LISTED = re.compile(r"^[ \t]*[(（]?[A-Ja-j1-9][.)．）:：][ \t]*\S", re.MULTILINE)


_WORD = re.compile(r"[A-Za-z]+")


def _refers(choice: str) -> bool:
    """A cheap key drops spaces, so 'C or E' and the word 'core' share one ('core', ARC-Easy; 'bore',
    CommonsenseQA): a referring option is two words at least."""
    return (
        choice.isascii()
        and len(choice) < 60
        and cheap_key(choice) in REFERRING_KEYS
        and len(_WORD.findall(choice)) >= 2
    )


def referring_choices(subject: AuditSubject) -> Iterator[Hit]:
    texts = subject.prompt_texts
    unlisted = [
        i
        for i in subject.scan.referring_choices
        if len(_LISTED.findall(texts[i])) < 2 and any(_refers(c) for c in subject.samples[i].choices)
    ]
    if unlisted:
        sample = subject.samples[unlisted[0]]
        choice = next(c for c in sample.choices if _refers(c))
        yield subject.at_row(
            sample.sample,
            f"the choice {choice.strip()!r} points at other options by place or letter, and the prompt lists none "
            f"(each option is scored as a continuation on its own), in {len(unlisted)} row(s): the model never "
            "sees what it refers to, so those rows cannot be answered; list the options, or leave such rows out",
            "choices",
        )
        return
    shuffled = [row for row in subject.listed_choices if any(_refers(c) for c in row.choices)]
    if shuffled:
        row = shuffled[0]
        choice = next(c for c in row.choices if _refers(c))
        yield Hit(
            f"the option {choice.strip()!r} points at other options by place or letter, and the handler shuffles "
            f"and letters the options itself, in {len(shuffled)} row(s): after a shuffle it points elsewhere, and "
            "the row's answer changes or is lost",
            file=row.file or row.sample.file or subject.file,
            row=row.row,
            field=row.field,
            sample=row.sample.id,
        )


RULES = (
    AuditRule(
        "choices.refers-to-listing",
        "warning",
        "A choice points at other options by place or letter ('All of the above', 'Both A and B') where the prompt "
        "lists no options (cloze scoring), or where a use case shuffles and letters the options itself.",
        referring_choices,
    ),
)
