"""PyTorch, imported for a local backend, with its math library settled before any model runs.

Why: on the CPU, PyTorch computes a float tensor's ``cos``, ``sin``, ``exp``, ``log``, ``tanh``
and similar functions with MKL's vector math (VML), split over its OpenMP threads. MKL sets up
those functions lazily, on their first call, and that set-up is not safe when the first call
comes from several threads at once: in about one fresh process in four (measured here,
PyTorch 2.13.0+cpu, 2 threads), the second thread's share of the very first ``cos`` came out
wrong by up to ~1e-4, and every later call was right. A Llama's rotary embedding is exactly
such a first call, so the first forward pass of a run — the first batch of an evaluation — could
give other log-likelihoods than a rerun of the same command, in a few percent of the values.
Calling each function once on a tensor too small to be split (so on one thread) sets MKL up
before anything runs in parallel; after that every process computes the same bits.
"""

from __future__ import annotations

from typing import Any

from proctor.core.errors import require

# Unary functions that ATen may hand to MKL's VML on the CPU (``ATen/cpu/vml.h``), plus the
# ones PyTorch builds on them; one call each on eight elements is a few microseconds in all.
_VML_FUNCTIONS = (
    "abs",
    "acos",
    "asin",
    "atan",
    "cos",
    "sin",
    "tan",
    "cosh",
    "sinh",
    "tanh",
    "exp",
    "expm1",
    "log",
    "log10",
    "log1p",
    "log2",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "erf",
    "erfc",
    "erfinv",
    "lgamma",
    "sigmoid",
    "trunc",
)
_settled = False


def load_torch(feature: str, what: str) -> Any:
    """``torch`` (a clear error naming ``feature``'s extra where it is missing), its CPU math set up
    on this thread (``settle``)."""
    torch = require("torch", feature, what)
    settle()
    return torch


def settle() -> None:
    """Call every VML function once, single-threaded, in float32 and float64, and one small matrix
    product of each (MKL's BLAS sets itself up lazily too); once per process (torch imported)."""
    global _settled
    if _settled:
        return
    import torch

    with torch.no_grad():
        for dtype in (torch.float32, torch.float64):
            values = torch.linspace(0.1, 0.9, 8, dtype=dtype)
            for name in _VML_FUNCTIONS:
                getattr(torch, name)(values)
            square = values.repeat(8).view(8, 8)
            torch.mm(square, square)
    _settled = True
