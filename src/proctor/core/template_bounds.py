"""The bounds of one template render: loop steps, time and text size, so a runaway template stops.

A task file's template could loop for hours (``{% for i in range(10**5) %}{% for j in range(10**5) %}``) or
build a string of gigabytes (``{{ question * 10**9 }}``) for every row. Jinja's sandbox bounds ``range``
only; what proctor adds costs nothing for a template without loops or the operators below:

- every ``{% for %}`` iterates through ``counted`` (its iterable is wrapped when the template compiles,
  ``bound_loops``): more than ``MAX_STEPS`` loop steps in one render, or ``MAX_SECONDS``, stop it (both
  checked every ``CHECK_EVERY`` steps: a loop over a list or range counts its length at once);
- ``*`` and ``**`` go through ``checked_binop``, and ``~`` through ``sized``: a text or list over
  ``MAX_ITEMS``, or a power over ``MAX_POWER_BITS`` bits, is refused before it is built;
- the rendered text is joined by ``bounded_join``, which stops at ``MAX_ITEMS`` characters.

Going past a bound raises ``TemplateBound``; ``core/templates.py`` reports it against the template's own
field and task file (a runaway template is the template's doing, whatever the row).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Iterable, Iterator, TypeVar

from jinja2 import nodes

MAX_STEPS = 10_000_000  # loop iterations in one render (a template over a row's list takes a few)
MAX_SECONDS = 10.0  # one render
MAX_ITEMS = 50_000_000  # characters of a text (the rendered prompt, a product, a ~ join) or items of a list
MAX_POWER_BITS = 1_000_000  # an integer power's size: 10**9 is 30 bits, 10**10**10 would take hours

COUNTED = "_proctor_counted"  # the filter names the compiled templates call
SIZED = "_proctor_sized"

T = TypeVar("T")  # a loop's items, a joined value: handed back as they came


class TemplateBound(Exception):
    """A render went past one of the bounds above; the message says which."""


class _Budget(threading.local):
    steps = 0  # loop steps of the render so far
    check_at = 0  # the step count at which the bounds are checked next (every CHECK_EVERY steps)
    deadline: float | None = None  # set at the first check: a render without loops reads no clock


CHECK_EVERY = 1024
_BUDGET = _Budget()


def start_render() -> None:
    """A new render: its loop steps and time start from zero."""
    budget = _BUDGET
    budget.steps = budget.check_at = 0
    budget.deadline = None


def _check(budget: _Budget) -> None:
    """The bounds, checked at most once per ``CHECK_EVERY`` loop steps (the clock costs more than a step)."""
    if budget.steps > MAX_STEPS:
        raise TemplateBound(f"loops more than {MAX_STEPS:,} times in one render")
    now = time.monotonic()
    if budget.deadline is None:
        budget.deadline = now + MAX_SECONDS
    elif now > budget.deadline:
        raise TemplateBound(f"takes more than {MAX_SECONDS:g} seconds to render")
    budget.check_at = min(budget.steps + CHECK_EVERY, MAX_STEPS + 1)  # the step bound is exact


def counted(iterable: Iterable[T]) -> Iterable[T]:
    """A ``{% for %}``'s iterable, its steps counted against the render's budget: a sized one (a list, a range,
    a text: nearly every loop) all at once and returned as it is, an iterator step by step."""
    try:
        size = len(iterable)  # type: ignore[arg-type]  # no len(): counted step by step
    except TypeError:
        return _each_counted(iterable)
    budget = _BUDGET
    budget.steps += size
    if budget.steps >= budget.check_at:
        _check(budget)
    return iterable


def _each_counted(iterable: Iterable[T]) -> Iterator[T]:
    budget = _BUDGET
    for item in iterable:
        budget.steps += 1
        if budget.steps >= budget.check_at:
            _check(budget)
        yield item


def _too_long(size: int) -> TemplateBound:
    return TemplateBound(f"builds a text or list of {size:,} characters or items (more than {MAX_ITEMS:,})")


def sized(value: T) -> T:
    """A ``~`` join's result, refused past ``MAX_ITEMS`` characters."""
    if isinstance(value, str) and len(value) > MAX_ITEMS:
        raise _too_long(len(value))
    return value


def checked_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse a ``*`` or ``**`` whose result would be too big, before Python builds it."""
    if operator == "*":
        for sequence, times in ((left, right), (right, left)):
            counted = (
                isinstance(sequence, (str, list, tuple)) and isinstance(times, int) and not isinstance(times, bool)
            )
            if counted and len(sequence) * times > MAX_ITEMS:
                raise _too_long(len(sequence) * times)
    elif operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
        bits = right * abs(left).bit_length()
        if bits > MAX_POWER_BITS:
            raise TemplateBound(f"computes a power of about {bits:,} bits")


def bounded_join(parts: Iterable[str]) -> str:
    """The rendered text's pieces joined, refused past ``MAX_ITEMS`` characters before the join allocates it
    (the pieces are references to texts already built: a loop printing one long field many times)."""
    pieces = list(parts)  # texts (the compiled template prints str() of each value)
    size = sum(map(len, pieces))
    if size > MAX_ITEMS:
        raise _too_long(size)
    return "".join(pieces)


def bounded_sub(pattern: str, replacement: str, text: str, count: int = 0) -> str:
    """``re.sub`` for a template's ``regex_replace`` filter, stopped at the render's time bound: a pattern
    that backtracks catastrophically on a row's text (``(a+)+$``) would otherwise hold one C call for hours,
    where no loop step is counted. The ``regex`` package's ``sub`` takes a timeout and, in its default
    (version 0) mode, matches as ``re`` does."""
    import regex

    budget = _BUDGET
    now = time.monotonic()
    if budget.deadline is None:
        budget.deadline = now + MAX_SECONDS
    try:
        return regex.sub(pattern, replacement, text, count=count, timeout=max(budget.deadline - now, 0.001))
    except TimeoutError:
        raise TemplateBound(
            f"runs regex_replace with {pattern!r}, which takes more than {MAX_SECONDS:g} seconds on a "
            f"{len(text):,}-character text"
        ) from None


def bound_loops(template: nodes.Template) -> nodes.Template:
    """Wrap each loop's iterable in ``counted`` and each ``~`` in ``sized`` (in the parsed template)."""
    every = [template, *template.find_all(nodes.Node)]  # listed first: the wrappers added are not walked
    for node in every:
        if isinstance(node, nodes.For):
            node.iter = _filtered(node.iter, COUNTED)
        for field in node.fields:
            child = getattr(node, field, None)
            if isinstance(child, nodes.Concat):
                setattr(node, field, _filtered(child, SIZED))
            elif isinstance(child, list):
                child[:] = [_filtered(c, SIZED) if isinstance(c, nodes.Concat) else c for c in child]
    return template


def _filtered(node: nodes.Node, name: str) -> nodes.Filter:
    return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)
