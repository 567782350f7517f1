"""What a perplexity task scores (a native ``kind: perplexity`` task's texts, lm-eval's ``loglikelihood_rolling``
documents, GLM-130B's language-modelling files), where the number stops being the model's perplexity of the text:

- a window of a few tokens: each token is scored with almost no context (``perplexity.window``);
- texts a pipeline cut at one character length, mid-word (read by ``prompt.cut``);
- HTML markup or entities in the texts, scored as text (read by ``text.escaped``);
- texts split into tokens WikiText-style (' , ' ' @-@ ' " 's"), where word_perplexity counts the punctuation as
  words (read by ``metrics.mismatch``).

A perplexity task is never a 100,000-row multiple-choice task: these rules read the texts of the first rows as they
are, with a regex or two each.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterator

from proctor.audit.probe_rows import PROBE_ROWS
from proctor.audit.source_rows import documents
from proctor.audit.subject import AuditSubject
from proctor.audit.target_rules import template_fields
from proctor.core.audit import AuditRule, Hit

MIN_TEXTS = 5  # fewer texts share a length or a habit by chance too often
# tokens of context below which a perplexity is a short-context model's: published numbers use the model's whole
# window (1024 tokens and more), whatever the stride
SHORT_WINDOW = 128


def _texts(subject: AuditSubject) -> list[tuple[int, str]]:
    """(position, text) of the first rows' scored texts."""
    own = subject.columns.own_texts
    return [(i, t) for i, t in enumerate(own[:PROBE_ROWS]) if t]


def short_window(subject: AuditSubject) -> Iterator[Hit]:
    spec = subject.spec
    if spec.kind != "perplexity" or spec.perplexity is None or spec.perplexity.window >= SHORT_WINDOW:
        return
    window = spec.perplexity.window
    texts = _texts(subject)
    longer = [(i, t) for i, t in texts if len(t.split()) > window]  # a word is at least one token
    if not longer:
        return  # every text fits in one window: each token sees all that comes before it
    key = "perplexity" if subject.templated else "max_seq_length"  # GLM-130B's window is its max_seq_length
    yield subject.at_line(
        key,
        f"the perplexity window is {window} tokens, and {len(longer)} of the {len(texts)} texts read are longer "
        f"(more than {window} words): each token is scored with at most {window - 1} tokens before it, so the "
        f"number is the perplexity of a model that sees {window} tokens at a time, not the model's (published "
        f"numbers use its whole context, 1024 tokens or more; {SHORT_WINDOW} at the least)",
        "perplexity.window" if subject.templated else key,
    )


CUT_SHARE = 0.5  # of the texts read: one exact length shared by half the texts is a cut, not the texts' own
CUT_MIN_LENGTH = 40  # characters: short texts ('row 1', 'row 2') share a length by their own shape


def cut_texts(subject: AuditSubject) -> Iterator[Hit]:
    """Most texts are one exact length in characters, and none is longer: a pipeline cut each at that length (a
    mid-word end, LAMBADA's last word gone), and the part after it is never scored."""
    if subject.spec.kind != "perplexity":
        return
    texts = _texts(subject)
    if len(texts) < MIN_TEXTS:
        return
    lengths = Counter(len(t) for _, t in texts)
    length, count = lengths.most_common(1)[0]
    if count < CUT_SHARE * len(texts) or length < max(lengths) or length < CUT_MIN_LENGTH:
        return
    cut = [(i, t) for i, t in texts if len(t) == length]
    mid_word = [(i, t) for i, t in cut if t[-1].isalnum()]
    i, text = (mid_word or cut)[0]
    words = f"; {len(mid_word)} of them end on a letter or digit, most likely mid-word" if mid_word else ""
    yield subject.at_row(
        subject.samples[i].sample,
        f"{count} of the {len(texts)} texts read are exactly {length} characters long and none is longer: they were "
        f"cut at {length} characters before they came (e.g. ...{text[-20:]!r}){words}; the rest of each text is not "
        "scored and a word cut in two is scored as a rare one",
        "text",
    )


# markup of a web page left in the text: these tags (and entities) are scored as if the text said them
_TAG = re.compile(
    r"</?(?:p|br|div|span|a|b|i|u|em|strong|ul|ol|li|h[1-6]|table|tr|td|th|img|html|body|head|title|blockquote|"
    r"pre|code|sup|sub|font|center|hr)(?:\s[^<>]{0,200})?/?>",
    re.IGNORECASE,
)
_ENTITY = re.compile(r"&(?:amp|lt|gt|quot|apos|nbsp|#\d{2,5}|#x[0-9a-fA-F]{2,4});")
MARKUP_SHARE = 0.2  # of the texts read: a page's markup, not a text that quotes a tag


