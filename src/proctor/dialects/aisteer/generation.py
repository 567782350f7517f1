"""``batch_retry_generate``: render, batch, generate, decode, parse, and retry what did not parse.

Four kinds of target:

- a proctor ``Model`` (``proctor.models.registry.load_model(...)``, ``HFModel``) or an executor
  (``proctor.runs.executor.ModelExecutor``, as ``proctor run file.py`` and each ``Benchmark`` trial hand the
  use case): requests go through it like any task's (``session.py``: the run store when the
  executor has one, deduplication, progress);
- a ``SteeringPipeline``: its controls see every prompt with its own runtime arguments;
- a plain transformers model with its tokenizer (its ``generate`` is transformers' own): proctor's HF
  backend around it (``HFModel.from_loaded``), the same generation code as a proctor ``Model``;
- any other target with its own ``generate`` (a steering pipeline from another package, a PEFT model, a
  user's decoding wrapper): called through that ``generate`` as AISteer360 calls ``model_or_pipeline``
  (``own_generate``): chat-rendered prompts tokenized without special tokens, padded in chunks of
  ``batch_size``, ``generate(input_ids=..., attention_mask=..., **gen_kwargs)``, the new tokens decoded
  without special tokens.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence, TypeGuard

from proctor.dialects.aisteer.control_arguments import RuntimeOverrides, resolve_overrides
from proctor.models.steering.generation import (
    Generated,
    GenKwargs,
    Prompt,
    generate_rendered,
    loaded_backend,
    render,
    request_fields,
)

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase

    from proctor.core.model_requests import GenerateRequest
    from proctor.models.base import Model
    from proctor.models.steering.pipeline import RuntimeRow

log = logging.getLogger(__name__)


class OwnGenerate(Protocol):
    """A target that generates through its own ``generate`` (a PEFT model, another package's pipeline,
    a user's decoding wrapper), called as transformers' ``generate`` is."""

    def generate(self, *, input_ids: torch.Tensor, attention_mask: torch.Tensor, **gen_kwargs: Any) -> torch.Tensor: ...


def _requests(
    model: Model, prompts: Sequence[Prompt], gen_kwargs: GenKwargs, use_chat: bool | None
) -> tuple[list[GenerateRequest], list[str]]:
    from proctor.core.model_requests import GenerateRequest

    fields = request_fields(gen_kwargs)
    chat = model.has_chat_template if use_chat is None else use_chat
    rendered = []
    for prompt in prompts:
        if isinstance(prompt, str) and not chat:
            rendered.append(prompt)
        else:
            messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
            rendered.append(model.apply_chat_template(messages))
    return [GenerateRequest(text, **fields) for text in rendered], rendered


def _generate_once(
    target: object,
    tokenizer: PreTrainedTokenizerBase | None,
    prompts: list[Prompt],
    runtime: list[RuntimeRow],
    gen_kwargs: dict[str, object],
    batch_size: int,
    use_chat: bool | None,
) -> list[Generated]:
    from proctor.dialects.aisteer.session import as_executor
    from proctor.models.steering.pipeline import SteeringPipeline

    if isinstance(target, SteeringPipeline):
        from proctor.models.steering.steered_model import engine_model

        steered = engine_model(target, runtime)
        if steered is not None:  # through the pipeline's executor: the run store answers what it holds
            return _generate_once(steered, tokenizer, prompts, runtime, gen_kwargs, batch_size, use_chat)
        return target.generate_prompts(
            prompts, runtime_kwargs=runtime, gen_kwargs=gen_kwargs, batch_size=batch_size, use_chat=use_chat
        )
    executor = as_executor(target)
    if executor is not None:
        requests, rendered = _requests(executor.model, prompts, gen_kwargs, use_chat)
        results = executor.run("generate", requests)
        return [
            Generated(r.text, r.finish_reason, r.prompt_tokens, r.completion_tokens, text)
            for r, text in zip(results, rendered)
        ]
    if tokenizer is None:
        raise ValueError(f"a {type(target).__name__} target needs its tokenizer (batch_retry_generate(..., tokenizer))")
    rendered = [render(p, tokenizer, use_chat) for p in prompts]
    if has_own_generate(target):
        return own_generate(target, tokenizer, rendered, gen_kwargs, batch_size)
    if not callable(target):
        raise TypeError(
            f"model_or_pipeline must be a proctor model, a SteeringPipeline, a transformers model or an object "
            f"with a generate() method; got {type(target).__name__}"
        )
    return generate_rendered(loaded_backend(target, tokenizer, batch_size), rendered, gen_kwargs)


def has_own_generate(target: object) -> TypeGuard[OwnGenerate]:
    """Whether ``target`` generates through its own ``generate``: it has one, and is neither proctor's (a
    model, an executor, a ``SteeringPipeline``) nor a plain transformers model (one whose ``generate`` is
    transformers' own, which proctor's decoder replaces)."""
    from proctor.dialects.aisteer.session import as_executor
    from proctor.models.steering.pipeline import SteeringPipeline

    if isinstance(target, SteeringPipeline) or as_executor(target) is not None:
        return False
    if not callable(getattr(target, "generate", None)):
        return False
    if "generate" in getattr(target, "__dict__", {}):  # set on the object itself
        return True
    try:
        from transformers import PreTrainedModel
    except ImportError:  # pragma: no cover - the dialect's generation needs transformers anyway
        return True
    if not isinstance(target, PreTrainedModel):
        return True
    return not getattr(type(target).generate, "__module__", "").startswith("transformers.")


def own_generate(
    target: OwnGenerate,
    tokenizer: PreTrainedTokenizerBase,
    rendered: Sequence[str],
    gen_kwargs: GenKwargs,
    batch_size: int,
) -> list[Generated]:
    """Generate through ``target.generate`` as AISteer360's ``batch_retry_generate`` calls a model: left
    padding for a decoder-only ``config`` (as it sets it), chunks of ``batch_size`` tokenized with
    ``padding=True, truncation=True, add_special_tokens=False`` on the target's ``device``,
    ``generate(input_ids=, attention_mask=, **gen_kwargs)``, the tokens after the prompt decoded with
    ``skip_special_tokens=True``. ``gen_kwargs`` go through as given, except ``seed``, which seeds torch's
    generator once before sampled calls (``batch_retry_generate`` gives each retry round its own); ``finish_reason`` is
    ``"length"`` when ``max_new_tokens`` tokens came back (padding after the end not counted), else ``"stop"``."""
    import torch

    kwargs = dict(gen_kwargs)
    seed = kwargs.pop("seed", None)
    config = getattr(target, "config", None)
    if (
        config is not None
        and not getattr(config, "is_encoder_decoder", False)
        and getattr(tokenizer, "padding_side", None) != "left"
    ):
        tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None and tokenizer.eos_token_id is not None:
        tokenizer.pad_token = tokenizer.eos_token
    device = getattr(target, "device", None)
    limit = kwargs.get("max_new_tokens")
    size = max(1, int(batch_size))
    if seed is not None and kwargs.get("do_sample"):
        torch.manual_seed(int(seed))
    out: list[Generated] = []
    for start in range(0, len(rendered), size):
        chunk = list(rendered[start : start + size])
        inputs = tokenizer(chunk, return_tensors="pt", padding=True, truncation=True, add_special_tokens=False)
        if device is not None:
            inputs = inputs.to(device)
        with torch.no_grad():
            sequences = target.generate(
                input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"], **kwargs
            )
        sequences = getattr(sequences, "sequences", sequences)
        new_tokens = sequences[:, inputs["input_ids"].shape[1] :]
        texts = tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        for row, text, prompt, mask in zip(new_tokens.tolist(), texts, chunk, inputs["attention_mask"].tolist()):
            n = _generated_length(row, tokenizer)
            reason = "length" if limit is not None and n >= int(limit) else "stop"
            out.append(Generated(text, reason, int(sum(mask)), n, prompt))
    return out


def _generated_length(row: list[int], tokenizer: PreTrainedTokenizerBase) -> int:
    """Tokens generated in ``row``: the padding after a sequence that ended early is not counted (the end
    token is, when padding is the end token)."""
    pad = tokenizer.pad_token_id
    n = len(row)
    while pad is not None and n and row[n - 1] == pad:
        n -= 1
    if n < len(row) and pad is not None and pad == tokenizer.eos_token_id:
        n += 1
    return n


def batch_retry_generate(
    prompt_data: Sequence[Mapping[str, Any]],
    model_or_pipeline: object,
    tokenizer: PreTrainedTokenizerBase | None = None,
    gen_kwargs: GenKwargs | None = None,
    runtime_overrides: RuntimeOverrides | None = None,
    evaluation_data: Sequence[Mapping[str, object]] | None = None,
    parse_fn: Callable[[str], object] | None = None,
    max_retries: int = 2,
    return_raw: bool = False,
    return_outputs: bool = False,
    batch_size: int | None = None,
    use_chat: bool | None = None,
):
    """Generate for every item of ``prompt_data`` (each has a ``prompt``: text or chat messages).

    With ``parse_fn``, items whose parse is ``None`` are generated again (only those, each with its
    own runtime arguments), at most ``max_retries`` more times; sampled generation uses a new seed
    in every round. Returns the parsed values (the raw texts when there is no ``parse_fn``), or
    ``(parsed, raw)`` / ``(parsed, raw, outputs)``; ``outputs`` holds, per item, the text, finish
    reason, token counts and the prompt as rendered (after input controls).
    """
    items = list(prompt_data)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping) or "prompt" not in item:
            raise ValueError(f"prompt_data item {index} has no 'prompt'")
    if max_retries < 0:
        raise ValueError("max_retries must be >= 0")
    runtime = resolve_overrides(runtime_overrides, items, evaluation_data)
    kwargs = dict(gen_kwargs or {})
    size = int(batch_size or kwargs.pop("batch_size", 8))
    kwargs.pop("batch_size", None)
    outputs: list[Generated | None] = [None] * len(items)
    parsed: list[object] = [None] * len(items)
    todo = list(range(len(items)))
    base_seed = int(kwargs.get("seed", 0))
    for attempt in range(max_retries + 1):
        if not todo:
            break
        round_kwargs = dict(kwargs, seed=base_seed + attempt) if kwargs.get("do_sample") or attempt else kwargs
        generated = _generate_once(
            model_or_pipeline,
            tokenizer,
            [items[i]["prompt"] for i in todo],
            [runtime[i] for i in todo],
            round_kwargs,
            size,
            use_chat,
        )
        for i, result in zip(todo, generated):
            outputs[i] = result
            parsed[i] = parse_fn(result.text) if parse_fn else result.text
        if parse_fn is None:
            break
        todo = [i for i in todo if parsed[i] is None]
        if todo and attempt < max_retries:
            log.info("retrying %d unparsed item(s) (round %d of %d)", len(todo), attempt + 1, max_retries)
    done = [o for o in outputs if o is not None]
    assert len(done) == len(outputs)  # the first round generated for every item
    raw = [o.text for o in done]
    if return_outputs:
        records = [
            {
                "text": o.text,
                "finish_reason": o.finish_reason,
                "prompt_tokens": o.prompt_tokens,
                "completion_tokens": o.completion_tokens,
                "rendered_prompt": o.rendered_prompt,
            }
            for o in done
        ]
        return parsed, raw, records
    if return_raw:
        return parsed, raw
    return parsed


def output_record_fields(output: object, tokenizer: PreTrainedTokenizerBase | None = None) -> dict[str, object]:
    """The per-item fields a generation record takes from its output (AISteer360's helper):
    ``finish_reason`` (``None`` without an output) and, when known, ``adapted_prompt`` — the prompt
    as the model saw it after input controls and the chat template."""
    if output is None:
        return {"finish_reason": None}
    if isinstance(output, Mapping):
        fields = {"finish_reason": output.get("finish_reason")}
        if output.get("rendered_prompt") is not None:
            fields["adapted_prompt"] = output["rendered_prompt"]
        return fields
    fields = {"finish_reason": getattr(output, "finish_reason", None)}
    adapted = getattr(output, "adapted_input_ids", None)
    if adapted is not None and tokenizer is not None:  # an AISteer360-style Output record
        row = adapted[0]
        if tokenizer.pad_token_id is not None:
            row = row[row != tokenizer.pad_token_id]
        fields["adapted_prompt"] = tokenizer.decode(row, skip_special_tokens=False)
    return fields


def log_truncation_count(outputs: Sequence[object]) -> int:
    """Warn once with how many generations stopped at ``max_new_tokens`` (AISteer360's helper);
    returns that count."""

    def reason(output: object) -> object:
        return output.get("finish_reason") if isinstance(output, Mapping) else getattr(output, "finish_reason", None)

    truncated = sum(1 for o in outputs if o is not None and reason(o) == "length")
    if truncated:
        log.warning(
            "%d of %d generations ended on 'length' (truncated at max_new_tokens); "
            "length-sensitive metrics may be affected.",
            truncated,
            len(outputs),
        )
    return truncated
