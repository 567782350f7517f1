"""Scoring units: each request's tokens cut where only the request decides, so its numbers are its own.

In a packed row (``packing``) a request's tokens sit at columns set by whatever else shares the row,
and the attention's reductions then sum in an order that moves with them: the same request scored
with ``--limit 20`` and with ``--limit 30`` differed in the 5th digit. Here a request's input is cut
into *units* at points that depend on the request alone:

- its context at every multiple of ``BLOCK`` tokens (a block: what prompts that share a few-shot
  preamble share), then at the end of the context (the rest of the context: what the choices of
  one question share);
- its continuation at every multiple of ``CONTINUATION`` tokens (to bound a unit's length).

A unit is identified by its tokens and every token before it, cut the same way, so requests that
share a prefix share its units and the prefix is computed once — by whichever request, with the same
numbers. Each unit attends to its ancestors' keys and values and causally to its own tokens
(``unit_attention``), in tensors whose shapes are a function of the unit alone.

Units go through the model in calls of exactly ``CALL_TOKENS`` (1,024) tokens (the last call padded): a
matrix product's rows do not depend on where in the product they sit, but they do depend on the
number of rows (MKL takes other kernels for other row counts; measured on Intel AVX-512 and AVX2),
so every call has the one shape. Units are placed in first-appearance order over the requests
sorted by their tokens, which puts every unit after its ancestors and neighbours next to each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from proctor.models.hf.packing import ScoringItem

BLOCK = 64  # context cut points: the granularity at which prompts share computed prefixes
CONTINUATION = 512  # continuation cut points (a rolling window of 2,048 tokens is four units)
# Tokens per forward call, always (every unit is at most this long). 2,048 was 5-15% slower on
# ARC-Easy and HellaSwag (docs/performance.md): a chunk's last call carries more padding.
CALL_TOKENS = 1024


@dataclass(frozen=True)
class Unit:
    """A piece of one or more requests' input: ``tokens`` at positions ``start`` onwards, after
    its ``parent`` unit (-1: the input's start)."""

    start: int
    tokens: tuple[int, ...]
    parent: int
    ancestors: tuple[int, ...]  # every unit before it, first to last


@dataclass
class Call:
    """One forward pass: ``units`` laid out from column 0, in order (``offsets``); columns past
    ``used`` are padding."""

    units: list[int] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    used: int = 0
    # (item, target index, column) of every scored target whose predicting token is in this call
    scored: list[tuple[int, int, int]] = field(default_factory=list)


@dataclass
class UnitPlan:
    units: list[Unit]
    calls: list[Call]
    placed: list[tuple[int, int]]  # per unit: (call, column of its first token)
    last_use: list[int]  # per unit: the last call that reads its keys and values (its own call if none later)
    call_tokens: int
    # Per unit that later calls read: where its tokens start in its call's buffer of kept keys and
    # values (``kept``'s units, in call order); -1 for the others.
    kept_at: list[int] = field(default_factory=list)

    def kept(self, call: int) -> list[int]:
        """Units of ``call`` whose keys and values later calls read."""
        return [u for u in self.calls[call].units if self.last_use[u] > call]

    def kept_tokens(self, call: int) -> int:
        return sum(len(self.units[u].tokens) for u in self.kept(call))


def cuts(item: ScoringItem) -> list[int]:
    """Where ``item``'s input (its tokens but the last) is cut, ascending, ending with its length."""
    length = len(item.tokens) - 1
    context = length - item.n_targets + 1  # context tokens in the input (its last one predicts the first target)
    points = list(range(BLOCK, context, BLOCK)) + [context]
    start = context
    while start < length:
        start = min(length, (start // CONTINUATION + 1) * CONTINUATION)
        points.append(start)
    return points


def plan_units(items: Sequence[ScoringItem], call_tokens: int = CALL_TOKENS) -> UnitPlan:
    """The units of ``items`` and the calls that compute them (``n_targets`` >= 1 each)."""
    if max(BLOCK, CONTINUATION) > call_tokens:
        raise ValueError(f"call_tokens={call_tokens} is less than a unit's longest ({max(BLOCK, CONTINUATION)})")
    order = sorted(range(len(items)), key=lambda i: items[i].tokens)
    units: list[Unit] = []
    ids: dict[tuple[int, tuple[int, ...]], int] = {}
    chains: list[list[int]] = [[] for _ in items]  # per item: its units in order
    for i in order:
        tokens = items[i].tokens
        parent, start = -1, 0
        for end in cuts(items[i]):
            own = tokens[start:end]
            key = (parent, own)
            found = ids.get(key)
            if found is None:
                ancestors = (*units[parent].ancestors, parent) if parent >= 0 else ()
                found = ids[key] = len(units)
                units.append(Unit(start, own, parent, ancestors))
            chains[i].append(found)
            parent, start = found, end

    calls: list[Call] = []
    placed: list[tuple[int, int]] = [(0, 0)] * len(units)
    for u, unit in enumerate(units):  # first-appearance order: ancestors first
        if not calls or calls[-1].used + len(unit.tokens) > call_tokens:
            calls.append(Call())
        call = calls[-1]
        placed[u] = (len(calls) - 1, call.used)
        call.units.append(u)
        call.offsets.append(call.used)
        call.used += len(unit.tokens)

    last_use = [placed[u][0] for u in range(len(units))]
    for u, unit in enumerate(units):
        here = placed[u][0]
        for a in unit.ancestors:
            last_use[a] = max(last_use[a], here)

    for i, item in enumerate(items):
        length = len(item.tokens) - 1
        first = length - item.n_targets  # the position predicting the first target
        chain = chains[i]
        k = 0
        for j in range(item.n_targets):
            position = first + j
            while units[chain[k]].start + len(units[chain[k]].tokens) <= position:
                k += 1
            where, column = placed[chain[k]]
            calls[where].scored.append((i, j, column + position - units[chain[k]].start))
    plan = UnitPlan(units, calls, placed, last_use, call_tokens, [-1] * len(units))
    for c in range(len(calls)):
        at = 0
        for u in plan.kept(c):
            plan.kept_at[u] = at
            at += len(units[u].tokens)
    return plan
