"""The executor a use case's requests go through, handed to it explicitly as ``model_or_pipeline``.

``proctor run file.py`` / ``run_use_cases`` and each ``Benchmark`` trial (all through ``evaluate``) build a
``ModelExecutor`` on their run store (``proctor.runs.executor``) and pass it, wrapped here, to the
use case's ``generate`` in place of the model; ``batch_retry_generate`` and
``continuation_logprobs`` send their requests through it. Given a plain proctor ``Model`` they
wrap it in an executor without a store, which simply calls the model.

Identical requests of one call are computed once. Progress goes to the runner's hook as
``(name, done, total)``: ``total`` grows with every call (a retry round adds its requests),
``done`` counts requests answered (from the store or the model). While the use case evaluates,
``judge.judges_on`` gives its LLM judge metrics the run store too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence, cast

from proctor.runs.executor import ModelExecutor, dedupe

if TYPE_CHECKING:
    from proctor.models.base import Model

ProgressHook = Callable[[str, int, int], None]  # use case name, requests answered, requests asked


@dataclass
class Tally:
    """Counts shared by a use case's executor and those it makes for other models (steered copies)."""

    total: int = 0  # requests asked (each call's distinct requests)
    done: int = 0  # requests answered, from the store or the model
    model_calls: int = 0  # requests the model computed (not answered by the store or the cache)


class UseCaseExecutor:
    """``kinds/capabilities.Executor`` for Python use cases, around a ``ModelExecutor``."""

    def __init__(
        self,
        executor: ModelExecutor,
        progress: ProgressHook | None = None,
        name: str = "use case",  # the progress label
        tally: Tally | None = None,
    ) -> None:
        self.executor = executor
        self.hook = progress
        self.name = name
        self.tally = tally if tally is not None else Tally()

    @property
    def model(self) -> Model:
        # the engine binds a use case's executor to the run's model (a Model); the executor's own type asks less
        return cast("Model", self.executor.model)

    def __getattr__(self, name: str) -> Any:
        # a use case written for AISteer360 may read its model's attributes (tokenizer, device, ...)
        if name in ("executor", "hook", "name", "tally"):
            raise AttributeError(name)
        return getattr(self.executor.model, name)

    @property
    def stored(self) -> bool:
        return self.executor.stored

    def start(self) -> UseCaseExecutor:
        """Tell the progress hook the use case started (nothing asked yet)."""
        self._report()
        return self

    def run(
        self, request_type: str, requests: Sequence[Any], progress: Callable[[int], None] | None = None
    ) -> list[Any]:
        if not requests:
            return []
        unique, mapping = dedupe(requests)
        self.tally.total += len(unique)
        self._report()
        before = self.executor.computed

        def on_progress(n: int) -> None:
            self.progress(n)
            if progress:
                progress(n)

        results = self.executor.run(request_type, unique, on_progress)
        self.tally.model_calls += self.executor.computed - before
        return [results[k] for k in mapping]

    def progress(self, n: int) -> None:
        self.tally.done += n
        self._report()

    def for_model(self, model: Model) -> UseCaseExecutor:
        return UseCaseExecutor(self.executor.for_model(model), self.hook, self.name, self.tally)

    def _report(self) -> None:
        if self.hook:
            self.hook(self.name, self.tally.done, self.tally.total)


def as_executor(target: object) -> UseCaseExecutor | None:
    """The executor for a use case target: itself, a ``ModelExecutor`` wrapped, a proctor ``Model``
    without a store; None for a steering pipeline or a transformers model (they generate directly)."""
    from proctor.models.base import Model

    if isinstance(target, UseCaseExecutor):
        return target
    if isinstance(target, ModelExecutor):
        return UseCaseExecutor(target)
    if isinstance(target, Model):
        return UseCaseExecutor(ModelExecutor(target))
    return None
