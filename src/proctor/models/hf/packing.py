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
    cut: int = 0  # tokens cut from the left to fit the window (reported as the result's ``truncated``)


# What scoring gives per item: its targets' log-probs, and whether every target was the greedy token.
ItemScores = tuple[tuple[float, ...], bool]


@dataclass
class PackedRow:
    tokens: list[int] = field(default_factory=list)  # input token of each node
    parents: list[int] = field(default_factory=list)  # parent node (-1 for a root)
    depths: list[int] = field(default_factory=list)  # position id of each node
    # The requests scored in this row, flat (a forward call gathers them without a loop per request):
    # each request's index and number of targets, then every target's token and the node whose output predicts it.
    owners: list[int] = field(default_factory=list)
    n_targets: list[int] = field(default_factory=list)
    target_nodes: list[int] = field(default_factory=list)
    targets: list[int] = field(default_factory=list)
    # Nodes are numbered in depth-first order (sequences go in sorted), so a node's subtree is the
    # nodes from it up to ``ends[node]`` (exclusive): j is an ancestor-or-self of i iff j <= i < ends[j].
    ends: list[int] = field(default_factory=list)
    is_chain: bool = False  # one sequence, no branches (set by ``close``): plain causal attention is exact
    _path: list[int] = field(default_factory=list, repr=False)  # nodes of the last inserted sequence

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def scored(self) -> list[tuple[int, list[int], list[int]]]:
        """Per request in this row: (request index, node whose output predicts each target, targets)."""
        out, start = [], 0
        for index, n in zip(self.owners, self.n_targets):
            out.append((index, self.target_nodes[start : start + n], self.targets[start : start + n]))
            start += n
        return out

    def add_scored(self, index: int, nodes: Sequence[int], targets: Sequence[int]) -> None:
        """Request ``index`` scores ``targets``, predicted by the outputs of ``nodes``."""
        self.owners.append(index)
        self.n_targets.append(len(targets))
        self.target_nodes.extend(nodes)
        self.targets.extend(targets)

    def append(self, sequence: Sequence[int], shared: int) -> list[int]:
        """Add ``sequence``, which shares its first ``shared`` tokens with the previous one (sorted
        order: no earlier sequence in the row shares more); return the node of each of its tokens."""
        previous = self._path
        n = len(self.tokens)
        for node in previous[shared:]:  # the previous sequence's branch below the shared part is complete
            self.ends[node] = n
        new = len(sequence) - shared
        parent = previous[shared - 1] if shared else -1
        depth = shared
        self.tokens.extend(sequence[shared:])
        if new:
            self.parents.append(parent)
            self.parents.extend(range(n, n + new - 1))
        self.depths.extend(range(depth, depth + new))
        self.ends.extend([0] * new)
        path = previous[:shared] + list(range(n, n + new))
        self._path = path
        return path

    def close(self) -> None:
        n = len(self.tokens)
        for node in self._path:
            self.ends[node] = n
        self.is_chain = all(end == n for end in self.ends)

    def attention_mask(self, width: int | None = None) -> np.ndarray:
        """Boolean [width, width]: node i may attend to node j iff j is i or an ancestor of i;
        nodes past the row's own (padding, up to ``width``) attend to themselves only."""
        n = len(self.tokens)
        width = max(width or n, n)
        ends = np.arange(1, width + 1)
        ends[:n] = self.ends
        index = np.arange(width)
        return (index[None, :] <= index[:, None]) & (index[:, None] < ends[None, :])


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the common prefix of two token tuples (slice comparisons run in C)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    low, high = 0, n  # a[:low] == b[:low], a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle
    return low


def pack(items: Sequence[ScoringItem], budget: int, lookahead: int = 0) -> list[PackedRow]:
    """Rows of at most ``budget`` nodes (a longer single group gets a row of its own).

    Requests that share their unscored context (the choices of one question) form a group that
    is never split across rows, so each context is forwarded once. Groups go into rows in sorted
    order; with ``lookahead``, a row that the next group would overflow is first topped up with
    later groups (up to that many ahead) that still fit. A row then holds a subsequence of the
    sorted order, which keeps its depth-first numbering: a group shares the most with the row's
    last sequence (for sorted a <= b <= c, lcp(a, c) <= lcp(b, c)).
    """
    inputs = [item.tokens[:-1] for item in items]
    order = sorted(
        range(len(items)), key=lambda i: (inputs[i], items[i].tokens[len(items[i].tokens) - items[i].n_targets :], i)
    )
    # shared[k]: tokens the k-th input (sorted) shares with the one before it
    shared = [0] + [common_prefix(inputs[a], inputs[b]) for a, b in zip(order, order[1:])]
    context_length = [len(items[i].tokens) - items[i].n_targets for i in order]
    groups: list[tuple[int, int]] = []  # [start, end) in sorted order: the requests with one unscored context
    k = 0
    while k < len(order):
        end = k + 1
        while end < len(order) and context_length[end] == context_length[k] and shared[end] >= context_length[k]:
            end += 1
        groups.append((k, end))
        k = end

    rows: list[PackedRow] = []
    row: PackedRow | None = None
    last = -1  # sorted position of the row's last sequence

    def first_shared(k: int) -> int:
        """What the group starting at sorted position ``k`` shares with the row's last sequence."""
        if row is None or not len(row):
            return 0
        return shared[k] if last == k - 1 else common_prefix(inputs[order[last]], inputs[order[k]])

    def cost(group: tuple[int, int], first: int) -> int:
        k, end = group
        return len(inputs[order[k]]) - first + sum(len(inputs[order[j]]) - shared[j] for j in range(k + 1, end))

    def add(group: tuple[int, int], first: int) -> None:
        nonlocal last
        assert row is not None  # a group is added to the row opened for it
        k, end = group
        for j in range(k, end):
            i = order[j]
            path = row.append(inputs[i], first if j == k else shared[j])
            n_targets = items[i].n_targets
            row.add_scored(i, path[len(path) - n_targets :], items[i].tokens[len(items[i].tokens) - n_targets :])
        last = end - 1

    placed = [False] * len(groups)
    for g, group in enumerate(groups):
        if placed[g]:
            continue
        first = first_shared(group[0])
        if row is None or (len(row) + cost(group, first) > budget and len(row) > 0):
            if row is not None:
                for h in range(g + 1, min(len(groups), g + 1 + lookahead)):  # top the row up with later groups that fit
                    if not placed[h] and len(row) + cost(groups[h], later := first_shared(groups[h][0])) <= budget:
                        add(groups[h], later)
                        placed[h] = True
                row.close()
            row = PackedRow()
            rows.append(row)
            first = 0
        add(group, first)
        placed[g] = True
    if row is not None:
        row.close()
    return rows
