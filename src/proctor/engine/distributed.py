"""Data-parallel evaluation on Ray: N model replicas behind one ``Model``.

``DistributedModel`` starts (or joins) a Ray cluster and creates one actor per replica; each
actor loads its model exactly once and answers whole engine chunks. The engine
(``runs/executor.execute``) hands it every chunk of a request type at once through ``map_chunks``;
chunk contents are fixed by the engine, so a chunk's answers are the ones a single process would
compute for it, whichever replica runs it and in whatever order chunks finish. Results come back
to the driver, which commits each chunk to the one run store as it arrives.

A replica that dies (killed process, lost node) is dropped: its chunk in flight and its queued
chunks are reassigned to the survivors; a chunk is committed once, the first time it returns.

Here: ``ClusterOptions`` and the driver's side (``DistributedModel``: starting the replicas, handing out
chunks, losing replicas). A replica's own code is ``ray_replica.py``; starting or joining the Ray cluster
is ``ray_cluster.py``.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from proctor.core.chat_reply import ChatReplyEnd
from proctor.core.errors import ModelLoadError, ProctorError
from proctor.core.model_requests import (
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    Request,
    RollingLoglikelihoodRequest,
    RollingLoglikelihoodResult,
)
from proctor.core.registrations import command_plugin_files
from proctor.engine.ray_cluster import connect, require_ray
from proctor.engine.ray_replica import ModelWorker, WorkerInfo
from proctor.engine.sharding import assign, chunk_key, estimated_tokens
from proctor.models.base import Model, Progress

log = logging.getLogger(__name__)

IN_FLIGHT = 2  # chunks queued on a replica at once: the next one is ready while the driver commits


@dataclass(frozen=True)
class ClusterOptions:
    """Where and how replicas run.

    ``address``: None starts a local Ray cluster on 127.0.0.1; ``auto`` or ``host:port`` joins a
    running one (``ray start --head``). ``nodes``: node IP addresses; replicas are placed on them
    round robin. ``resources``: custom Ray resources each replica needs (``ray start --resources``).
    """

    workers: int = 1
    address: str | None = None
    cpus_per_worker: float = 1.0
    gpus_per_worker: float = 0.0
    resources: Mapping[str, float] = field(default_factory=dict)
    nodes: tuple[str, ...] = ()

    def actor_options(self, index: int) -> dict[str, object]:
        resources = dict(self.resources)
        if self.nodes:
            resources[f"node:{self.nodes[index % len(self.nodes)]}"] = 0.001
        options: dict[str, object] = {
            "num_cpus": self.cpus_per_worker,
            "num_gpus": self.gpus_per_worker,
            "max_restarts": 0,
        }
        if resources:
            options["resources"] = resources
        return options


def replica_options(spec: str, options: Mapping[str, object] | None, cluster: ClusterOptions) -> dict[str, object]:
    """Model options for one replica: the GPUs of a vLLM replica are its tensor-parallel size."""
    from proctor.core.registry import backend_of

    out = dict(options or {})
    backend = backend_of(spec)
    if (
        backend is not None
        and backend.tensor_parallel
        and cluster.gpus_per_worker >= 1
        and "tensor_parallel_size" not in out
    ):
        out["tensor_parallel_size"] = int(cluster.gpus_per_worker)
    return out


class DistributedModel(Model):
    """N replicas of one model on a Ray cluster, seen by the engine as one model."""

    def __init__(
        self, spec: str, model_options: Mapping[str, object] | None = None, cluster: ClusterOptions | None = None
    ) -> None:
        ray = require_ray()
        cluster = cluster or ClusterOptions()
        if cluster.workers < 1:
            raise ProctorError(f"--workers takes a positive number, got {cluster.workers}")
        self._ray = ray
        self.cluster = cluster
        self.spec = spec
        self._owns_ray = False
        self._restore: Callable[[], None] | None = None  # undoes ray_cluster.connect's loopback switch
        self._actors: list[Any] = []  # Ray actor handles (untyped in ray)
        self._alive: list[int] = []
        self.lost: list[int] = []  # replicas dropped during the run
        self.chunks_done: dict[int, int] = {}  # replica -> chunks it answered (first answers only)
        if cluster.address is None:
            self._prepare_default_model(spec)
        if not ray.is_initialized():
            self._init(cluster)
            self._owns_ray = True
        try:
            self._start(spec, replica_options(spec, model_options, cluster))
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ cluster and replicas
    @staticmethod
    def _prepare_default_model(spec: str) -> None:
        """Convert the embedded default model once here, not concurrently in every local replica."""
        from proctor.core.registry import DEFAULT_BACKEND, split_model_spec
        from proctor.models.default import DEFAULT_MODEL_ALIASES, default_model_path

        backend, rest = split_model_spec(spec)
        if rest.lower() in DEFAULT_MODEL_ALIASES and backend == DEFAULT_BACKEND:
            default_model_path()

    def _init(self, cluster: ClusterOptions) -> None:
        self._restore = connect(self._ray, cluster.address, cluster.workers, cluster.cpus_per_worker)

    def _start(self, spec: str, options: dict[str, object]) -> None:
        ray = self._ray
        remote = ray.remote(ModelWorker)
        threads = int(self.cluster.cpus_per_worker) if self.cluster.cpus_per_worker >= 1 else None
        plugins = command_plugin_files()  # a replica's process has not loaded them
        self._actors = [
            remote.options(**self.cluster.actor_options(i)).remote(spec, options, threads, os.getcwd(), plugins)
            for i in range(self.cluster.workers)
        ]
        pending = [a.describe.remote() for a in self._actors]
        waited = 0
        while True:  # replicas wait for free resources; say so instead of hanging silently
            ready, _ = ray.wait(pending, num_returns=len(pending), timeout=60)
            if len(ready) == len(pending):
                break
            waited += 60
            log.warning(
                "%d of %d replicas ready after %d s: loading their models, or waiting for resources (each needs %s). "
                "Cluster: %s",
                len(ready),
                len(pending),
                waited,
                self.cluster.actor_options(0),
                ray.cluster_resources(),
            )
        try:
            self.workers: list[WorkerInfo] = ray.get(pending)
        except ray.exceptions.RayError as exc:
            raise ModelLoadError(f"a replica could not start: {exc}") from None
        errors = [w["error"] for w in self.workers if w["error"]]
        if errors:
            raise ModelLoadError(f"a replica could not load '{spec}': {errors[0]}")
        prints = {repr(w["fingerprint"]) for w in self.workers}
        if len(prints) > 1:
            raise ModelLoadError(
                "replicas loaded different models (fingerprints differ; check that every node has the same "
                f"model files and package versions): {sorted(prints)}"
            )
        self._alive = list(range(len(self._actors)))
        first = self.workers[0]
        self.name = first["name"]
        self._fingerprint = first["fingerprint"]
        self._has_chat_template = first["has_chat_template"]
        self._chat_reply_end = first.get("chat_reply_end")
        self._special_tokens = tuple(first.get("special_tokens") or ())
        self.chunk_requests = first["chunk_requests"]
        self.large_chunks = first.get("large_chunks", False)
        self.chunk_sizes = first.get("chunk_sizes")
        self.batch_size = first["batch_size"]
        self.described_info = first["model_info"]  # results.json's model_info, as one process reports it
        log.info("%d replicas of %s on %s", len(self.workers), self.name, sorted({w["node"] for w in self.workers}))

    @property
    def worker_pids(self) -> list[int]:
        return [w["pid"] for w in self.workers]

    def _lose(self, replica: int, exc: BaseException) -> None:
        if replica in self._alive:
            self._alive.remove(replica)
            self.lost.append(replica)
            log.warning(
                "replica %d (pid %s on %s) was lost: %s; reassigning its work",
                replica,
                self.workers[replica]["pid"],
                self.workers[replica]["node"],
                str(exc).splitlines()[0],
            )
        if not self._alive:
            raise ProctorError(
                f"all {len(self._actors)} replicas were lost; the run store keeps every "
                "finished chunk: run again to continue"
            )

    def _task_error(self, exc: BaseException, replica: int) -> BaseException:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, ProctorError):
            return cause
        return ProctorError(
            f"replica {replica} failed: {cause!r}" if cause is not None else f"replica {replica} failed: {exc}"
        )

    def _on_any(self, method: str, *args: Any) -> Any:
        """One call on the first live replica, moving on to the next if it dies."""
        ray = self._ray
        while True:
            replica = self._alive[0]
            try:
                return ray.get(getattr(self._actors[replica], method).remote(*args))
            except ray.exceptions.RayTaskError as exc:
                raise self._task_error(exc, replica) from None
            except ray.exceptions.RayError as exc:
                self._lose(replica, exc)

    # ------------------------------------------------------------------ the engine's entry point
    def map_chunks(
        self, request_type: str, chunks: Sequence[Sequence[Request]], done: Callable[[int, list[Any]], None]
    ) -> None:
        """Run every chunk on some replica; ``done(index, results)`` once per chunk, here."""
        if not chunks:
            return
        ray = self._ray
        costs = [sum(estimated_tokens(r) for r in chunk) for chunk in chunks]
        keys = [chunk_key(chunk) for chunk in chunks]
        queues = assign(range(len(chunks)), costs, keys, self._alive)
        flying: dict[object, tuple[int, int]] = {}  # object ref -> (replica, chunk)
        finished: set[int] = set()

        def busy(replica: int) -> int:
            return sum(1 for r, _ in flying.values() if r == replica)

        def feed(replica: int) -> None:
            if replica not in self._alive:  # a lost replica's other chunk may still return, with answers
                return
            if not queues.get(replica) and not busy(replica):  # idle: take the busiest replica's last chunk
                donor = max(self._alive, key=lambda r: (len(queues.get(r, ())), -r))
                if donor != replica and len(queues.get(donor, ())) > 0:
                    queues[replica].append(queues[donor].pop())
            while queues.get(replica) and busy(replica) < IN_FLIGHT:
                k = queues[replica].popleft()
                flying[self._actors[replica].call.remote(request_type, list(chunks[k]))] = (replica, k)

        for replica in list(self._alive):
            feed(replica)
        while len(finished) < len(chunks):
            if not flying:  # cannot happen while a replica lives; guard against a silent hang
                raise ProctorError("no replica is working and chunks remain")
            [ref], _ = ray.wait(list(flying), num_returns=1)
            replica, k = flying.pop(ref)
            try:
                out = ray.get(ref)
            except ray.exceptions.RayTaskError as exc:
                raise self._task_error(exc, replica) from None
            except ray.exceptions.RayError as exc:
                self._lose(replica, exc)
                orphans = [j for j in [k, *queues.pop(replica, ())] if j not in finished]
                loads = {r: sum(costs[j] for j in queues[r]) for r in self._alive}
                for r, extra in assign(orphans, costs, keys, self._alive, loads).items():
                    queues[r].extend(extra)
                for r in list(self._alive):
                    feed(r)
                continue
            if k not in finished:
                finished.add(k)
                self.chunks_done[replica] = self.chunks_done.get(replica, 0) + 1
                done(k, out)
            feed(replica)

    # ------------------------------------------------------------------ Model
    @property
    def fingerprint(self) -> dict[str, Any]:
        return self._fingerprint  # the replicas' own: runs and caches are shared with single-process runs

    @property
    def has_chat_template(self) -> bool:
        return self._has_chat_template

    def chat_reply_end(self) -> ChatReplyEnd | None:
        return self._chat_reply_end

    def special_tokens(self) -> tuple[str, ...]:
        return self._special_tokens

    def apply_chat_template(self, messages: Sequence[dict[str, Any]]) -> str:
        text: str = self._on_any("apply_chat_template", list(messages))
        return text

    def _whole(self, request_type: str, requests: Sequence[Request], progress: Progress | None) -> list[Any]:
        # One call, one replica: exactly the call a single process would make (custom task code).
        out: list[Any] = self._on_any("call", request_type, list(requests))
        if progress:
            progress(len(out))
        return out

    def loglikelihood(
        self, requests: Sequence[LoglikelihoodRequest], progress: Progress | None = None
    ) -> list[LoglikelihoodResult]:
        return self._whole("loglikelihood", requests, progress)

    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[GenerateResult]:
        return self._whole("generate", requests, progress)

    def rolling_loglikelihood(
        self, requests: Sequence[RollingLoglikelihoodRequest], progress: Progress | None = None
    ) -> list[RollingLoglikelihoodResult]:
        return self._whole("rolling_loglikelihood", requests, progress)

    def close(self) -> None:
        ray = self._ray
        for actor in self._actors:
            with contextlib.suppress(Exception):  # already dead
                ray.kill(actor)
        self._actors = []
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
            self._owns_ray = False
        if self._restore is not None and not ray.is_initialized():
            self._restore()
            self._restore = None
