"""Out-of-memory handling for local backends: halve and retry.

``--batch-size auto`` picks a size from free memory; an estimate can still be wrong (another
process on the GPU, fragmentation). Instead of failing the run, the work is retried at half the
size, down to one.
"""

from __future__ import annotations

import logging
from typing import Callable, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an accelerator (or allocator) out-of-memory error."""
    try:
        import torch

        if isinstance(exc, (getattr(torch, "OutOfMemoryError", ()), getattr(torch.cuda, "OutOfMemoryError", ()))):
            return True
    except ImportError:
        pass
    return isinstance(exc, (RuntimeError, MemoryError)) and "out of memory" in str(exc).lower()


def _release() -> None:
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass


def halving(run: Callable[[int], T], size: int, what: str = "batch") -> T:
    """``run(size)``; on out-of-memory, ``run(size // 2)`` and so on down to 1, then the error."""
    while True:
        try:
            return run(size)
        except Exception as exc:
            if not is_out_of_memory(exc) or size <= 1:
                raise
            _release()
            log.warning("out of memory with a %s of %d; retrying with %d", what, size, size // 2)
            size //= 2
