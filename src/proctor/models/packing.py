"""Pack scoring requests into prefix-sharing rows (token tries) for one forward pass each.

Requests are sorted by their tokens, so requests that share a prefix (the choices of one
question, prompts with the same few-shot examples) sit next to each other; consecutive requests
go into one trie until the row's token budget is reached. Every trie node is one input token;
it attends to its ancestors only, and its position id is its depth, so each request sees
exactly the sequence it would see alone, while shared prefixes are computed once.

A row depends only on the set of requests and the budget — never on their order or on any
batch size — which is what makes scores reproducible bit for bit.

Rows are forwarded padded to a multiple of ``ROW_ALIGN`` nodes (padding nodes see only
themselves and nobody sees them). Besides repeating shapes, this keeps every matrix product away
from the few-row shapes whose result depends on the number of CPU threads: MKL's default code path
(measured on AMD EPYC, MKL 2024.2) sums a [M, K] x [K, N] product differently with 1, 2 or 3
threads when M is 5-7 or 9-11, and identically for M in 1-4, 8 and every multiple of 16 (1 to 16
threads). Without it, a Ray worker (one thread) and the driver (two) disagreed in the 5th digit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

ROW_ALIGN = 16  # forward rows and vocabulary projections are padded to a multiple of this


def aligned(n: int, align: int = ROW_ALIGN) -> int:
    """``n`` rounded up to a multiple of ``align`` (at least ``align``)."""
    return max(align, -(-n // align) * align)


@dataclass(frozen=True)
class ScoringItem:
    """A token sequence whose last ``n_targets`` tokens are scored given everything before them."""

    tokens: tuple[int, ...]
    n_targets: int


@dataclass
class PackedRow:
    tokens: list[int] = field(default_factory=list)  # input token of each node
    parents: list[int] = field(default_factory=list)  # parent node (-1 for a root)
    depths: list[int] = field(default_factory=list)  # position id of each node
    # per request in this row: (request index, node whose output predicts each target, targets)
    scored: list[tuple[int, list[int], list[int]]] = field(default_factory=list)
    _children: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.tokens)

    def insert(self, sequence: Sequence[int]) -> list[int]:
        """Add a path for ``sequence``; return the node of each of its tokens."""
        path, parent = [], -1
        for token in sequence:
            node = self._children.get((parent, token))
            if node is None:
                node = len(self.tokens)
                self._children[(parent, token)] = node
                self.tokens.append(token)
                self.parents.append(parent)
                self.depths.append(self.depths[parent] + 1 if parent >= 0 else 0)
            path.append(node)
            parent = node
        return path

    def attention_mask(self, width: int | None = None) -> np.ndarray:
        """Boolean [width, width]: node i may attend to node j iff j is i or an ancestor of i;
        nodes past the row's own (padding, up to ``width``) attend to themselves only."""
        n = len(self.tokens)
        width = max(width or n, n)
        mask = np.eye(width, dtype=bool)
        for i, parent in enumerate(self.parents):  # parents always precede children
            if parent >= 0:
                mask[i, :i] = mask[parent, :i]
        return mask


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _trie_size(sequences: Sequence[Sequence[int]]) -> int:
    """Nodes of a trie over sequences given in sorted order."""
    size, previous = 0, ()
    for sequence in sequences:
        size += len(sequence) - _common_prefix(sequence, previous)
        previous = sequence
    return size


def pack(items: Sequence[ScoringItem], budget: int) -> list[PackedRow]:
    """Rows of at most ``budget`` nodes (a longer single group gets a row of its own).

    Requests that share their unscored context (the choices of one question) form a group that
    is never split across rows, so each context is forwarded once.
    """
    inputs = [item.tokens[:-1] for item in items]
    contexts = [item.tokens[: len(item.tokens) - item.n_targets] for item in items]
    order = sorted(range(len(items)), key=lambda i: (inputs[i], items[i].tokens[-items[i].n_targets :], i))
    groups: list[list[int]] = []
    for i in order:
        if groups and contexts[groups[-1][-1]] == contexts[i]:
            groups[-1].append(i)
        else:
            groups.append([i])
    rows: list[PackedRow] = []
    row: PackedRow | None = None
    previous: Sequence[int] = ()
    for group in groups:
        sequences = [inputs[i] for i in group]
        cost = _trie_size(sequences) - (_common_prefix(sequences[0], previous) if row is not None else 0)
        if row is None or (len(row) + cost > budget and len(row) > 0):
            row = PackedRow()
            rows.append(row)
        for i in group:
            path = row.insert(inputs[i])
            k = items[i].n_targets
            row.scored.append((i, path[len(path) - k :], list(items[i].tokens[len(items[i].tokens) - k :])))
        previous = sequences[-1]
    return rows
