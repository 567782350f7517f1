"""The built-in model backends' declaration: ``--model hf:``, ``hf-vision:``, ``vllm:`` and ``openai:``.

Registered exactly as a third-party backend is (``Registry.add_model_backend``), with the capabilities other
modules ask about (``Registry.backend_of``). A leaf that imports only ``core``: each loader and check is a
``"module:attr"`` reference into ``proctor.models.builtin_backends``, imported when a backend loads or its options
are checked (and that imports transformers, vllm or httpx only then).
"""

from __future__ import annotations

from proctor.core.contributions import Registry
from proctor.core.references import lazy

# options that change how fast answers come or where they go, never an answer: proctor's numbers do not depend on
# the batch size (docs/performance.md). A run records them as information, not as settings (ModelBackend).
_LOCAL_INERT = ("batch_size",)
# the server's address (a restarted server on another port serves the same model: docs/openai.md keeps it out of
# the fingerprint too), the key's variable, prices (a cost estimate), pace (requests at once, prompts per request,
# timeouts, retries, back-off) and the Batch API's polling and files
_SERVER_INERT = (
    "base_url",
    "api_key_env",
    "concurrency",
    "batch",
    "timeout",
    "deadline",
    "max_retries",
    "backoff",
    "price_prompt",
    "price_completion",
    "batch_poll",
    "batch_dir",
    *_LOCAL_INERT,
    "dtype",  # a local model's options, which a served model ignores (the run warns of them)
    "device",
    "max_length",
)


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
        inert_options=_LOCAL_INERT,
    )
    registry.add_model_backend(
        "hf-vision",
        lazy("proctor.models.builtin_backends:load_hf_vision"),
        lazy("proctor.models.builtin_backends:check_hf_vision"),
        identity=identity,
        hub_models=True,
        images=lambda rest: True,
        inert_options=_LOCAL_INERT,
    )
    registry.add_model_backend(
        "vllm",
        lazy("proctor.models.builtin_backends:load_vllm"),
        lazy("proctor.models.builtin_backends:check_vllm"),
        tensor_parallel=True,
        tokenizer_folder=True,
        images=lambda rest: False,
        inert_options=_LOCAL_INERT,
    )
    registry.add_model_backend(
        "openai",
        lazy("proctor.models.builtin_backends:load_openai"),
        lazy("proctor.models.builtin_backends:check_openai"),
        server=True,
        inert_options=_SERVER_INERT,
    )
