"""Use-case generation on the one Hugging Face path: HF-style ``gen_kwargs`` as ``GenerateRequest``s,
prompts rendered as the model sees them, and the ``Generated`` record a use case gets back.

Raw (transformers model, tokenizer) targets and steering pipelines generate through proctor's
``HFModel`` (``models/hf/generation.py``: its continuously batched greedy decoder, transformers' sampling and
beam search), built around the loaded objects with ``HFModel.from_loaded``. Prompts are tokenized
without special tokens (``add_bos=False``), as these targets always have been.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from proctor.core.errors import ProctorError

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from proctor.models.base import Model
    from proctor.models.hf.model import HFModel

Prompt = str | Sequence[dict[str, str]]  # a text, or chat messages ({"role": ..., "content": ...})
# HF-style generation keywords, as a use case or benchmark gives them (max_new_tokens, do_sample, temperature, ...).
GenKwargs = Mapping[str, Any]
DEFAULT_MAX_NEW_TOKENS = 64

# HF-style generation keywords and the GenerateRequest field each one sets.
REQUEST_FIELDS = {
    "max_new_tokens": "max_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "seed": "seed",
    "num_beams": "num_beams",
    "length_penalty": "length_penalty",
    "no_repeat_ngram_size": "no_repeat_ngram_size",
    "min_new_tokens": "min_tokens",
    "stop": "stop",
    "top_k": "top_k",
    "repetition_penalty": "repetition_penalty",
}


class UnsupportedGenKwarg(ProctorError, ValueError):
    """A ``gen_kwargs`` option proctor's generation does not implement."""


@dataclass(frozen=True)
class Generated:
    text: str
    finish_reason: str  # "stop" (end of sequence or a stop string) or "length"
    prompt_tokens: int
    completion_tokens: int
    rendered_prompt: str


def render(prompt: Prompt, tokenizer: PreTrainedTokenizerBase, use_chat: bool | None = None) -> str:
    """Prompt text as the model sees it: chat template when the tokenizer has one, else as is."""
    has_template = getattr(tokenizer, "chat_template", None) is not None
    if use_chat is None:
        use_chat = has_template
    if isinstance(prompt, str):
        if not use_chat:
            return prompt
        messages = [{"role": "user", "content": prompt}]
    else:
        messages = [dict(m) for m in prompt]
        if not use_chat:
            return "\n\n".join(m["content"] for m in messages)
    if not has_template:
        raise ValueError("chat messages were given but the tokenizer has no chat template")
    text: str = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return text


def request_fields(gen_kwargs: GenKwargs | None) -> dict[str, Any]:
    """``GenerateRequest`` fields for HF-style ``gen_kwargs``: greedy unless ``do_sample``;
    an option with no field is an error naming it."""
    gen_kwargs = dict(gen_kwargs or {})
    unknown = sorted(set(gen_kwargs) - set(REQUEST_FIELDS) - {"do_sample"})
    if unknown:
        raise UnsupportedGenKwarg(
            f"gen_kwargs {unknown} are not supported by proctor's generation; supported: "
            f"{sorted(REQUEST_FIELDS)} and do_sample"
        )
    fields: dict[str, Any] = {"max_tokens": DEFAULT_MAX_NEW_TOKENS}
    for key, value in gen_kwargs.items():
        if key in REQUEST_FIELDS and value is not None:
            fields[REQUEST_FIELDS[key]] = value
    if not gen_kwargs.get("do_sample"):
        fields["temperature"] = 0.0
        fields.pop("top_k", None)  # no effect on greedy decoding (transformers ignores it too)
    elif fields.get("temperature", 0.0) <= 0:
        fields["temperature"] = 1.0
    if isinstance(fields.get("stop"), str):
        fields["stop"] = (fields["stop"],)
    elif "stop" in fields:
        fields["stop"] = tuple(fields["stop"])
    return fields


def generate_rendered(backend: Model, rendered: Sequence[str], gen_kwargs: GenKwargs | None) -> list[Generated]:
    """Generate for already-rendered prompts on a proctor model (``HFModel``), results in order."""
    from proctor.core.model_requests import GenerateRequest

    fields = request_fields(gen_kwargs)
    results = backend.generate([GenerateRequest(text, **fields) for text in rendered])
    return [
        Generated(r.text, r.finish_reason, r.prompt_tokens, r.completion_tokens, text)
        for r, text in zip(results, rendered)
    ]


def loaded_backend(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, batch_size: int | str = 8, base: object = None
) -> HFModel:
    """proctor's HF backend running ``model`` (a raw target, or a pipeline's model); ``base``: the
    pipeline's HFModel, whose maximum length it keeps."""
    from proctor.models.hf.model import HFModel

    max_length = base.max_length if isinstance(base, HFModel) else None
    return HFModel.from_loaded(model, tokenizer, batch_size=batch_size, max_length=max_length, add_bos=False)
