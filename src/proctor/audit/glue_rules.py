"""The template's own words glued to the row's text: whitespace control (``{%- ... -%}``) or a missing line
break prints '...- 6Answer:', so the last option runs into the answer cue and the model reads '6Answer' as one
word. Seen in most rows, since it is the template's doing: the same word of the template follows a row's value
with no space between. Also two of the row's fields the template prints side by side with nothing between
(``{{ title }}{{ text }}``): 'Story 0In my palm', in a perplexity task's scored text as in a prompt."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Iterator

from proctor.audit.fallback import first_found
from proctor.audit.probe_rows import PROBE_ROWS
from proctor.audit.source_rows import documents, templates
from proctor.audit.subject import READER_FIELDS, AuditSubject
from proctor.audit.target_rules import parsed_template
from proctor.core.audit import AuditRule, Hit

GLUED_SHARE = 0.5  # of the rows read: a template's doing, not a row's spelling
_WORD = re.compile(r"[A-Z][a-z]+")  # the template's cue ('Answer', 'Question'): a capitalised word


def _values(subject: AuditSubject, i: int) -> list[str]:
    """The row's texts that the prompt may print: its choices and its own text fields (one letter left out:
    'A' is in 'Answer' wherever it stands)."""
    sample = subject.samples[i]
    fields = [v for k, v in sample.sample.fields.items() if k not in READER_FIELDS and isinstance(v, (str, int))]
    found = [str(v).strip() for v in (*sample.choices, *fields)]
    return [v for v in found if v and v[-1].isalnum() and not (len(v) == 1 and v.isalpha())]


def _glued_word(value: str, text: str) -> str | None:
    """The capitalised word that follows ``value`` in ``text`` with no space between (None: none does)."""
    start = text.find(value)
    while start >= 0:
        end = start + len(value)
        before = text[start - 1] if start else " "
        if not before.isalnum():  # the value starts a word: not a piece of a longer one
            match = _WORD.match(text, end)
            if match is not None:
                return match.group()
        start = text.find(value, start + 1)
    return None


def glued_to_template(subject: AuditSubject) -> Iterator[Hit]:
    texts = subject.prompt_texts
    probe = min(len(texts), PROBE_ROWS)
    glued: Counter[str] = Counter()
    first: dict[str, tuple[int, str]] = {}
    for i in range(probe):
        words = set()
        for value in _values(subject, i):
            word = _glued_word(value, texts[i])
            if word is not None and word not in words:
                words.add(word)
                first.setdefault(word, (i, value))
        glued.update(words)
    if not glued:
        return
    word, rows = glued.most_common(1)[0]
    if rows < max(2, GLUED_SHARE * probe):
        return
    i, value = first[word]
    yield subject.at_row(
        subject.samples[i].sample,
        f"the prompt runs the row's {value!r:.30} into the template's {word!r} with no space ({value + word!r:.40}) "
        f"in {rows} of the {probe} rows read: whitespace control ('-%}}') or a missing line break glues them, and "
        "the model reads one word",
        "prompt",
    )


@lru_cache(maxsize=64)
def _adjacent_fields(source: str) -> tuple[tuple[str, str], ...]:
    """Pairs of fields the template prints one right after the other (``{{ title }}{{ text }}``)."""
    from jinja2 import nodes

    tree = parsed_template(source)
    if tree is None:
        return ()
    pairs = []
    for output in tree.find_all(nodes.Output):
        for left, right in zip(output.nodes, output.nodes[1:]):
            if isinstance(left, nodes.Name) and isinstance(right, nodes.Name) and left.name != right.name:
                pairs.append((left.name, right.name))
    return tuple(pairs)


def _sources(subject: AuditSubject) -> list[tuple[str, str]]:
    """(the template, what it makes) of the texts a model reads or is scored on."""
    prompt = templates(subject)[0]
    found = [(prompt, "prompt")] if prompt else []
    if subject.spec.kind == "perplexity":
        config = getattr(getattr(subject.handler, "task", None), "config", None)
        text = subject.spec.text if subject.templated else getattr(config, "doc_to_target", None)
        if isinstance(text, str) and "{{" in text:
            found.append((text, "text"))
    return found


def glued_fields(subject: AuditSubject) -> Iterator[Hit]:
    """Two fields printed side by side, the first ending and the second starting with a letter or digit in half
    the rows read: the last word of one and the first of the other are read (and scored) as one word."""
    pairs = [(pair, where) for source, where in _sources(subject) for pair in _adjacent_fields(source)]
    if not pairs:
        return
    docs = documents(subject)
    probe = min(len(docs), PROBE_ROWS)
    for (left, right), where in pairs:
        glued = []
        for i in range(probe):
            a, b = docs[i].get(left), docs[i].get(right)
            if isinstance(a, (str, int)) and isinstance(b, (str, int)):
                a, b = str(a), str(b)
                if a and b and a[-1].isalnum() and b[0].isalnum():
                    glued.append(i)
        if len(glued) >= max(2, GLUED_SHARE * probe):
            i = glued[0]
            a, b = str(docs[i][left])[-15:], str(docs[i][right])[:15]
            yield subject.at_row(
                subject.samples[i].sample,
                f"the {where} template prints '{left}' and '{right}' with nothing between, and in {len(glued)} of "
                f"the {probe} rows read the one ends and the other starts with a letter or digit ({a + b!r}): the "
                "last word of one and the first of the other are read as one word (put a line break between)",
                where,
            )
            return


RULES = (
    AuditRule(
        "prompt.glued-text",
        "warning",
        "The template's own word follows a row's text with no space in most rows ('6Answer:'): whitespace control "
        "or a missing line break glues them; or two fields printed side by side ('{{ title }}{{ text }}').",
        first_found(glued_to_template, glued_fields),
    ),
)
