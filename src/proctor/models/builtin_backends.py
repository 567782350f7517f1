"""The built-in backends' loaders and option checks, registered by ``proctor.models.declaration`` as any
plug-in registers its own (``Registry.add_model_backend``).

Importing this module imports no backend: each function imports its own (transformers, vllm, httpx) when called.
A check returns the option names its backend takes (None: not checked) and raises ``ModelLoadError`` for a
model or option that cannot load; the checks every backend shares are ``models.registry.check_model_options``'s.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from proctor.core.errors import ModelLoadError
from proctor.core.redact import mask_url_credentials
from proctor.models.backend_options import check_bounds, check_option_types, named_parameters
from proctor.models.base import Model
from proctor.models.default import (
    DEFAULT_MODEL_ALIASES,
    converted_default_model,
    default_model_folder,
    default_model_path,
)

log = logging.getLogger(__name__)

# Options the CLI sends every backend; the openai backend accepts and ignores them.
_LOCAL_OPTIONS = ("dtype", "device", "batch_size", "max_length")


# ------------------------------------------------------------------ hf, hf-vision
def load_hf(rest: str, **options: Any) -> Model:
    """``hf:<folder or hub id>`` (or no prefix): a local folder whose config has a ``vision_config`` loads as a
    vision-language model; ``smollm2`` is the embedded default."""
    from proctor.models.hf.model import HFModel

    if rest.lower() in DEFAULT_MODEL_ALIASES:
        return HFModel(default_model_path(), name="SmolLM2-135M-Instruct", **options)
    from proctor.models.hf.vision import HFVisionModel, is_vision_folder

    if is_vision_folder(rest):
        return HFVisionModel(rest, **options)
    return HFModel(rest, **options)


def load_hf_vision(rest: str, **options: Any) -> Model:
    from proctor.models.hf.vision import HFVisionModel

    return HFVisionModel(rest, **options)


def identity_hf(rest: str, options: dict[str, Any]) -> dict[str, object] | None:
    """The fingerprint's ``path`` and ``content`` of a local folder (the embedded default once converted), as
    ``HFModel`` and ``HFVisionModel`` will record them; the default not yet converted and a hub id: the
    ``path`` alone (the folder it will be converted to; the id), so another model is known before loading."""
    from proctor.models.hf.loading import weights_digest

    if rest.lower() in DEFAULT_MODEL_ALIASES:
        folder = converted_default_model()
        if folder is None:
            return {"path": str(default_model_folder())}
        return {"path": str(folder), "content": weights_digest(folder)}
    return {"path": rest, "content": weights_digest(Path(rest))} if Path(rest).is_dir() else {"path": rest}


def images_hf(rest: str) -> bool | None:
    """The embedded default and a local folder whose config names no vision tower take no images; a hub id:
    not known before it loads."""
    from proctor.models.hf.vision import is_vision_folder

    if rest.lower() in DEFAULT_MODEL_ALIASES:
        return False
    if (Path(rest).expanduser() / "config.json").is_file():
        return is_vision_folder(Path(rest).expanduser())
    return None


def check_hf(rest: str, options: dict[str, Any]) -> set[str]:
    return _check_hf(rest, options, vision=False)


def check_hf_vision(rest: str, options: dict[str, Any]) -> set[str]:
    return _check_hf(rest, options, vision=True)


def _check_hf(rest: str, options: dict[str, Any], vision: bool) -> set[str]:
    from proctor.models.hf.loading import DECODINGS, DTYPES, check_choice
    from proctor.models.hf.model import HFModel
    from proctor.models.hf.vision import HFVisionModel, is_vision_folder

    vision = vision or (rest.lower() not in DEFAULT_MODEL_ALIASES and is_vision_folder(rest))
    typed = HFVisionModel if vision else HFModel
    path = Path(rest).expanduser()
    if rest.lower() not in DEFAULT_MODEL_ALIASES:
        if path.is_dir() and not (path / "config.json").is_file():
            raise ModelLoadError(
                f"--model '{rest}': the folder holds no config.json, so it is not a Hugging Face model folder"
            )
        if not path.exists() and (rest.startswith((".", "/", "~")) or rest.count("/") > 1):
            raise ModelLoadError(f"--model '{rest}': no such model folder")
    if options.get("dtype", "float32") not in DTYPES:
        raise ModelLoadError(f"--dtype '{options['dtype']}' is not one of {', '.join(DTYPES)}")
    from proctor.models.hf.forward_plan import LAYOUTS
    from proctor.models.hf.tree_attention import ATTENTIONS

    check_choice("forward_layout", options.get("forward_layout"), LAYOUTS)
    check_choice("attention", options.get("attention"), ATTENTIONS)
    check_choice("decode", options.get("decode"), DECODINGS)
    from proctor.models.hf.vocab_head import HEADS

    check_choice("vocab_head", options.get("vocab_head"), HEADS)
    from proctor.models.hf.sharding import check as check_sharding

    check_sharding(options.get("device_map"), options.get("max_memory"))
    check_option_types(typed, options)
    check_bounds(options, {"pack_tokens": (1.0, True)})  # a row's token budget: below 1 every request is cut apart
    return named_parameters(typed)


# ------------------------------------------------------------------ vllm
def load_vllm(rest: str, **options: Any) -> Model:
    """``vllm:<folder or hub id>``: vLLM (optional extra ``proctor[vllm]``, needs a GPU)."""
    from proctor.models.vllm.backend import VLLMModel

    if rest.lower() in DEFAULT_MODEL_ALIASES:
        return VLLMModel(default_model_path(), name="SmolLM2-135M-Instruct", **options)
    return VLLMModel(rest, **options)


def check_vllm(rest: str, options: dict[str, Any]) -> set[str] | None:
    """Its own options, and vllm's engine arguments (known only where vllm is installed)."""
    from proctor.models.vllm.backend import VLLMModel

    known = named_parameters(VLLMModel)
    try:
        import dataclasses

        from vllm import EngineArgs

        return known | {f.name for f in dataclasses.fields(EngineArgs)}
    except Exception:  # not installed (loading will say so), or another EngineArgs shape
        return None


