"""Run a flat list of requests on a model through the engine, outside of a task.

Python use cases build their own prompts; this is where their requests meet the engine. Requests
are deduplicated, then go through ``runner.execute``: with an ``engine_session`` in force (a run
folder's store, optionally backed by the shared cache, and a progress hook), every request is
looked up in the store first and the rest are sent to the model in fixed chunks, each committed
to the store as it returns — so a rerun, or a run resumed after a kill, calls the model only for
what is not stored yet. Without a session, requests simply go to the model. Results come back in
request order.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from proctor.engine.runner import ProgressHook
from proctor.runs.executor import dedupe as _dedupe, execute
from proctor.models.base import Model
from proctor.core.model_requests import GenerateRequest, GenerateResult, LoglikelihoodRequest, LoglikelihoodResult
from proctor.runs.store import Lookup, fingerprint_hash


@dataclass
class EngineSession:
    """Where engine calls made by Python code store their answers, and whom they report to.

    ``progress(name, done, total)`` is the runner's progress hook; ``total`` grows with every call
    (a retry round adds its requests), ``done`` counts requests answered (from the store or the model).
    """

    lookup: Lookup | None = None
    chunk_size: int | None = None
    progress: ProgressHook | None = None
    name: str = "usecase"
    done: int = 0
    total: int = 0
    model_calls: int = 0  # requests sent to the model (not answered by the store or cache)

    def _use(self, model: Model) -> None:
        if self.lookup is not None and self.lookup.model != fingerprint_hash(model.fingerprint):
            self.lookup.use_model(model.fingerprint)

    def _advance(self, n: int) -> None:
        self.done += n
        if self.progress:
            self.progress(self.name, self.done, self.total)


_SESSION: ContextVar[EngineSession | None] = ContextVar("proctor_engine_session", default=None)


@contextlib.contextmanager
def engine_session(
    lookup: Lookup | None = None,
    chunk_size: int | None = None,
    progress: ProgressHook | None = None,
    name: str = "usecase",
) -> Iterator[EngineSession]:
    """Send every engine call made inside the block through ``lookup`` and report to ``progress``."""
    session = EngineSession(lookup, chunk_size, progress, name)
    token = _SESSION.set(session)
    try:
        if progress:
            progress(name, 0, 0)
        yield session
    finally:
        _SESSION.reset(token)


def current_session() -> EngineSession | None:
    return _SESSION.get()


def run_requests(
    model: Model, request_type: str, requests: Sequence[Any], progress: Callable[[int], None] | None = None
) -> list[Any]:
    """Results of ``request_type`` ("generate", "loglikelihood") for ``requests``, in their order."""
    if not requests:
        return []
    unique, mapping = _dedupe(requests)
    session = _SESSION.get()
    if session is None:
        results = execute(model, request_type, unique, progress=progress)
        return [results[k] for k in mapping]
    session._use(model)
    session.total += len(unique)
    session._advance(0)
    stored_before = session.lookup.computed if session.lookup is not None else None

    def on_progress(n: int) -> None:
        session._advance(n)
        if progress:
            progress(n)

    results = execute(model, request_type, unique, session.lookup, session.chunk_size, on_progress)
    if stored_before is not None:
        session.model_calls += session.lookup.computed - stored_before
    else:
        session.model_calls += len(unique)
    return [results[k] for k in mapping]


def run_generate(
    model: Model, requests: Sequence[GenerateRequest], progress: Callable[[int], None] | None = None
) -> list[GenerateResult]:
    """Generate for every request; identical requests are computed once."""
    return run_requests(model, "generate", requests, progress)


def run_loglikelihood(
    model: Model, requests: Sequence[LoglikelihoodRequest], progress: Callable[[int], None] | None = None
) -> list[LoglikelihoodResult]:
    """Log-likelihood of every request; identical requests are computed once."""
    return run_requests(model, "loglikelihood", requests, progress)
