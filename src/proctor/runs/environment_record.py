"""results.json's ``environment``: where a run ran — Python, platform, CPU model, GPUs, and the versions of the
installed packages whose versions can change a run's numbers (kernels, tokenizers, lm-eval's task code).

Read cheaply and without importing those packages (their distribution metadata; the GPU from the NVIDIA
driver's ``/proc`` entries, else from torch when a model already imported it)."""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from pathlib import Path

from proctor.runs.results_schema import Environment

# distributions whose versions change numbers: kernels, tokenization, task code, data, metrics, chat templates
NUMBER_PACKAGES = (
    "torch",
    "transformers",
    "tokenizers",
    "numpy",
    "lm_eval",
    "vllm",
    "datasets",
    "accelerate",
    "safetensors",
    "sentencepiece",
    "tiktoken",
    "peft",
    "scipy",
    "scikit-learn",
    "sacrebleu",
    "evaluate",
    "rouge-score",
    "nltk",
    "jinja2",
    "openai",
    "ray",
)


def package_versions() -> dict[str, str]:
    """The installed ones of ``NUMBER_PACKAGES``, by distribution name."""
    out: dict[str, str] = {}
    for name in NUMBER_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def cpu_model() -> str | None:
    """The CPU's model name (Linux: /proc/cpuinfo; elsewhere what platform says), or None."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Hardware", "cpu model") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or None


def gpu_models() -> list[str]:
    """The GPUs the run could use: the NVIDIA driver's list, else torch's (only when already imported)."""
    names = []
    try:
        for info in sorted(Path("/proc/driver/nvidia/gpus").glob("*/information")):
            for line in info.read_text(encoding="utf-8", errors="replace").splitlines():
                if line.startswith("Model:"):
                    names.append(line.partition(":")[2].strip())
    except OSError:
        pass
    torch = sys.modules.get("torch")
    if not names and torch is not None:
        try:
            if torch.cuda.is_available():
                names = [str(torch.cuda.get_device_name(i)) for i in range(torch.cuda.device_count())]
        except Exception:  # noqa: BLE001 - a broken driver: no GPU recorded, the run goes on
            names = []
    return names


def environment(git_hash: str | None) -> Environment:
    """Where the run ran: this Python and platform, CPU, GPUs, package versions, and the commit of the folder it
    started in."""
    return Environment(
        python=platform.python_version(),
        platform=platform.platform(),
        git_hash=git_hash,
        cpu=cpu_model(),
        gpus=gpu_models(),
        packages=package_versions(),
    )