def markup_texts(subject: AuditSubject) -> Iterator[Hit]:
    """A perplexity task's texts hold HTML tags or entities: the model is scored on predicting '<p>' and '&amp;',
    which no text says, and the tokens it spends on them weigh in the number."""
    texts = _texts(subject)
    found = [(i, m) for i, t in texts if "<" in t or "&" in t for m in [_TAG.search(t) or _ENTITY.search(t)] if m]
    if len(found) < 2 or len(found) < MARKUP_SHARE * len(texts):
        return
    i, match = found[0]
    what = "HTML entities" if match.group().startswith("&") else "HTML tags"
    yield subject.at_row(
        subject.samples[i].sample,
        f"{len(found)} of the {len(texts)} texts read hold {what} ({match.group()!r:.30}): the markup is scored as "
        "text, so the perplexity counts the model's guesses of tags and codes no reader sees (strip the markup first)",
        "text",
    )


# tokens no orthography writes apart from their word: WikiText's ' , ' ' . ' ' @-@ ' and the split clitics " 's"
_SPLIT = frozenset({",", ".", "@-@", "@,@", "@.@", "'s", "n't", "'re", "'ll", "'ve", "'d", "'m"})
SPLIT_SHARE = 0.03  # of the words read: WikiText has one in ten or so; a text as written, one in a thousand


def pretokenized_texts(subject: AuditSubject) -> Iterator[Hit]:
    """word_perplexity divides by the words split at spaces: in a text split into tokens WikiText-style each comma
    and clitic is a word, so the count is inflated and word_perplexity understated (lm-eval's wikitext scores the
    text detokenized)."""
    texts = _texts(subject)
    if len(texts) < MIN_TEXTS:
        return
    words = split = 0
    showing: list[str] = []  # the first token written apart in each text that has one
    for _, text in texts:
        tokens = text.split()
        apart = [t for t in tokens if t in _SPLIT]
        words, split = words + len(tokens), split + len(apart)
        if apart:
            showing.append(apart[0])
    if not words or split < SPLIT_SHARE * words or len(showing) * 2 < len(texts):
        return
    example = showing[0]
    key = "metrics" if subject.spec.metrics and subject.templated else "kind" if subject.templated else "metric_list"
    field = "metrics" if subject.templated else "metric_list"  # lm-eval's
    yield subject.at_line(
        key,
        f"word_perplexity divides the loss by the words split at spaces, and the texts are split into tokens "
        f"WikiText-style ({example!r} written apart, in {len(showing)} of {len(texts)} texts read): {split} of their "
        f"{words} 'words' are punctuation or a clitic, so the count is {100 * split / (words - split):.0f}% too high "
        "and word_perplexity understated; score the text detokenized (lm-eval's wikitext_detokenizer) or report "
        "bits_per_byte",
        field,
    )


# a row's identifiers: its id, key or address, not its text
_ID_NAME = re.compile(
    r"^(?:(?:doc|row|item|sample|page|article)?_?id|idx|index|uuid|guid|key|url|uri|link|href|path" r"|file(?:name)?)$",
    re.IGNORECASE,
)
_URL = re.compile(r"^(?:https?|ftp)://\S+$")
ID_SHARE = 0.9  # of the rows read: a field that differs in (almost) every row names the row, it does not say much


def metadata_in_text(subject: AuditSubject) -> Iterator[Hit]:
    """The scored text's template prints a row's id or URL beside its text (``id={{ id }} url={{ url }}``): the
    model is scored on predicting identifiers no model can know, and their tokens weigh in the number."""
    if subject.spec.kind != "perplexity":
        return
    config = getattr(getattr(subject.handler, "task", None), "config", None)
    source = subject.spec.text if subject.templated else getattr(config, "doc_to_target", None)
    if not isinstance(source, str) or "{" not in source:
        return
    fields = sorted(template_fields(source))
    if len(fields) < 2:
        return  # the text alone: what it holds is the data's
    docs = documents(subject)
    probe = [docs[i] for i in range(min(len(docs), PROBE_ROWS))]
    if len(probe) < MIN_TEXTS:
        return
    for name in fields:
        values = [str(d.get(name)) for d in probe if isinstance(d.get(name), (str, int))]
        if len(values) < ID_SHARE * len(probe) or len(set(values)) < ID_SHARE * len(values):
            continue
        if _ID_NAME.match(name) or sum(1 for v in values if _URL.match(v)) >= ID_SHARE * len(values):
            yield subject.at_row(
                subject.samples[0].sample,
                f"the scored text's template prints '{name}' ({values[0]!r:.40}), which differs in every row: "
                "an identifier, not text; the model is scored on predicting it, which no model can, and its "
                "tokens weigh in the perplexity (score the text alone)",
                name,
            )
            return


RULES = (
    AuditRule(
        "perplexity.window",
        "warning",
        "A perplexity task's window is under 128 tokens while its texts are longer: each token is scored with a few "
        "tokens of context, not the model's perplexity.",
        short_window,
    ),
    AuditRule(
        "perplexity.metadata",
        "warning",
        "A perplexity task's scored text prints a row's id or URL beside its text: the model is scored on "
        "predicting identifiers.",
        metadata_in_text,
    ),
)
