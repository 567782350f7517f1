"""The built-in model backends as a plug-in: ``--model hf:``, ``hf-vision:``, ``vllm:`` and ``openai:``.

Registered exactly as a third-party backend is (``Registry.add_model_backend``), with the capabilities other
modules ask about (``Registry.backend_of``). A declaration: ``proctor.models.builtin_backends`` is imported
when a backend loads or its options are checked, and it imports transformers, vllm or httpx only then.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from proctor.core.registry import Registry

_MODULE = "proctor.models.builtin_backends"


def _lazy(name: str) -> Callable[..., Any]:
    """``proctor.models.builtin_backends.<name>``, imported on the first call."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(_MODULE), name)(*args, **kwargs)

    call.__name__ = name
    return call


def register(registry: Registry) -> None:
    identity = _lazy("identity_hf")
    registry.add_model_backend(
        "hf",
        _lazy("load_hf"),
        _lazy("check_hf"),
        identity=identity,
        hub_models=True,
        tokenizer_folder=True,
        images=_lazy("images_hf"),
    )
    registry.add_model_backend(
        "hf-vision",
        _lazy("load_hf_vision"),
        _lazy("check_hf_vision"),
        identity=identity,
        hub_models=True,
        images=lambda rest: True,
    )
    registry.add_model_backend(
        "vllm",
        _lazy("load_vllm"),
        _lazy("check_vllm"),
        tensor_parallel=True,
        tokenizer_folder=True,
        images=lambda rest: False,
    )
    registry.add_model_backend("openai", _lazy("load_openai"), _lazy("check_openai"), server=True)
