"""Requests answered through the run store: look up, call the model in fixed chunks, commit each chunk.

``execute`` is the one place model calls meet the store. ``ModelExecutor`` binds a model to a
store lookup, a chunk size and a progress callback; the engine hands one to every handler that
calls the model itself (typed as ``proctor.kinds.capabilities.Executor``), and Python use cases
get one explicitly. ``ModelExecutor(model)`` alone, without a store, simply calls the model.

It lives below the engine (beside the store it writes) so that dialects can build one without
importing the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Hashable, Mapping, Protocol, Sequence, TypeVar, cast

from proctor.core.errors import ProctorError
from proctor.core.model_requests import GenerateRequest, LoglikelihoodRequest, Request
from proctor.models.base import MapsChunks
from proctor.models.result_checks import check_results
from proctor.runs.outcome_tally import OutcomeTally
from proctor.runs.store import Lookup, as_stored, request_key
from proctor.runs.thinking import ThinkingTally, run_thinking

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Progress = Callable[[int], None]  # called with the number of requests (or samples) just finished

MAX_CHUNK_REQUESTS = 64  # generation and rolling requests: a kill loses at most this many requests' work (docs/runs.md)
MAX_LOGLIKELIHOOD_CHUNK = 256  # log-likelihood requests: cheap each (one packed forward), so more per call

Unique = TypeVar("Unique", bound=Hashable)  # a request as dedupe gets it (a frozen dataclass), given back as it came


class ExecutedModel(Protocol):
    """What ``execute`` needs of a model (test doubles and wrappers need not subclass ``Model``): its name for
    errors and its fingerprint for the store; the request type's method (``loglikelihood``, ``generate``, ...)
    and the optional sizing (``default_chunk_size``) are looked up by name."""

    @property
    def name(self) -> str: ...

    @property
    def fingerprint(self) -> Mapping[str, object]: ...


def default_chunk_size(model: object, request_type: str = "generate") -> int:
    """Requests per model call when streaming to a store, capped per request type.

    A backend may name its own (``chunk_requests``: the HF backend packs log-likelihoods by
    tokens, and a chunk that followed ``--batch-size`` would make scores depend on it);
    otherwise the backend's batch size, else 64. Either way a chunk is the work a kill can lose,
    so it is capped: ``MAX_LOGLIKELIHOOD_CHUNK`` log-likelihood requests (packed together, a few
    seconds of a small model's CPU time; fewer made the HF backend ~15% slower on ARC-Easy),
    ``MAX_CHUNK_REQUESTS`` generations or rolling log-likelihoods. A backend that declares
    ``chunk_sizes`` gets exactly those (the HF backend on a GPU: a few seconds of GPU work each).
    """
    # duck-typed: test doubles and wrappers need not subclass Model (Model declares these, default None / False)
    declared = getattr(model, "chunk_sizes", None)
    if isinstance(declared, dict) and isinstance(declared.get(request_type), int) and declared[request_type] > 0:
        declared_size: int = declared[request_type]
        return declared_size  # the backend sized its calls for its device (and kept the work a kill loses small)
    size = getattr(model, "chunk_requests", None) or getattr(model, "batch_size", None)
    size = size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else MAX_CHUNK_REQUESTS
    if getattr(model, "large_chunks", False) is True:  # vLLM: its engine batches within one call
        return size
    return min(size, MAX_LOGLIKELIHOOD_CHUNK if request_type == "loglikelihood" else MAX_CHUNK_REQUESTS)


def dedupe(requests: Sequence[Unique]) -> tuple[list[Unique], list[int]]:
    """Unique requests and, for each original request, the index of its unique twin."""
    index: dict[Unique, int] = {}
    unique: list[Unique] = []
    mapping = []
    for request in requests:
        if request not in index:
            index[request] = len(unique)
            unique.append(request)
        mapping.append(index[request])
    return unique, mapping


def _chunk_order_key(request: object) -> tuple[str, str] | tuple[int, str] | tuple[int]:
    """The order chunks are cut from.

    Log-likelihood requests go by their text, so requests that share a prefix (a question's
    choices, a shared few-shot preamble, HellaSwag's activity labels) land in the same call and the
    backend forwards that prefix once (by length first they scattered: 1.07 x the unique tokens
    on ARC + HellaSwag instead of 1.01 x). Generation goes longest first, for even batches.
    """
    if isinstance(request, LoglikelihoodRequest):
        return (request.context, request.continuation)
    if isinstance(request, GenerateRequest):
        return (-len(request.prompt), request.prompt)
    return (-len(getattr(request, "text", "")),)


def execute(
    model: ExecutedModel,
    request_type: str,
    requests: Sequence[DataclassInstance],
    lookup: Lookup | None = None,
    chunk_size: int | None = None,
    progress: Progress | None = None,
    reused: Progress | None = None,
) -> list[Any]:
    """Results for ``requests`` (in their order), streaming each finished chunk to ``lookup``.

    ``progress`` hears of answers as the model gives them; answers the store or cache already held
    go to ``reused`` when given (a display's rate must not count them), else to ``progress``.

    Chunk boundaries depend only on the requests and the chunk size, never on what is already
    stored, so a resumed run sends the model exactly the batches the interrupted one would have.
    A model with ``map_chunks(request_type, chunks, done)`` (a pool of replicas) gets every chunk
    at once and calls ``done(index, results)`` here, in this thread, once per chunk in any order.
    """
    call = getattr(model, request_type)  # "loglikelihood" | "generate" | "rolling_loglikelihood"
    if not requests:
        return []
    if lookup is None and chunk_size is None:
        out = list(call(list(requests), progress))
        _check_count(model, request_type, len(requests), len(out))
        check_results(model, request_type, requests, out)
        return out
    size = chunk_size or default_chunk_size(model, request_type)
    identities = [request_key(r) for r in requests]  # the fields' JSON made once: hashed, and stored
    keys = [key for key, _ in identities]
    stored_fields = [fields for _, fields in identities]
    results: dict[int, DataclassInstance] = {}
    found_before: set[int] = set()
    if lookup is not None:
        found = lookup.get_many(keys, requests)
        results = {i: found[k] for i, k in enumerate(keys) if k in found}
        found_before = set(results)
        report = reused or progress
        if results and report:
            report(len(results))
    chunks = [todo for chunk in chunk_indices(requests, size) if (todo := [i for i in chunk if i not in results])]

    def finish(todo: list[int], out: Sequence[DataclassInstance]) -> None:
        _check_count(model, request_type, len(todo), len(out))
        check_results(model, request_type, [requests[i] for i in todo], out)  # every backend's, before it is stored
        if lookup is not None:
            lookup.put_many([(keys[i], requests[i], r, stored_fields[i]) for i, r in zip(todo, out)])
        results.update(zip(todo, out))

    if isinstance(model, MapsChunks):  # a pool of replicas (engine/distributed.py): chunks run in parallel

        def done(k: int, out: Sequence[DataclassInstance]) -> None:
            finish(chunks[k], list(out))
            if progress:
                progress(len(out))

        # the requests execute is given are proctor's request dataclasses (Request), typed as dataclasses here
        sent = [cast("list[Request]", [requests[i] for i in todo]) for todo in chunks]
        model.map_chunks(request_type, sent, done)
    else:
        for todo in chunks:
            finish(todo, list(call([requests[i] for i in todo], progress)))
    if lookup is not None:  # score what the store holds: a resumed run reads exactly the same values
        # (JSON gives back every field as it was written, so the answers just written need no reading back)
        return [results[i] if i in found_before else as_stored(results[i]) for i in range(len(requests))]
    return [results[i] for i in range(len(requests))]


def chunk_indices(requests: Sequence[object], size: int) -> list[list[int]]:
    """The model calls ``execute`` makes of ``requests`` (indices into it), before the store is
    asked: chunks of about ``size`` in ``_chunk_order_key`` order, never cut between two requests
    with one context (the choices of a question stay in one call, so the backend forwards their
    shared context once). They depend only on the requests, as resuming needs."""
    order = sorted(range(len(requests)), key=lambda i: _chunk_order_key(requests[i]))
    return _chunks(order, size, requests)


def _chunks(order: list[int], size: int, requests: Sequence[object]) -> list[list[int]]:
    """Cut ``order`` into chunks of about ``size``, never between two requests with one context."""

    def context(i: int) -> str | None:
        request = requests[i]
        return request.context if isinstance(request, LoglikelihoodRequest) else None

    chunks: list[list[int]] = []
    for i in order:
        if chunks and (len(chunks[-1]) < size or (context(i) is not None and context(i) == context(chunks[-1][-1]))):
            chunks[-1].append(i)
        else:
            chunks.append([i])
    return chunks


def count_truncated(results: Sequence[object]) -> int:
    """How many answers say their prompt was cut on the left to fit the model's window."""
    return sum(1 for r in results if getattr(r, "truncated", 0))


def _check_count(model: ExecutedModel, request_type: str, asked: int, got: int) -> None:
    if asked != got:
        raise ProctorError(f"model '{model.name}' answered {got} of {asked} {request_type} requests")


class ModelExecutor:
    """A model bound to a run store lookup (optional), a chunk size and a progress callback.

    Implements ``proctor.kinds.capabilities.Executor``. ``run`` sends requests through
    :func:`execute` exactly as given (no deduplication: callers that want it dedupe first);
    ``requests`` and ``computed`` count what was asked and what the model computed (not answered
    by the store or the cache); ``truncated`` the answers whose prompt was cut to fit the model's window.
    """

    def __init__(
        self,
        model: ExecutedModel,
        lookup: Lookup | None = None,
        chunk_size: int | None = None,
        progress: Progress | None = None,
        think_end_token: str | None = None,
        think_budget: int | None = None,
    ) -> None:
        self.model = model
        self.lookup = lookup
        if lookup is not None and not lookup.model:  # a store opened before the model was known (Benchmark)
            lookup.use_model(model.fingerprint)
        self.chunk_size = chunk_size
        self._progress = progress
        self.requests = 0
        self.computed = 0
        self.truncated = 0  # answers whose prompt the model cut to fit its window
        self.think_end_token = think_end_token  # --think-end-token: generations' thinking cut off (runs/thinking.py)
        self.think_budget = think_budget  # --max-thinking-tokens: added to every generation's max_tokens
        self.thinking = ThinkingTally()
        self.outcomes = OutcomeTally(think_end_token)  # what the replies held besides answers (runs/outcome_tally)

    @property
    def stored(self) -> bool:
        return self.lookup is not None

    def run(
        self, request_type: str, requests: Sequence[DataclassInstance], progress: Progress | None = None
    ) -> list[Any]:
        before = self.lookup.computed if self.lookup is not None else 0
        results = run_thinking(
            lambda sent: execute(self.model, request_type, sent, self.lookup, self.chunk_size, progress),
            requests,
            self.think_end_token,
            self.think_budget,
        )
        self.thinking.add(results)
        self.outcomes.add(requests, results)
        self.requests += len(requests)
        self.computed += self.lookup.computed - before if self.lookup is not None else len(requests)
        self.truncated += count_truncated(results)
        return results

    def progress(self, n: int) -> None:
        if self._progress is not None:
            self._progress(n)

    def for_model(self, model: ExecutedModel) -> ModelExecutor:
        """Another model (a judge, a steered copy) on the same run store and cache, with its own
        lookup (its answers are stored under its own fingerprint); no progress callback."""
        lookup = None
        if self.lookup is not None:
            lookup = Lookup(self.lookup.run_store, self.lookup.cache)
            lookup.use_model(model.fingerprint)
        return ModelExecutor(model, lookup, self.chunk_size)
