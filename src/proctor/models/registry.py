"""Turn a ``--model`` string into a backend.

- ``smollm2`` (default): the embedded SmolLM2-135M-Instruct
- ``hf:<folder or hub id>`` or a bare folder / hub id: the Hugging Face backend (a local folder whose
  config has a ``vision_config`` loads as a vision-language model)
- ``hf-vision:<folder or hub id>``: a vision-language model (``AutoModelForImageTextToText`` + ``AutoProcessor``)
- ``vllm:<folder or hub id>``: vLLM (optional extra ``proctor[vllm]``, needs a GPU)
- ``openai:<served model name>`` with ``base_url``: an OpenAI-compatible HTTP server
- ``<prefix>:<rest>``: a backend a plug-in registered (``Registry.add_model_backend``), e.g. the
  AISteer360 dialect's ``steer:<file.py>:<NAME>`` (a steering pipeline on a base model)

Every backend, the built-in ones too (``proctor.models.declaration``), is found through the registry.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

from proctor.core.errors import ModelLoadError
from proctor.core.registrations import defined_in
from proctor.core.registry import ModelBackend, registry, split_model_spec
from proctor.models.backend_options import named_parameters, option_flag
from proctor.models.base import Model
from proctor.models.default import DEFAULT_MODEL_ALIASES

__all__ = ["check_model_options", "check_model_source", "load_model", "model_identity", "named_parameters"]

_DEVICE = re.compile(r"^(cpu|auto|mps|cuda(:\d+)?)$")


def _backend(spec: str, unknown: str) -> tuple[ModelBackend, str]:
    """The registered backend of ``spec`` and the rest of the string; an unknown prefix: ``unknown``, filled in."""
    prefix, rest = split_model_spec(spec)
    backend = registry().model_backends.get(prefix)
    if backend is None:
        available = ", ".join(registry().model_backends)
        raise ModelLoadError(unknown.format(spec=spec, prefix=prefix, available=available))
    return backend, rest


def check_model_source(spec: str, options: dict[str, Any]) -> None:
    """A Hugging Face model named by hub id: in the local cache, or on a hub that answers (asked once,
    without the hub client's retries), so a typo or no network fails now with one line. The last check
    before loading: it may take a request."""
    backend = registry().backend_of(spec)
    rest = split_model_spec(spec)[1]
    if (
        backend is None
        or not backend.hub_models
        or rest.lower() in DEFAULT_MODEL_ALIASES
        or Path(rest).expanduser().exists()
    ):
        return
    from proctor.data.hub import model_problem

    problem = model_problem(rest, options.get("revision"))
    if problem is not None:
        raise ModelLoadError(f"--model '{rest}': {problem}")


def check_model_options(spec: str, options: dict[str, Any]) -> list[str]:
    """Refuse a model option the backend would ignore or trip over, before anything loads.

    The backend's own check first (``add_model_backend``'s ``check``: what it takes), then what every backend
    shares. Each message names the option as given on the command line (``--dtype``, ``--model-arg KEY``).
    Returns the run's warnings: options handed to a backend that declares no check, unread as far as proctor
    can tell (``unchecked_options``).
    """
    backend, rest = _backend(spec, "--model '{spec}': unknown backend '{prefix}'; available: {available}")
    known = backend.check(rest, options) if backend.check is not None else None
    warnings = unchecked_options(backend, options) if backend.check is None else []
    if known is not None:
        unknown = sorted(set(options) - known)
        if unknown:
            raise ModelLoadError(
                f"--model-arg '{unknown[0]}' is not an option of the {backend.prefix} backend (it would be "
                f"ignored or fail after loading); its options are: {', '.join(sorted(known - {'model', 'name'}))}"
            )
    device = options.get("device")
    if device is not None and not backend.server and not _DEVICE.match(str(device)):
        raise ModelLoadError(f"--device '{device}' is not one of cpu, cuda, cuda:N, mps, auto")
    if device is not None and not backend.server and (str(device).startswith("cuda") or device == "mps"):
        _check_device_present(str(device))
    max_length = options.get("max_length")
    if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1):
        raise ModelLoadError(f"--max-length must be a positive number of tokens, got {max_length!r}")
    batch_size = options.get("batch_size")
    if (
        batch_size is not None
        and batch_size != "auto"
        and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1)
    ):
        raise ModelLoadError(f"--batch-size must be a positive integer or 'auto', got {batch_size!r}")
    return warnings


# What every backend is handed when the command line's flags are left at their defaults: not the user's choice.
_DEFAULTS = {"dtype": ("float32", "auto", None), "device": ("cpu", "auto", None), "batch_size": (8, "auto", None)}


def unchecked_options(backend: ModelBackend, options: dict[str, Any]) -> list[str]:
    """Options a backend without a ``check`` (a plug-in's, registered without one) is handed that its loader does
    not name: a loader that takes no other keyword is refused them before it loads; one that takes any keyword
    (``**options``) may drop them unread (red team 12: ``--dtype float16`` on such a backend, never applied), which
    proctor cannot see: a warning naming them and the way to declare what the backend takes."""
    given = {k: v for k, v in options.items() if v not in _DEFAULTS.get(k, ())}
    try:
        parameters = inspect.signature(backend.loader).parameters
    except (TypeError, ValueError):  # a loader whose signature cannot be read: nothing to compare
        return []
    named = {n for n, p in parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    rest = next(iter(parameters), None)  # the model's name after the prefix, not an option
    unnamed = sorted(k for k in given if k not in named)
    if not unnamed:
        return []
    shown = ", ".join(f"{option_flag(k)} {given[k]}" for k in unnamed)
    file = defined_in(backend.loader)
    where = f" ({file})" if file else ""
    if not any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
        raise ModelLoadError(
            f"{shown}: the {backend.prefix} backend's loader{where} takes no such option (it takes: "
            f"{', '.join(sorted(named - {rest})) or 'none'}); leave it out"
        )
    return [
        f"{shown} handed to the {backend.prefix} backend, whose loader{where} takes any keyword and declares no "
        "check: proctor cannot tell whether it applies them (a value it drops changes nothing, silently); a backend "
        "lists the options it takes with add_model_backend(..., check=...), and then unknown ones are refused"
    ]


def _check_device_present(device: str) -> None:
    """A GPU asked for that this machine lacks: the error before the model loads, not after (or an internal
    error from PyTorch for mps). Without torch installed, the backend's own load says what to install."""
    try:
        import torch  # noqa: F401  (whether it is installed)
    except ImportError:
        return
    from proctor.models.hf.loading import device_unavailable

    problem = device_unavailable(device)
    if problem is not None:
        raise ModelLoadError(f"--device: {problem}")


def takes_images(spec: str) -> bool | None:
    """Whether the model ``spec`` names takes images, as far as its backend knows before loading it (None: not
    known until it loads)."""
    backend = registry().backend_of(spec)
    if backend is None or backend.images is None:
        return None
    return backend.images(split_model_spec(spec)[1])


def model_identity(spec: str, options: dict[str, Any]) -> dict[str, object] | None:
    """What of the model's fingerprint is known before it loads (``ModelBackend.identity``), or None."""
    backend, rest = _backend(spec, "--model '{spec}': unknown backend '{prefix}'; available: {available}")
    return backend.identity(rest, options) if backend.identity is not None else None


def load_model(spec: str = "smollm2", **options: Any) -> Model:
    backend, rest = _backend(spec, "unknown model backend '{prefix}' in '{spec}'; available: {available}")
    model: Model = backend.loader(rest, **options)
    return model
