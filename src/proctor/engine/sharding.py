"""Which replica runs which chunk: deterministic, balanced by (estimated) tokens.

The engine's chunks have fixed contents (``runs/executor.execute``), so a chunk's results do not depend
on which replica runs it; this module only decides where work goes. The first assignment is a
pure function of the chunks: longest-processing-time-first by estimated tokens, ties broken by the
chunk's request hashes, each chunk going to the least-loaded replica.
"""

from __future__ import annotations

import hashlib
from collections import deque
from typing import Sequence

from proctor.core.model_requests import GenerateRequest, LoglikelihoodRequest, Request
from proctor.runs.store import request_hash

CHARS_PER_TOKEN = 4  # the driver has no tokenizer: characters / 4 estimates tokens


def estimated_tokens(request: Request) -> int:
    if isinstance(request, LoglikelihoodRequest):
        return 1 + (len(request.context) + len(request.continuation)) // CHARS_PER_TOKEN
    if isinstance(request, GenerateRequest):
        return 1 + len(request.prompt) // CHARS_PER_TOKEN + request.max_tokens
    return 1 + len(getattr(request, "text", "")) // CHARS_PER_TOKEN


def chunk_key(chunk: Sequence[Request]) -> str:
    digest = hashlib.sha256()
    for request in chunk:
        digest.update(request_hash(request).encode())
    return digest.hexdigest()


def assign(
    chunks: Sequence[int],
    costs: Sequence[int],
    keys: Sequence[str],
    replicas: Sequence[int],
    loads: dict[int, int] | None = None,
) -> dict[int, deque[int]]:
    """Queues of chunk indices per replica: heaviest chunk first, to the least-loaded replica.

    ``costs`` and ``keys`` are indexed by chunk; ``loads`` (replica -> tokens still queued) lets a
    reassignment balance against the work the surviving replicas already have.
    """
    loads = {r: (loads or {}).get(r, 0) for r in replicas}
    queues: dict[int, deque[int]] = {r: deque() for r in replicas}
    for k in sorted(chunks, key=lambda i: (-costs[i], keys[i])):
        target = min(replicas, key=lambda r: (loads[r], r))
        queues[target].append(k)
        loads[target] += costs[k]
    return queues
