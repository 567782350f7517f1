"""A judge's verdicts checked where they enter: what AISteer360's judges (``LLMJudgeMetric``, TruthfulQA's yes/no
judges) would turn into a score without a word.

AISteer360 reads a verdict with ``float(value["score"])`` clamped to the scale, and a yes/no verdict with
``startswith("yes")``. So ``{"score": NaN}`` is the top score (``min(5, nan)`` is 5), ``true`` is 1, ``Infinity``
the scale's bound, a 0-10 rating on a 1-5 rubric its top, and ``**Yes**`` or ``Unsure`` a 'no': a number the judge
never gave. Here a verdict that is no finite number (NaN, an infinity, a boolean, a key given twice) is unreadable
(greedy: an error naming the reply; sampled: drawn again, then NaN), and what upstream reads as it reads it
(a clamped score, a yes/no verdict that is neither) keeps upstream's number and is counted. Each judge metric keeps
its counts (``VerdictTally``); the use case task hands them to the task's outcome tally (runs/outcome_tally.py), so
they reach the console and results.json's ``outcomes`` and ``warnings``.
"""

from __future__ import annotations

import hashlib
import json
import math
import string
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from proctor.runs.outcome_tally import Count

# a judge that gives every answer one verdict tells no answer from another; with few answers, or a yes/no judge
# over a good model's answers, one value can be the truth: below these counts it is not said
CONSTANT_MIN = 5
CONSTANT_MIN_BINARY = 20


def _no_twice(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object whose keys are each given once (json.loads keeps the last of a key given twice)."""
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the judge's reply gives '{key}' twice ({out[key]!r} and {value!r})")
        out[key] = value
    return out


def score_value(value: object) -> float:
    """A verdict's ``score`` as a finite float: a number or a numeric text (``"4"``, as upstream's ``float`` reads
    it); a boolean, NaN or an infinity is no score."""
    if isinstance(value, bool):
        raise ValueError(f"the judge's score is {json.dumps(value)} (a boolean, not a score)")
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"the judge's score {value!r} is not a number") from None
    if not math.isfinite(number):
        raise ValueError(f"the judge's score is {value!r} (not a finite number)")
    return number


def parse_json(body: str) -> object:
    """``body`` as JSON, with a key given twice refused; NaN and infinities read (and refused by ``score_value``)."""
    return json.loads(body, object_pairs_hook=_no_twice)


def check_scale(name: str, scale: object) -> tuple[float, float]:
    """``scale`` as ``(low, high)``: two finite numbers, low below high (upstream clamps ``max(low, min(high, x))``,
    which with the bounds reversed gives ``low`` to every verdict)."""
    if not isinstance(scale, (tuple, list)) or len(scale) != 2:
        raise ValueError(f"{name}: scale must be (low, high), got {scale!r}")
    low, high = scale
    for bound in (low, high):
        if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not math.isfinite(bound):
            raise ValueError(f"{name}: scale={tuple(scale)!r}: its bounds must be finite numbers")
    if low >= high:
        raise ValueError(
            f"{name}: scale={tuple(scale)!r}: the low bound must come first and be below the high one "
            f"(scale=({min(low, high)}, {max(low, high)})); reversed, every verdict would be clamped to {low}"
        )
    return low, high


def check_rubric(name: str, template: str) -> None:
    """A judge's ``prompt_template`` shows it the answer: it holds the ``{response}`` field (``str.format`` ignores
    a field the template does not name, so without it the judge grades a prompt that never holds the answer)."""
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as exc:
        raise ValueError(f"{name}: prompt_template is not a format string ({exc})") from None
    if "response" not in {f.split(".")[0].split("[")[0] for f in fields}:
        shown = template if len(template) <= 80 else template[:77] + "..."
        raise ValueError(
            f"{name}: prompt_template {shown!r} has no '{{response}}' field, so the judge would never see the answer "
            "it grades; put '{response}' where the answer goes"
        )


def yes_no(text: str) -> str | None:
    """A yes/no verdict as AISteer360 reads it (``startswith("yes")``) and as it was meant: 'yes', 'no', or None when
    the reply starts with neither."""
    head = text.strip().lower()
    if head.startswith("yes"):
        return "yes"
    if head.startswith("no"):
        return "no"
    return None


def meant(text: str) -> str | None:
    """What a verdict that starts with neither says once markup and punctuation around it are gone (``**Yes**``)."""
    word = text.strip().lstrip("*_`'\"([ >#-").lower()
    return "yes" if word.startswith("yes") else "no" if word.startswith("no") else None


def shown(text: str, width: int = 50) -> str:
    out = json.dumps(text, ensure_ascii=False)
    return out if len(out) <= width else out[: width - 4] + '..."'


@dataclass
class VerdictTally:
    """One judge metric's verdicts since its task began: unreadable ones left as NaN (``judge_errors``), scores
    clamped to the scale (``judge_clamped``), yes/no verdicts that were neither (``judge_not_yes_no``), and a judge
    that gave every answer one value (``judge_constant``)."""

    counts: dict[str, Count] = field(default_factory=dict)

    def add(self, kind: str, hit: bool, example: str | None = None) -> None:
        self.counts.setdefault(kind, Count()).add(hit, example)

    def constant(self, name: str, responses: Sequence[str], values: Iterable[float], binary: bool = False) -> None:
        """Every verdict one value while the answers differ: counted (all of them) when there are enough."""
        finite = [v for v in values if math.isfinite(v)]
        least = CONSTANT_MIN_BINARY if binary else CONSTANT_MIN
        if len(finite) >= least and len(set(finite)) == 1 and len(set(responses)) >= 2:
            self.counts["judge_constant"] = Count(len(finite), len(finite), f"{name}: every verdict {finite[0]:g}")

    def clear(self) -> None:
        self.counts.clear()


def judge_tallies(case: object) -> list[VerdictTally]:
    """The verdict tallies of a use case's judge metrics (any metric that keeps one: ``judge_tally``)."""
    found = (getattr(m, "judge_tally", None) for m in getattr(case, "evaluation_metrics", ()) or ())
    return [t for t in found if isinstance(t, VerdictTally)]


def rubric_digest(template: str) -> str:
    """The first 16 hex digits of a judge prompt's sha256: two runs with one rubric show one digest."""
    return hashlib.sha256(template.encode("utf-8")).hexdigest()[:16]


def judge_model_name(default: object) -> str:
    """The judge a metric is given (its ``model_or_id``) or, for the run, the ``judge`` role in its place."""
    from proctor.api.model_roles import active_roles

    given = active_roles().spec("judge", default)
    return given if isinstance(given, str) else str(getattr(given, "name", type(given).__name__))


def judges_settings(case: object) -> list[dict[str, object]]:
    """What each judge metric of a use case ran with (``judge_settings``): results.json's ``settings.judges``."""
    out = []
    for metric in getattr(case, "evaluation_metrics", ()) or ():
        settings = getattr(metric, "judge_settings", None)
        if callable(settings):
            out.append(settings())
    return out
