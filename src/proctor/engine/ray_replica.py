"""One replica of a data-parallel run: the Ray actor (``ModelWorker``) that loads its model once, in the
driver's working directory and with its thread count, then answers whole engine chunks; and what it reports
when it has started (``WorkerInfo``).

Kept apart from ``distributed.py`` because this code runs in the replicas' processes, not the driver's:
Ray imports this module there, and it holds nothing of the driver's scheduling.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence, TypedDict

from proctor.core.chat_reply import ChatReplyEnd
from proctor.core.model_requests import Request
from proctor.models.base import Model
from proctor.models.info import model_info


class _WorkerStart(TypedDict):
    """What every replica reports when it has started (``ModelWorker.describe``)."""

    pid: int
    node: str  # its node's IP address
    node_id: str
    error: str | None  # the model did not load: why


class WorkerInfo(_WorkerStart, total=False):
    """A replica's report; the rest is set when its model loaded."""

    name: str
    fingerprint: dict[str, Any]
    has_chat_template: bool
    chat_reply_end: ChatReplyEnd | None
    special_tokens: tuple[str, ...]
    chunk_requests: int | None
    large_chunks: bool
    chunk_sizes: dict[str, int] | None  # the backend's own chunk sizes, None where it has none
    batch_size: int | str | None  # the backend's batch size (a number or "auto"), None where it has none
    model_info: dict[str, Any]


class ModelWorker:
    """One replica (a Ray actor): loads its model once, then answers whole chunks."""

    def __init__(
        self,
        spec: str,
        options: Mapping[str, object],
        threads: int | None,
        cwd: str | None,
        plugins: Sequence[str] = (),
    ) -> None:
        self.error: str | None = None
        self.model: Model | None = None
        if cwd and os.path.isdir(cwd):  # relative model paths mean what they mean for the driver
            os.chdir(cwd)
        try:
            if threads:
                try:
                    import torch

                    torch.set_num_threads(threads)
                except ImportError:
                    pass
            from proctor.engine.plugin_loading import load_plugin_files
            from proctor.models.registry import load_model

            load_plugin_files(plugins)  # the command's --plugin files: a backend one registers loads here too
            self.model = load_model(spec, **dict(options))
        except Exception as exc:  # reported by describe(): a clean message, not a dead actor
            self.error = f"{type(exc).__name__}: {exc}"

    def describe(self) -> WorkerInfo:
        import ray

        info: WorkerInfo = {
            "pid": os.getpid(),
            "node": ray.util.get_node_ip_address(),
            "node_id": ray.get_runtime_context().get_node_id(),  # nodes on one host share an address
            "error": self.error,
        }
        if self.model is not None:
            m = self.model
            info["name"] = m.name
            info["fingerprint"] = m.fingerprint
            info["has_chat_template"] = m.has_chat_template
            info["chat_reply_end"] = m.chat_reply_end()
            info["special_tokens"] = m.special_tokens()
            info["chunk_requests"] = getattr(m, "chunk_requests", None)
            info["large_chunks"] = getattr(m, "large_chunks", False) is True
            info["chunk_sizes"] = getattr(m, "chunk_sizes", None)
            info["batch_size"] = getattr(m, "batch_size", None)
            info["model_info"] = model_info(m)
        return info

    def call(self, request_type: str, requests: Sequence[Request]) -> list[Any]:
        return list(getattr(self.model, request_type)(list(requests)))

    def apply_chat_template(self, messages: Sequence[dict[str, Any]]) -> str:
        assert self.model is not None  # the driver drops a replica whose model did not load (describe's error)
        return self.model.apply_chat_template(messages)

    def close(self) -> None:
        if self.model is not None:
            self.model.close()
