"""Turn a ``--model`` string into a backend.

- ``smollm2`` (default): the embedded SmolLM2-135M-Instruct
- ``hf:<folder or hub id>`` or a bare folder / hub id: the Hugging Face backend (a local folder whose
  config has a ``vision_config`` loads as a vision-language model)
- ``hf-vision:<folder or hub id>``: a vision-language model (``AutoModelForImageTextToText`` + ``AutoProcessor``)
- ``vllm:<folder or hub id>``: vLLM (optional extra ``proctor[vllm]``, needs a GPU)
- ``openai:<served model name>`` with ``base_url``: an OpenAI-compatible HTTP server
- ``steer:<file.py>:<NAME>``: a steering pipeline from a Python file, on the base model given by
  the ``base`` option (default ``smollm2``; ``proctor.usecases.steered_model``)
"""

from __future__ import annotations

from typing import Any

from proctor.models.base import Model
from proctor.models.default import DEFAULT_MODEL_ALIASES, default_model_path


def load_model(spec: str = "smollm2", **options: Any) -> Model:
    backend, _, rest = spec.partition(":")
    if not rest or len(backend) == 1:  # no prefix (or a Windows drive letter)
        backend, rest = "hf", spec
    if backend == "hf":
        from proctor.models.hf import HFModel

        if rest.lower() in DEFAULT_MODEL_ALIASES:
            return HFModel(default_model_path(), name="SmolLM2-135M-Instruct", **options)
        from proctor.models.hf_vision import HFVisionModel, is_vision_folder

        if is_vision_folder(rest):
            return HFVisionModel(rest, **options)
        return HFModel(rest, **options)
    if backend == "hf-vision":
        from proctor.models.hf_vision import HFVisionModel

        return HFVisionModel(rest, **options)
    if backend == "vllm":
        from proctor.models.vllm_backend import VLLMModel

        if rest.lower() in DEFAULT_MODEL_ALIASES:
            return VLLMModel(default_model_path(), name="SmolLM2-135M-Instruct", **options)
        return VLLMModel(rest, **options)
    if backend == "openai":
        from proctor.models.openai_compat import OpenAIModel

        return OpenAIModel(rest, **options)
    if backend == "steer":
        from proctor.usecases.steered_model import load_steered

        return load_steered(rest, **options)
    from proctor.errors import ModelLoadError

    raise ModelLoadError(f"unknown model backend '{backend}' in '{spec}'; available: hf, hf-vision, vllm, openai, steer")
