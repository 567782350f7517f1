"""What the backends that load a local transformers folder share before any request: the option
values the Hugging Face backend takes (dtype, decoding), the device it runs on, the BOS rule its
tokenization follows and the content digest of the model folder.

Kept apart from ``hf.py`` (the ``HFModel`` backend) because the vision backend (``hf_vision.py``),
vLLM (``vllm_backend.py``) and the option checks (``builtin_backends.py``) use these rules too,
without the text backend's scoring and decoding.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from proctor.core.errors import ModelLoadError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

DTYPES = ("auto", "float32", "float16", "bfloat16")
DECODINGS = ("static", "dynamic")


def chat_template_file(folder: str) -> str:
    """Where a model folder's chat template is written: ``chat_template.jinja`` (or ``.json``) where there is
    one, else ``tokenizer_config.json``'s ``chat_template`` (the folder itself when it is no local folder)."""
    local = Path(folder)
    for name in ("chat_template.jinja", "chat_template.json"):
        if (local / name).is_file():
            return str(local / name)
    config = local / "tokenizer_config.json"
    return f"{config} (its 'chat_template')" if config.is_file() else folder


@contextlib.contextmanager
def chat_template_compiles(folder: str, name: str) -> Iterator[None]:
    """Run the block (the tokenizer's ``apply_chat_template``); a template that does not compile is an error
    naming its file and line, not an internal error from Jinja."""
    import jinja2

    try:
        yield
    except jinja2.TemplateSyntaxError as exc:
        raise ModelLoadError(
            f"the chat template of model '{name}' does not compile: {chat_template_file(folder)}, template line "
            f"{exc.lineno}: {exc.message}; fix it, or run with --chat-template off"
        ) from None


def load_errors() -> tuple[type[BaseException], ...]:
    """What transformers raises for a missing, damaged or foreign model folder: its own errors, and
    safetensors' for a weights file cut short (a copy or download that stopped part-way) or not one
    at all; ``EOFError`` / unpickling errors for a damaged ``pytorch_model.bin``."""
    import pickle

    errors: tuple[type[BaseException], ...] = (
        OSError,
        ValueError,
        KeyError,
        TypeError,
        RuntimeError,
        EOFError,
        pickle.UnpicklingError,
    )
    try:
        from safetensors import SafetensorError
    except ImportError:  # safetensors comes with transformers; without it there is nothing to catch
        return errors
    return (*errors, SafetensorError)


def check_complete(path: str, loading_info: dict[str, Any]) -> None:
    """Refuse a model whose checkpoint lacks weights its config asks for: transformers fills them with random
    numbers and only prints a report, so the run would finish with numbers of a model nobody trained (a
    config.json from another model size, a shard missing from the folder)."""
    missing = sorted(loading_info.get("missing_keys") or ())
    if missing:
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        raise ModelLoadError(
            f"cannot load model '{path}': its weights lack {len(missing)} tensor(s) that its config.json asks "
            f"for ({shown}); transformers would fill them with random numbers. Is config.json from another "
            "model, or a weights shard missing from the folder?"
        )


def load_failure(path: str, exc: BaseException) -> str:
    """``exc``, raised loading the model at ``path``, in words; a damaged weights or JSON file is named
    (safetensors' and json's own messages do not say which of the folder's files they were reading)."""
    text = f"{type(exc).__name__}: {str(exc)[:500]}"
    folder = Path(path)
    if not folder.is_dir():
        return text
    if type(exc).__name__ == "SafetensorError":
        damaged = [f.name for f in sorted(folder.glob("*.safetensors")) if not _readable_safetensors(f)]
    elif isinstance(exc, json.JSONDecodeError):
        damaged = [f.name for f in sorted(folder.glob("*.json")) if not _readable_json(f)]
    else:
        return text
    if not damaged:
        return text
    return f"{', '.join(damaged)} is damaged or incomplete (a copy or download cut short?): {text}"


def _readable_safetensors(file: Path) -> bool:
    from safetensors import safe_open

    try:
        with safe_open(str(file), framework="pt"):
            return True
    except Exception:  # any failure to read the header is what is being looked for
        return False


def _readable_json(file: Path) -> bool:
    try:
        json.loads(file.read_bytes())
        return True
    except (OSError, ValueError):
        return False


_TEXT_FILES = (".json", ".jinja", ".txt", ".model")
_WEIGHTS_FILES = (".safetensors", ".bin", ".gguf", ".pt")


def weights_digest(folder: Path) -> str:
    """A cheap content digest of a local model folder: config in full, weights by size and edges."""
    entries: list[tuple[Any, ...]] = []
    for name in sorted(p.name for p in folder.iterdir() if p.is_file()):
        path = folder / name
        if path.suffix in _TEXT_FILES:
            entries.append((name, path.read_bytes()))
        elif path.suffix in _WEIGHTS_FILES:
            stat = path.stat()
            entries.append((name, stat.st_size, stat.st_mtime_ns))
        else:
            entries.append((name,))
    return _digest(str(folder.resolve()), tuple(entries))


@functools.lru_cache(maxsize=8)
def _digest(folder: str, entries: tuple[tuple[Any, ...], ...]) -> str:
    """The digest of a folder as ``entries`` describe it, kept while they stay the same: a resumed run asks
    for it before loading (the fingerprint check) and again when the model loads, and each weights file
    costs a read of 2 MiB."""
    digest = hashlib.sha256()
    for name, *rest in entries:
        digest.update(name.encode())
        if rest and isinstance(rest[0], bytes):
            digest.update(rest[0])
        elif rest:
            size = rest[0]
            digest.update(str(size).encode())
            with open(Path(folder) / name, "rb") as handle:
                digest.update(handle.read(1 << 20))
                handle.seek(max(0, size - (1 << 20)))
                digest.update(handle.read(1 << 20))
    return digest.hexdigest()[:16]


def bos_rule(tokenizer: PreTrainedTokenizerBase, add_bos: bool | None) -> tuple[bool, int]:
    """Whether prompts get a BOS token in front (by default: when the tokenizer adds one itself),
    and the token an empty context starts from (BOS, else end-of-sequence). Shared by every
    backend that tokenizes like this one, so their requests are the same token ids."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if add_bos is None:
        with_special = tokenizer.encode("a")
        add_bos = bos is not None and len(with_special) > 0 and with_special[0] == bos
    return bool(add_bos), (bos if bos is not None else tokenizer.eos_token_id)


def pick_device(device: str) -> str:
    """``auto`` is the GPU when there is one; asking for a GPU this machine lacks is an error, not a fallback."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    problem = device_unavailable(device)
    if problem is not None:
        raise ModelLoadError(problem)
    return device


def device_unavailable(device: str) -> str | None:
    """Why ``device`` (a valid name: cpu, cuda, cuda:N, mps) cannot be used on this machine, or None."""
    import torch

    if device == "mps":
        backend = getattr(torch.backends, "mps", None)
        if backend is None or not backend.is_available():
            return "device 'mps' (Apple's GPU) was asked for but this machine or PyTorch build has none"
        return None
    if not device.startswith("cuda"):
        return None
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        return f"device '{device}' was asked for but no CUDA GPU is available"
    index = int(device.partition(":")[2] or 0)
    if index >= count:
        return f"device '{device}' was asked for but this machine has {count} CUDA GPU(s): cuda:0 to cuda:{count - 1}"
    return None


def check_choice(option: str, value: str | None, choices: Sequence[str]) -> None:
    if value is not None and value not in choices:
        raise ModelLoadError(f"--model-arg {option}={value!r} is not one of {', '.join(choices)}")
