"""The built-in model backends' declaration: ``--model hf:``, ``hf-vision:``, ``vllm:`` and ``openai:``.

Registered exactly as a third-party backend is (``Registry.add_model_backend``), with the capabilities other
modules ask about (``Registry.backend_of``). A leaf that imports only ``core``: each loader and check is a
``"module:attr"`` reference into ``proctor.models.builtin_backends``, imported when a backend loads or its options
are checked (and that imports transformers, vllm or httpx only then).
"""

from __future__ import annotations

from proctor.core.contributions import Registry
from proctor.core.references import lazy


def register(registry: Registry) -> None:
    identity = lazy("proctor.models.builtin_backends:identity_hf")
    registry.add_model_backend(
        "hf",
        lazy("proctor.models.builtin_backends:load_hf"),
        lazy("proctor.models.builtin_backends:check_hf"),
        identity=identity,
        hub_models=True,
        tokenizer_folder=True,
        images=lazy("proctor.models.builtin_backends:images_hf"),
    )
    registry.add_model_backend(
        "hf-vision",
        lazy("proctor.models.builtin_backends:load_hf_vision"),
        lazy("proctor.models.builtin_backends:check_hf_vision"),
        identity=identity,
        hub_models=True,
        images=lambda rest: True,
    )
    registry.add_model_backend(
        "vllm",
        lazy("proctor.models.builtin_backends:load_vllm"),
        lazy("proctor.models.builtin_backends:check_vllm"),
        tensor_parallel=True,
        tokenizer_folder=True,
        images=lambda rest: False,
    )
    registry.add_model_backend(
        "openai",
        lazy("proctor.models.builtin_backends:load_openai"),
        lazy("proctor.models.builtin_backends:check_openai"),
        server=True,
    )
