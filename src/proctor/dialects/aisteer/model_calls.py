"""The one place where the use-case dialect meets the engine.

Use cases build their own prompts and call the model from inside ``generate``; those calls reach the
engine here: ``store_session`` puts a run folder's store (and chunk size) in force for the calls made
inside it, ``generate`` / ``loglikelihood`` send requests through the engine (deduplicated, looked up
in the store, the rest computed chunk by chunk and committed), and ``store_model`` says when a
steering pipeline's requests should go through the engine as a ``SteeredModel``. Nothing else in
``dialects/aisteer`` imports ``proctor.engine``, so handing handlers an executor changes this file only.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

from proctor.engine.calls import current_session, engine_session, run_generate, run_loglikelihood


@contextlib.contextmanager
def store_session(lookup: Any, chunk_size: int | None = None, name: str = "usecase") -> Iterator[Any]:
    """Model calls made inside the block go through ``lookup`` (a run store, maybe backed by the cache).

    Yields the session: ``total`` (unique requests asked) and ``model_calls`` (those computed)."""
    with engine_session(lookup, chunk_size, None, name) as session:
        yield session


def generate(model: Any, requests: Sequence[Any]) -> list:
    return run_generate(model, requests)


def loglikelihood(model: Any, requests: Sequence[Any]) -> list:
    return run_loglikelihood(model, requests)


def store_model(pipeline: Any, runtime: Sequence[Any] | None) -> Any:
    """The pipeline as a proctor model when its requests should go through the engine: inside a
    ``store_session`` with a run store (a use case run, a ``Benchmark`` with ``save_dir``), on an
    ``HFModel`` base, with no per-example runtime arguments (which a ``Model`` cannot take).
    Otherwise None, and the pipeline generates directly."""
    from proctor.models.hf import HFModel
    from proctor.models.steering.steered_model import SteeredModel

    session = current_session()
    if session is None or session.lookup is None or not isinstance(pipeline.base, HFModel) or not pipeline.steered:
        return None
    if runtime is not None and any(runtime):
        return None
    return SteeredModel(pipeline)
