"""The metric registry: per-sample functions plus how their values aggregate.

Users add metrics with ``@register_metric``; an unknown metric name is an error at load time. Metric
sets of plug-ins (e.g. a dialect's own names) are modules listed in ``core.registry``'s
``metric_modules``: they are imported on first use, before a metric they name is looked up or a user
registers one of their names (so that a name they take is known to be taken), and before the metrics are listed.
A name already registered elsewhere (a built-in, a dialect's, another plug-in file's) is refused, naming both
(``core/registrations.py``); what a metric gives is checked where it enters (``scoring/metric_checks.py``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

import numpy as np

from proctor.core.names import close_names
from proctor.core.registrations import Origin, claim, loading, origin_of
from proctor.scoring import text as text_metrics
from proctor.scoring.outcomes import ChoiceOutcome, GenerationOutcome, PerplexityOutcome
from proctor.scoring.stats import mean_stderr  # a metric's default aggregate (also imported from here)

# a metric's aggregate: its per-sample values (floats, or what the metric gives, e.g. (logprob, units))
# -> (value, stderr)
Aggregate = Callable[[list[Any]], tuple[float, float | None]]
_Metric = TypeVar("_Metric", bound=Callable[..., Any])


def total(values: list[float]) -> tuple[float, None]:
    return float(sum(values)), None


def exp_or_inf(x: float) -> float:
    """``math.exp``, but infinity where the result is too large for a float: a perplexity over log-probs of
    hundreds of nats per token is meaningless, yet it is reported (as infinite, with the engine's warning) rather
    than ending the run with an OverflowError after every answer was paid for."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def pooled_ratio(
    transform: Callable[[float, float], float],
) -> Callable[[list[tuple[float, float]]], tuple[float, None]]:
    """Aggregate (logprob, units) pairs as transform(sum logprob, sum units)."""

    def aggregate(values: list[tuple[float, float]]) -> tuple[float, None]:
        logprob = sum(v[0] for v in values)
        units = sum(v[1] for v in values)
        return (transform(logprob, units) if units else float("nan")), None

    aggregate.pooled_ratio = True  # type: ignore[attr-defined]  # a group cannot pool it from its members' values
    return aggregate


@dataclass(frozen=True)
class MetricDef:
    name: str
    kinds: frozenset[str]
    compute: Callable[..., object]  # fn(outcome, **kwargs) -> the sample's value
    aggregate: Aggregate = mean_stderr
    higher_is_better: bool = True
    origin: str | None = None  # who registered it (a plug-in's file), for the errors about what it gives


METRICS: dict[str, MetricDef] = {}
METRIC_ORIGINS: dict[str, Origin] = {}  # who registered each name (core/registrations.py)
_BUILT_IN = Origin("proctor's built-in metrics (proctor.scoring.metrics)", __name__)
_BUILT_IN_READY = False  # True once this module's own metrics are registered


def register_metric(
    name: str,
    kinds: Iterable[str],
    aggregate: Aggregate = mean_stderr,
    higher_is_better: bool = True,
) -> Callable[[_Metric], _Metric]:
    """Register ``fn(outcome, **kwargs) -> value`` under ``name`` for the given task kinds."""

    def decorator(fn: _Metric) -> _Metric:
        if _BUILT_IN_READY:
            load_plugin_metrics(name)
        origin = origin_of(fn) if _BUILT_IN_READY else _BUILT_IN
        claim(METRIC_ORIGINS, "metric", name, origin, "give the metric another name and list that in the task")
        METRICS[name] = MetricDef(name, frozenset(kinds), fn, aggregate, higher_is_better, origin.shown)
        return fn

    return decorator


