"""How a task's own metrics compare a generated answer with a reference, for the rules that ask what a reference
becomes once compared (``references.empty``, ``references.unwritable``).

A native task's exact match and F1 normalise as SQuAD does (case, ASCII punctuation, articles, spacing). lm-eval's
``exact_match`` does not: it deletes its ``regexes_to_ignore`` from answer and reference alike, then lowers case
and drops punctuation only where ``ignore_case`` / ``ignore_punctuation`` say so, and keeps articles. Read with
SQuAD's rule, its lettered reference 'A' is an article and empty, while lm-eval compares 'A' (or 'a'); and a
worked solution's stray character in the part ``(?s).*#### `` deletes is never compared. A task whose own code
scores (``process_results``) or another metric keeps SQuAD's reading, as before.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Any, Callable

from proctor.audit.subject import AuditSubject
from proctor.core.answer_normalisation import SQUAD

_PUNCTUATION = str.maketrans("", "", string.punctuation)  # lm-eval's ignore_punctuation: ASCII's set, as SQuAD's
_DIGITS = str.maketrans("", "", string.digits)
_SAFE_METRICS = "lm_eval."  # lm-eval's own exact_match (a task's own function may normalise as it likes)


@dataclass(frozen=True)
class Comparison:
    """One metric's comparison: what it deletes first (``scored``), then how it normalises (``key``)."""

    how: str  # the message's words: "as exact match and F1 normalise them (...)"
    deletions: tuple[str, ...] = ()
    normalise: Callable[[str], str] = SQUAD

    def scored(self, text: str) -> str:
        """The part of ``text`` the metric compares (its ``regexes_to_ignore`` deleted, in order)."""
        for pattern in self.deletions:
            try:
                text = re.sub(pattern, "", text)
            except re.error:  # a pattern that does not compile is the task loader's error (config_checks)
                continue
        return text

    def key(self, text: str) -> str:
        return self.normalise(self.scored(text))

    def empty(self, text: str) -> bool:
        """Whether an empty answer matches ``text`` under this comparison."""
        return not self.key(text).strip()


SQUAD_COMPARISON = Comparison("as exact match and F1 normalise them (punctuation and articles dropped)")


def _lmeval_exact_match(settings: dict[str, Any]) -> Comparison:
    """lm-eval's ``exact_match_hf_evaluate`` with a task's ``metric_list`` settings."""
    regexes = settings.get("regexes_to_ignore")
    deletions = tuple(str(r) for r in regexes) if isinstance(regexes, (list, tuple, str)) else ()
    lower, punctuation, numbers = (
        bool(settings.get(k)) for k in ("ignore_case", "ignore_punctuation", "ignore_numbers")
    )

    def normalise(text: str) -> str:
        if lower:
            text = text.lower()
        if punctuation:
            text = text.translate(_PUNCTUATION)
        if numbers:
            text = text.translate(_DIGITS)
        return text

    said = [
        k
        for k, on in (("regexes_to_ignore", deletions), ("ignore_case", lower), ("ignore_punctuation", punctuation))
        if on
    ]
    return Comparison(
        f"as the task's exact_match compares them ({', '.join(said) or 'as written'}; no articles dropped)",
        deletions,
        normalise,
    )


def comparisons(subject: AuditSubject) -> tuple[Comparison, ...]:
    """The comparisons of the task's metrics: lm-eval's own ``exact_match`` with its settings, SQuAD's for every
    other metric and every other dialect."""
    task = getattr(subject.handler, "task", None)
    config = getattr(task, "config", None)
    functions = getattr(task, "_metric_fn_list", None)
    settings = getattr(task, "_metric_fn_kwargs", None)
    if config is None or not isinstance(functions, dict) or not functions or not isinstance(settings, dict):
        return (SQUAD_COMPARISON,)
    if getattr(config, "process_results", None) is not None:
        return (SQUAD_COMPARISON,)  # the task's own code scores: how it normalises is its own
    found: list[Comparison] = []
    for name, function in functions.items():
        own = name == "exact_match" and getattr(function, "__module__", "").startswith(_SAFE_METRICS)
        comparison = _lmeval_exact_match(settings.get(name) or {}) if own else SQUAD_COMPARISON
        if comparison not in found:
            found.append(comparison)
    return tuple(found)