# ------------------------------------------------------------------ openai
def load_openai(rest: str, **options: Any) -> Model:
    """``openai:<served model name>`` with ``base_url``: an OpenAI-compatible HTTP server."""
    from proctor.models.openai.compat import OpenAIModel

    model = OpenAIModel(rest, **options)
    return model.batched() if model.batch_api else model  # batch_api=true: generation through the Batch API


def check_openai(rest: str, options: dict[str, Any]) -> set[str]:
    from proctor.models.openai.compat import OpenAIModel

    if not options.get("base_url"):
        raise ModelLoadError(f"--model 'openai:{rest}' needs --base-url (for example http://127.0.0.1:8000/v1)")
    url = str(options.get("base_url"))
    if not url.startswith(("http://", "https://")):
        raise ModelLoadError(
            f"--base-url '{mask_url_credentials(url)}' is not an http:// or https:// address "
            "(for example http://127.0.0.1:8000/v1)"
        )
    check_option_types(OpenAIModel, options)
    check_bounds(options, _OPENAI_BOUNDS)
    key = options.get("api_key_env")
    if key and key not in os.environ:  # named on purpose, yet missing: say so now
        log.warning("--model-arg api_key_env=%s: %s is not set, so requests go without a key", key, key)
    return named_parameters(OpenAIModel) | set(_LOCAL_OPTIONS)


# name -> (least value, whether it is allowed): a timeout of 0 or below makes the HTTP client raise on each call.
_OPENAI_BOUNDS: dict[str, tuple[float, bool]] = {
    "timeout": (0, False),
    "deadline": (0, False),
    "max_retries": (0, True),
    "backoff": (0, True),
    "concurrency": (1, True),
    "batch": (1, True),
    "top_logprobs": (0, True),
    "price_prompt": (0, True),
    "price_completion": (0, True),
    "batch_poll": (0, True),
}