def get_metric(name: str, kind: str) -> MetricDef:
    """Look a metric up; the error lists close names and the metrics this kind offers."""
    load_plugin_metrics(name)
    metric = METRICS.get(name)
    if metric is None:
        load_entry_points()
        metric = METRICS.get(name)
    if metric is None:
        from proctor.core.registry import registry

        metric = next((m for m in (resolve(name) for resolve in registry().metric_resolvers) if m is not None), None)
    if metric is None or kind not in metric.kinds:
        load_plugin_metrics()  # every metric, for the list below
        offered = sorted(n for n, m in METRICS.items() if kind in m.kinds)
        close = close_names(name, offered)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        what = "unknown metric" if metric is None else f"metric not available for '{kind}' tasks:"
        raise KeyError(f"{what} '{name}'.{hint} Available for '{kind}': {', '.join(offered)}")
    return metric


def check_arguments(metric: MetricDef, kwargs: Mapping[str, object]) -> None:
    """A task's keyword arguments for a metric that its function does not take: a ValueError naming them, at
    load time (else the first sample's scoring fails, after the model ran)."""
    try:
        signature = inspect.signature(metric.compute)
    except (TypeError, ValueError):  # no signature to read (a builtin): the call will tell
        return
    try:
        signature.bind(None, **kwargs)
    except TypeError as exc:
        taken = [p.name for p in list(signature.parameters.values())[1:] if p.kind is not p.VAR_POSITIONAL]
        offered = f"it takes {', '.join(taken)}" if taken else "it takes no arguments"
        raise ValueError(
            f"metric '{metric.name}' cannot take the arguments {sorted(kwargs)} ({exc}; {offered})"
        ) from None


_PLUGIN_STARTED: set[str] = set()  # modules this thread is importing (their register_metric calls re-enter) or imported
_PLUGIN_DONE: set[str] = set()
_PLUGIN_LOCK = threading.RLock()


def load_plugin_metrics(name: str | None = None) -> None:
    """Import the metric modules plug-ins registered (``Registry.metric_modules``) that may define ``name``
    (all of them for None), each once."""
    from proctor.core.registry import registry

    modules = [m for m in registry().metric_modules_for(name) if m not in _PLUGIN_DONE]
    if not modules:
        return
    with _PLUGIN_LOCK:
        for module in modules:
            if module in _PLUGIN_STARTED:  # done meanwhile, or this thread is importing it
                continue
            _PLUGIN_STARTED.add(module)
            try:
                with loading(f"the metric module {module}", module):
                    importlib.import_module(module)
            except BaseException:
                _PLUGIN_STARTED.discard(module)
                raise
            _PLUGIN_DONE.add(module)


_ENTRY_POINTS_LOADED = False


def load_entry_points() -> None:
    """Import the modules installed packages list under the ``proctor.metrics`` entry-point group
    (each registers its metrics with ``register_metric`` on import). Done once, on the first unknown name."""
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    load_plugin_metrics()
    _ENTRY_POINTS_LOADED = True
    from importlib.metadata import entry_points

    for entry in entry_points(group="proctor.metrics"):
        with loading(f"the installed metrics '{entry.name}' ({entry.value})", entry.value):
            entry.load()


def load_metric_file(path: str) -> ModuleType:
    """Import a Python file that registers metrics (``--plugin FILE.py``); once per file. Returns the module."""
    from pathlib import Path

    from proctor.core.errors import TaskDefinitionError
    from proctor.core.user_code import import_file

    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise TaskDefinitionError("metric plugin file not found", file=file)
    return import_file(file, prefix="proctor_metrics")


DEFAULT_METRICS = {
    "multiple_choice": ["acc", "acc_norm"],
    "generate": ["exact_match", "f1", "null_count"],
    "perplexity": ["word_perplexity", "token_perplexity", "bits_per_byte"],
}


# ---------------------------------------------------------------- multiple choice
def unscored(fn: Callable[..., float]) -> Callable[..., float | None]:
    """A choice metric gives None (not counted; reported as unscored) for a sample without ground truth."""

    @functools.wraps(fn)  # its signature too: check_arguments reads it
    def wrapper(outcome: ChoiceOutcome, **kwargs: Any) -> float | None:
        return None if not outcome.gold else fn(outcome, **kwargs)

    return wrapper


