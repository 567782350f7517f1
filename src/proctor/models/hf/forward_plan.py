"""Which packed rows go through the model together, and at what shape.

Three layouts, chosen per model (``HFModel(forward_layout=...)``, ``--model-arg forward_layout=``):

- ``units`` (the CPU default where the decoder's attention is plain, ``unit_attention.supported``):
  requests cut into units at points that depend on each request alone, calls of one fixed size
  (``unit_plan``, ``unit_scoring``): a request's numbers are the same whatever else is in the run.
  The other two layouts are computed by ``packing`` rows instead, where a request's last bits move
  with the requests that share its row.
- ``packed`` (the CPU default for other decoders): rows of at most 512 tokens; consecutive rows share a call while the
  call's padded size stays within 2,048 tokens; a call is as wide as its longest row, rounded up to
  a multiple of ``packing.ROW_ALIGN``. Cheap attention on a CPU, little padding.
- ``bucketed`` (the CUDA default): rows of up to 2,048 tokens, filled with look-ahead packing, each
  padded to a bucket width (a power of two from ``MIN_BUCKET``); a bucket's rows go
  ``call_tokens // width`` at a time, and its last call takes the rows left, rounded up with empty
  rows to a power of two or an eighth of a full call, whichever is fewer. A task then sees a handful of
  input shapes, each many times: what GPU kernels (and their autotuned or compiled variants) want.

Either way the calls are a function of the rows alone, never of the batch size or request order,
so a log-likelihood's bits do not depend on them either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from proctor.models.hf.packing import PackedRow, aligned
from proctor.models.hf.unit_plan import BLOCK, CALL_TOKENS, CONTINUATION

LAYOUTS = ("units", "packed", "bucketed")
MIN_BUCKET = 64


@dataclass(frozen=True)
class ForwardLayout:
    """How scoring requests become forward calls."""

    name: str  # "units" | "packed" | "bucketed"
    row_tokens: int  # packing budget: tokens per row (a longer single context gets a row of its own)
    call_tokens: int  # padded tokens per forward call
    chunk_requests: int  # log-likelihood requests per engine call (rows are packed within one)
    lookahead: int = 0  # groups a full row may be topped up from (``packing.pack``)

    @property
    def fingerprint(self) -> str | None:
        """What the model fingerprint records of the layout (it decides a number's last bits); None
        for ``packed``, so stored answers of the packed rows keep their keys."""
        if self.name == "units":
            return f"units,block={BLOCK},continuation={CONTINUATION},call_tokens={self.call_tokens}"
        if self.name == "packed":
            return None
        return f"{self.name},call_tokens={self.call_tokens}"


def layout_for(name: str | None, cuda: bool, row_tokens: int | None = None) -> ForwardLayout:
    """The named layout (default: ``bucketed`` on CUDA, ``units`` elsewhere); ``row_tokens``
    overrides the packing budget (and, for ``units``, the prefill budget of generation)."""
    name = name or ("bucketed" if cuda else "units")
    if name == "units":
        # engine calls of 1,024 requests: one call's padding (its last forward) is spread over more work
        return ForwardLayout(name, row_tokens or 512, CALL_TOKENS, 1024)
    if name == "bucketed":
        # 8 rows of 2,048 per call; engine calls of 4,096 requests keep the calls full (few tails).
        return ForwardLayout(name, row_tokens or 2048, max(16384, row_tokens or 0), 4096, lookahead=32)
    if name == "packed":
        rows = row_tokens or 512
        return ForwardLayout(name, rows, max(2048, rows), 256)
    raise ValueError(f"unknown forward layout '{name}'; choose one of {', '.join(LAYOUTS)}")


def bucket(n: int) -> int:
    """The bucket width of a row of ``n`` tokens: the smallest power of two >= n (>= MIN_BUCKET)."""
    width = MIN_BUCKET
    while width < n:
        width *= 2
    return width


@dataclass(frozen=True)
class ForwardCall:
    """Rows forwarded together: ``n_rows`` x ``width`` tokens (empty rows and columns are padding)."""

    rows: tuple[PackedRow, ...]
    width: int
    n_rows: int

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_rows, self.width)

    @property
    def plain_causal(self) -> bool:
        """Every row one chain from position 0: the plain causal kernel computes it exactly."""
        return all(row.is_chain for row in self.rows)


def plan_calls(rows: Sequence[PackedRow], layout: ForwardLayout) -> list[ForwardCall]:
    """The forward calls for ``rows``, in an order that depends only on the rows."""
    if layout.name == "bucketed":
        return _bucketed(rows, layout.call_tokens)
    return _packed(rows, layout.call_tokens)


def _packed(rows: Sequence[PackedRow], call_tokens: int) -> list[ForwardCall]:
    """Consecutive rows share a call while its padded size stays within ``call_tokens``."""
    groups: list[list[PackedRow]] = []
    width = 0
    for row in rows:
        grown = max(width, aligned(len(row)))
        if groups and grown * (len(groups[-1]) + 1) <= call_tokens:
            groups[-1].append(row)
            width = grown
        else:
            groups.append([row])
            width = aligned(len(row))
    return [ForwardCall(tuple(g), max(aligned(len(r)) for r in g), len(g)) for g in groups]


def _bucketed(rows: Sequence[PackedRow], call_tokens: int) -> list[ForwardCall]:
    """Rows by bucket width; ``call_tokens // width`` rows per call, the last call of a bucket
    rounded up with empty rows (``_tail_rows``)."""
    by_width: dict[int, list[PackedRow]] = {}
    for row in rows:
        by_width.setdefault(bucket(len(row)), []).append(row)
    calls = []
    for width in sorted(by_width, reverse=True):
        members = by_width[width]
        per_call = max(1, call_tokens // width)
        for start in range(0, len(members), per_call):
            group = tuple(members[start : start + per_call])
            calls.append(ForwardCall(group, width, _tail_rows(len(group), per_call)))
    return calls


def _tail_rows(n: int, per_call: int) -> int:
    """Rows of a bucket's last call holding ``n`` rows: the smaller of the next power of two and the
    next multiple of an eighth of a full call (so at most a dozen or so tail shapes per width), and
    never one row where a call holds more (a compiled kernel specialises a dimension of size one)."""
    power = 2
    while power < n:
        power *= 2
    step = max(1, per_call // 8)
    return min(power, max(2, -(-n // step) * step), per_call)


def plan_summary(calls: Sequence[ForwardCall], unique_tokens: int | None = None) -> dict[str, float]:
    """What a plan costs: calls, distinct shapes, tokens per call, padding, tokens per unique token."""
    forwarded = sum(c.n_rows * c.width for c in calls)
    real = sum(len(row) for c in calls for row in c.rows)
    summary: dict[str, float] = {
        "forward_calls": len(calls),
        "distinct_shapes": len({c.shape for c in calls}),
        "tokens_forwarded": forwarded,
        "mean_tokens_per_call": forwarded / len(calls) if calls else 0.0,
        "padding_share": 1 - real / forwarded if forwarded else 0.0,
    }
    if unique_tokens:
        summary["tokens_over_unique"] = forwarded / unique_tokens
    return summary
