"""Turn a ``--model`` string into a backend.

- ``smollm2`` (default): the embedded SmolLM2-135M-Instruct
- ``hf:<folder or hub id>`` or a bare folder / hub id: the Hugging Face backend (a local folder whose
  config has a ``vision_config`` loads as a vision-language model)
- ``hf-vision:<folder or hub id>``: a vision-language model (``AutoModelForImageTextToText`` + ``AutoProcessor``)
- ``vllm:<folder or hub id>``: vLLM (optional extra ``proctor[vllm]``, needs a GPU)
- ``openai:<served model name>`` with ``base_url``: an OpenAI-compatible HTTP server
- ``<prefix>:<rest>``: a backend a plug-in registered (``Registry.add_model_backend``), e.g. the
  AISteer360 dialect's ``steer:<file.py>:<NAME>`` (a steering pipeline on a base model)
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

from proctor.core.errors import ModelLoadError
from proctor.core.redact import mask_url_credentials
from proctor.models.base import Model
from proctor.models.default import DEFAULT_MODEL_ALIASES, default_model_path


BACKENDS = ("hf", "hf-vision", "vllm", "openai")  # built in; plug-ins add more (core.registry)
_DEVICE = re.compile(r"^(cpu|auto|mps|cuda(:\d+)?)$")
# Options the CLI sends every backend; the openai backend accepts and ignores them.
_LOCAL_OPTIONS = ("dtype", "device", "batch_size", "max_length")


def _split(spec: str) -> tuple[str, str]:
    backend, _, rest = spec.partition(":")
    if not rest or len(backend) == 1:  # no prefix (or a Windows drive letter)
        backend, rest = "hf", spec
    return backend, rest


def _backends() -> list[str]:
    from proctor.core.registry import registry

    return list(BACKENDS) + sorted(p for p in registry().model_backends if p not in BACKENDS)


def named_parameters(cls: Any) -> set[str]:
    """The keyword options a backend class takes (for checking ``--model-arg`` names)."""
    params = inspect.signature(cls.__init__).parameters
    return {n for n, p in params.items() if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}


def check_model_source(spec: str, options: dict[str, Any]) -> None:
    """A Hugging Face model named by hub id: in the local cache, or on a hub that answers (asked once,
    without the hub client's retries), so a typo or no network fails now with one line. The last check
    before loading: it may take a request."""
    backend, rest = _split(spec)
    if backend not in ("hf", "hf-vision") or rest.lower() in DEFAULT_MODEL_ALIASES or Path(rest).expanduser().exists():
        return
    from proctor.data.hub import model_problem

    problem = model_problem(rest, options.get("revision"))
    if problem is not None:
        raise ModelLoadError(f"--model '{rest}': {problem}")


def check_model_options(spec: str, options: dict[str, Any]) -> None:
    """Refuse a model option the backend would ignore or trip over, before anything loads.

    Each message names the option as given on the command line (``--dtype``, ``--model-arg KEY``).
    """
    backend, rest = _split(spec)
    typed = None  # the backend class whose declared option types are checked
    if backend not in _backends():
        raise ModelLoadError(f"--model '{spec}': unknown backend '{backend}'; available: {', '.join(_backends())}")
    if backend in ("hf", "hf-vision"):
        from proctor.models.hf import _DTYPES, HFModel
        from proctor.models.hf_vision import HFVisionModel, is_vision_folder

        vision = backend == "hf-vision" or (rest.lower() not in DEFAULT_MODEL_ALIASES and is_vision_folder(rest))
        typed = HFVisionModel if vision else HFModel
        known: set[str] | None = named_parameters(typed)  # None: any option (not checked)
        path = Path(rest).expanduser()
        if rest.lower() not in DEFAULT_MODEL_ALIASES:
            if path.is_dir() and not (path / "config.json").is_file():
                raise ModelLoadError(f"--model '{rest}': the folder holds no config.json, so it is not a Hugging Face model folder")
            if not path.exists() and (rest.startswith((".", "/", "~")) or rest.count("/") > 1):
                raise ModelLoadError(f"--model '{rest}': no such model folder")
        if options.get("dtype", "float32") not in _DTYPES:
            raise ModelLoadError(f"--dtype '{options['dtype']}' is not one of {', '.join(_DTYPES)}")
        from proctor.models.forward_plan import LAYOUTS
        from proctor.models.hf import DECODINGS, _check_choice
        from proctor.models.tree_attention import ATTENTIONS

        _check_choice("forward_layout", options.get("forward_layout"), LAYOUTS)
        _check_choice("attention", options.get("attention"), ATTENTIONS)
        _check_choice("decode", options.get("decode"), DECODINGS)
        from proctor.models.sharding import check as check_sharding

        check_sharding(options.get("device_map"), options.get("max_memory"))
    elif backend == "openai":
        from proctor.models.openai_compat import OpenAIModel

        typed = OpenAIModel
        known = named_parameters(OpenAIModel) | set(_LOCAL_OPTIONS)
        if not options.get("base_url"):
            raise ModelLoadError(f"--model 'openai:{rest}' needs --base-url (for example http://127.0.0.1:8000/v1)")
    elif backend not in BACKENDS:  # a plug-in's backend: its own check, when it registered one
        from proctor.core.registry import registry

        check = registry().model_checks.get(backend)
        known = check(rest, options) if check is not None else None
    else:  # vllm: its own options, and vllm's engine arguments (known only where vllm is installed)
        from proctor.models.vllm_backend import VLLMModel

        known = named_parameters(VLLMModel)
        try:
            import dataclasses

            from vllm import EngineArgs  # type: ignore[import-not-found]

            known |= {f.name for f in dataclasses.fields(EngineArgs)}
        except Exception:  # not installed (loading will say so), or another EngineArgs shape
            known = None
    if backend == "openai":
        url = str(options.get("base_url"))
        if not url.startswith(("http://", "https://")):
            raise ModelLoadError(f"--base-url '{mask_url_credentials(url)}' is not an http:// or https:// address "
                                 "(for example http://127.0.0.1:8000/v1)")
    if typed is not None:
        _check_option_types(typed, options)
    if known is not None:
        unknown = sorted(set(options) - known)
        if unknown:
            raise ModelLoadError(
                f"--model-arg '{unknown[0]}' is not an option of the {backend} backend (it would be ignored or fail "
                f"after loading); its options are: {', '.join(sorted(known - {'model', 'name'}))}"
            )
    device = options.get("device")
    if device is not None and backend != "openai" and not _DEVICE.match(str(device)):
        raise ModelLoadError(f"--device '{device}' is not one of cpu, cuda, cuda:N, mps, auto")
    max_length = options.get("max_length")
    if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1):
        raise ModelLoadError(f"--max-length must be a positive number of tokens, got {max_length!r}")
    batch_size = options.get("batch_size")
    if batch_size is not None and batch_size != "auto" and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
        raise ModelLoadError(f"--batch-size must be a positive integer or 'auto', got {batch_size!r}")


_TYPES = {"bool": (bool,), "int": (int,), "float": (int, float), "str": (str,)}


def _check_option_types(cls: Any, options: dict[str, Any]) -> None:
    """A ``--model-arg`` value of the wrong type (``batch_invariant=maybe``) would be read as something else: refuse it.
    Only options whose declared type is plainly bool, int, float or str (optionally ``| None``) are checked."""
    params = inspect.signature(cls.__init__).parameters
    for name, value in options.items():
        if name not in params or value is None:
            continue
        declared = str(params[name].annotation).replace(" | None", "").replace("Optional[", "").rstrip("]")
        kinds = _TYPES.get(declared)
        if kinds is None:
            continue
        wrong = not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)
        if wrong:
            wanted = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "a text"}[declared]
            raise ModelLoadError(f"--model-arg {name}={value!r}: {name} takes {wanted}, got {type(value).__name__}")


def load_model(spec: str = "smollm2", **options: Any) -> Model:
    backend, rest = _split(spec)
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

        model = OpenAIModel(rest, **options)
        return model.batched() if model.batch_api else model  # batch_api=true: generation through the Batch API
    from proctor.core.registry import registry

    loader = registry().model_backends.get(backend)
    if loader is not None:
        return loader(rest, **options)
    raise ModelLoadError(f"unknown model backend '{backend}' in '{spec}'; available: {', '.join(_backends())}")