def _argmax(values: Sequence[float]) -> int:
    return int(np.argmax(np.asarray(values, dtype=float)))  # first maximum wins, as numpy does


@register_metric("acc", ["multiple_choice"])
@unscored
def _acc(outcome: ChoiceOutcome) -> float:
    return float(_argmax(outcome.logprobs) in outcome.gold)


@register_metric("acc_norm", ["multiple_choice"])
@unscored
def _acc_norm(outcome: ChoiceOutcome) -> float:
    """Log-likelihood divided by the choice's length in characters."""
    scores = [lp / max(n, 1) for lp, n in zip(outcome.logprobs, outcome.char_lengths)]
    return float(_argmax(scores) in outcome.gold)


@register_metric("acc_per_token", ["multiple_choice"])
@unscored
def _acc_per_token(outcome: ChoiceOutcome) -> float:
    scores = [lp / max(n, 1) for lp, n in zip(outcome.logprobs, outcome.n_tokens)]
    return float(_argmax(scores) in outcome.gold)


@register_metric("brier_score", ["multiple_choice"], higher_is_better=False)
@unscored
def _brier(outcome: ChoiceOutcome) -> float:
    return float(sum((p - (1.0 if i in outcome.gold else 0.0)) ** 2 for i, p in enumerate(outcome.distribution)))


@register_metric("gold_probability", ["multiple_choice"])
@unscored
def _gold_probability(outcome: ChoiceOutcome) -> float:
    return float(sum(outcome.distribution[i] for i in outcome.gold))


@register_metric("distribution_acc", ["multiple_choice"])
@unscored
def _distribution_acc(outcome: ChoiceOutcome) -> float:
    """The gold choice has the highest probability of the distribution (ties count as correct, as in probsem)."""
    top = max(outcome.distribution)
    return float(any(outcome.distribution[i] == top for i in outcome.gold))


# ---------------------------------------------------------------- generation
@register_metric("exact_match", ["generate"])
def _exact_match(outcome: GenerationOutcome) -> float:
    return text_metrics.best_over_references(text_metrics.exact_match, outcome.answer, list(outcome.references))


@register_metric("f1", ["generate"])
def _f1(outcome: GenerationOutcome) -> float:
    return text_metrics.best_over_references(text_metrics.token_f1, outcome.answer, list(outcome.references))


@register_metric("null_count", ["generate"], aggregate=total, higher_is_better=False)
def _null_count(outcome: GenerationOutcome) -> float:
    return 0.0 if outcome.parsed else 1.0


# ---------------------------------------------------------------- perplexity
@register_metric(
    "word_perplexity", ["perplexity"], aggregate=pooled_ratio(lambda lp, n: exp_or_inf(-lp / n)), higher_is_better=False
)
def _word_ppl(outcome: PerplexityOutcome) -> tuple[float, int]:
    return outcome.logprob, outcome.n_words


@register_metric(
    "token_perplexity",
    ["perplexity"],
    aggregate=pooled_ratio(lambda lp, n: exp_or_inf(-lp / n)),
    higher_is_better=False,
)
def _token_ppl(outcome: PerplexityOutcome) -> tuple[float, int]:
    return outcome.logprob, outcome.n_tokens


@register_metric(
    "byte_perplexity", ["perplexity"], aggregate=pooled_ratio(lambda lp, n: exp_or_inf(-lp / n)), higher_is_better=False
)
def _byte_ppl(outcome: PerplexityOutcome) -> tuple[float, int]:
    return outcome.logprob, outcome.n_bytes


@register_metric(
    "bits_per_byte", ["perplexity"], aggregate=pooled_ratio(lambda lp, n: -lp / n / math.log(2)), higher_is_better=False
)
def _bits_per_byte(outcome: PerplexityOutcome) -> tuple[float, int]:
    return outcome.logprob, outcome.n_bytes


_BUILT_IN_READY = True  # from here on, a register_metric call first imports the plug-ins' metric modules
