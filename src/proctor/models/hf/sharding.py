"""A model larger than one device: its layers placed by accelerate's device map.

``--model-arg device_map=auto`` (or ``balanced``, ``sequential``, or an explicit JSON map of module
name to device: ``{"model.layers.0": 0, ..., "lm_head": "cpu"}``), with an optional
``max_memory`` per device and an ``offload_folder`` for layers mapped to ``"disk"``: transformers
loads the weights through accelerate, which moves each layer's inputs to its device as the forward
pass reaches it (lm-evaluation-harness's ``parallelize=True`` does the same). Each layer computes on
its own device with the same kernels, so the numbers are the unsharded model's (on one device type).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from proctor.core.errors import ModelLoadError

if TYPE_CHECKING:
    from transformers import PreTrainedModel

STRATEGIES = ("auto", "balanced", "balanced_low_0", "sequential")


def check(device_map: Any, max_memory: Any) -> None:
    """Refuse a malformed device map or memory budget before anything loads."""
    if device_map is not None and not (device_map in STRATEGIES or _is_map(device_map)):
        raise ModelLoadError(
            f"--model-arg device_map={device_map!r} is neither one of {', '.join(STRATEGIES)} nor a JSON object of "
            'module name to device (e.g. {"model.layers.0": 0, "lm_head": "cpu"})'
        )
    if max_memory is not None:
        if device_map is None:
            raise ModelLoadError("--model-arg max_memory needs --model-arg device_map (e.g. device_map=auto)")
        if (
            not isinstance(max_memory, dict)
            or not max_memory
            or not all(isinstance(v, (str, int)) for v in max_memory.values())
        ):
            raise ModelLoadError(
                f"--model-arg max_memory={max_memory!r} must be a JSON object of device to size, e.g. "
                '{"0": "70GiB", "1": "70GiB", "cpu": "200GiB"}'
            )


def _is_map(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and bool(value)
        and all(
            isinstance(k, str) and (isinstance(v, int) and not isinstance(v, bool) or isinstance(v, str))
            for k, v in value.items()
        )
    )


def load_options(device_map: Any, max_memory: Any, offload_folder: str | None) -> dict[str, Any]:
    """``from_pretrained`` keyword arguments for the map (GPU indices given as strings become ints)."""
    options: dict[str, Any] = {
        "device_map": {k: _device(v) for k, v in device_map.items()} if isinstance(device_map, dict) else device_map
    }
    if max_memory is not None:
        options["max_memory"] = {_device(k): v for k, v in max_memory.items()}
    if offload_folder is not None:
        options["offload_folder"] = offload_folder
    return options


def _device(value: Any) -> Any:
    return int(value) if isinstance(value, str) and value.isdigit() else value


def input_device(model: PreTrainedModel) -> str:
    """Where the token ids go: the input embeddings' device ("cpu" when offloaded to the CPU or disk)."""
    placed = getattr(model, "hf_device_map", None) or {}
    embeddings = model.get_input_embeddings()
    for name, module in model.named_modules():
        if module is embeddings:
            while name and name not in placed:
                name = name.rpartition(".")[0]
            device = placed.get(name, placed.get("", None))
            break
    else:
        device = None
    if device is None:
        device = next(iter(placed.values()), "cpu")
    if isinstance(device, int):
        return f"cuda:{device}"
    return "cpu" if device in ("cpu", "disk", "meta") else str(device)


def spans_devices(model: PreTrainedModel) -> bool:
    """Whether the model's layers sit on more than one device."""
    return len({str(v) for v in (getattr(model, "hf_device_map", None) or {}).values()}) > 1
