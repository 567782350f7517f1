"""Local Hugging Face vision-language backend (``AutoModelForImageTextToText`` + ``AutoProcessor``).

Prompts carry the processor's image placeholders (its chat template renders ``{"type": "image"}``
content parts, plain prompts get ``image_prompt``); each request's images go to the processor with
the text, which expands the placeholders into image tokens and makes the pixel values. Requests
are forwarded one at a time, so a score never depends on the batch it came in.
"""

from __future__ import annotations

import inspect
import logging
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from proctor.core.errors import ModelLoadError, ProctorError, require
from proctor.core.model_requests import (
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    RollingLoglikelihoodRequest,
    RollingLoglikelihoodResult,
)
from proctor.models.base import Model, Progress
from proctor.models.chat_reply import eos_ids, special_texts
from proctor.models.generate_kwargs import decoding_kwargs
from proctor.models.hf.loading import (
    DTYPES,
    bos_rule,
    chat_template_compiles,
    check_complete,
    load_errors,
    load_failure,
    pick_device,
    weights_digest,
)
from proctor.models.torch_runtime import load_torch

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

_DECODED_KEPT = 32  # decoded images kept for reuse


def is_vision_folder(path: str | Path) -> bool:
    """A local model folder whose config names a vision tower (an image-text-to-text model)."""
    import json

    config = Path(path) / "config.json"
    if not config.is_file():
        return False
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "vision_config" in data


class HFVisionModel(Model):
    """A vision-language model loaded with transformers' image-text-to-text auto classes."""

    def __init__(
        self,
        model: str | Path,
        *,
        dtype: str = "float32",
        device: str = "cpu",
        batch_size: int | str = 1,
        max_length: int | None = None,
        add_bos: bool | None = None,
        revision: str | None = None,
        trust_remote_code: bool = False,
        name: str | None = None,
        **ignored: Any,  # text-backend options (pack_tokens) do not apply
    ) -> None:
        torch = load_torch("hf", "The Hugging Face vision backend")
        transformers = require("transformers", "hf", "The Hugging Face vision backend")
        require("PIL", "vision", "The Hugging Face vision backend")
        if dtype not in DTYPES:
            raise ModelLoadError(f"unknown dtype '{dtype}'; choose one of {', '.join(DTYPES)}")
        self.path = str(model)
        self.name = name or Path(self.path).name or self.path
        self.device = pick_device(device)
        self.batch_size = batch_size
        try:
            self.processor = transformers.AutoProcessor.from_pretrained(
                self.path, revision=revision, trust_remote_code=trust_remote_code
            )
            self.model, loading_info = transformers.AutoModelForImageTextToText.from_pretrained(
                self.path,
                revision=revision,
                dtype="auto" if dtype == "auto" else getattr(torch, dtype),
                trust_remote_code=trust_remote_code,
                output_loading_info=True,
            )
        except load_errors() as exc:  # a missing, damaged or foreign folder
            raise ModelLoadError(
                f"cannot load vision-language model '{self.path}': {load_failure(self.path, exc)}\n"
                "hf-vision: takes a local folder (or hub id) with an image-text-to-text model and its processor."
            ) from None
        check_complete(self.path, loading_info)
        self.model.to(self.device).eval()
        tokenizer = getattr(self.processor, "tokenizer", None)
        if tokenizer is None:
            raise ModelLoadError(f"the processor of '{self.path}' has no tokenizer")
        self.tokenizer = tokenizer
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.dtype = str(self.model.dtype).replace("torch.", "")
        text_config = getattr(self.model.config, "text_config", None) or self.model.config
        self.max_length = max_length or getattr(text_config, "max_position_embeddings", None) or 2048
        self.add_bos, self.prefix_token_id = bos_rule(self.tokenizer, add_bos)
        self.image_token = getattr(self.processor, "image_token", None) or "<image>"
        self._revision = revision or getattr(self.model.config, "_commit_hash", None)
        local = Path(self.path)
        self._content = weights_digest(local) if local.is_dir() else None
        # digest -> decoded image: the choices of a question come together, so a few recent ones suffice
        self._pixels: OrderedDict[str, Any] = OrderedDict()
        # transformers 5 names the key/value cache argument `cache` (earlier: `past_key_values`)
        self._cache_arg = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"

    # ------------------------------------------------------------------ identity and capabilities
    @property
    def fingerprint(self) -> dict[str, Any]:
        import torch

        transformers = require("transformers", "hf", "The Hugging Face vision backend")
        return {
            "backend": "hf-vision",
            "model": self.name,
            "path": self.path,
            "revision": self._revision,
            "content": self._content,
            "dtype": self.dtype,
            "add_bos": self.add_bos,
            "max_length": self.max_length,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "device": self.device.split(":")[0],  # CPU and CUDA kernels differ in the last bits
        }

    @property
    def supports_images(self) -> bool:
        return True

    @property
    def supports_image_loglikelihood(self) -> bool:
        return True

    def special_tokens(self) -> tuple[str, ...]:
        return special_texts(self.tokenizer)

    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self.processor, "chat_template", None) or getattr(self.tokenizer, "chat_template", None))

    def apply_chat_template(self, messages: Sequence[dict[str, Any]]) -> str:
        if not self.has_chat_template:
            raise ModelLoadError(f"the processor of '{self.name}' has no chat template")
        with chat_template_compiles(self.path, self.name):
            text: str = self.processor.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
        return text

    def image_prompt(self, text: str, n_images: int) -> str:
        return f"{self.image_token}\n" * n_images + text

    # ------------------------------------------------------------------ inputs
    def _images(self, images: Sequence[Any]) -> list[Any]:
        out = []
        for image in images:
            if image.digest not in self._pixels:
                self._pixels[image.digest] = image.pil()
                while len(self._pixels) > _DECODED_KEPT:
                    self._pixels.popitem(last=False)
            self._pixels.move_to_end(image.digest)
            out.append(self._pixels[image.digest])
        return out

    def _inputs(self, text: str, images: Sequence[Any], prefix: bool | None = None) -> dict[str, Any]:
        """Token ids (placeholders expanded to image tokens; the prefix token in front by the BOS rule,
        or when ``prefix`` says so) and the processor's pixel inputs."""
        import torch

        kwargs: dict[str, Any] = {"text": [text], "return_tensors": "pt", "add_special_tokens": False}
        if images:
            kwargs["images"] = [self._images(images)]  # nested per text: the form every processor takes
        inputs = dict(self.processor(**kwargs))
        inputs.setdefault("attention_mask", torch.ones_like(inputs["input_ids"]))
        if self.add_bos if prefix is None else prefix:
            first = torch.tensor([[self.prefix_token_id]], dtype=inputs["input_ids"].dtype)
            inputs["input_ids"] = torch.cat([first, inputs["input_ids"]], dim=1)
            inputs["attention_mask"] = torch.cat([torch.ones_like(first), inputs["attention_mask"]], dim=1)
        return inputs

    def _forward_logprobs(
        self, inputs: dict[str, Any], start: int, targets: list[int]
    ) -> tuple[tuple[float, ...], bool]:
        """Log-probs of ``targets`` at positions ``start`` .. (each predicted by the position before)."""
        import torch

        moved = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in inputs.items()}
        with torch.inference_mode():
            logits = self.model(**moved).logits[0, start - 1 : start - 1 + len(targets)].float()
        return self._pick(logits, targets)

    def _pick(self, logits: torch.Tensor, targets: list[int]) -> tuple[tuple[float, ...], bool]:
        import torch

        logprobs = torch.log_softmax(logits, dim=-1)
        rows = torch.arange(len(targets), device=logprobs.device)
        picked = logprobs[rows, torch.tensor(targets, device=logprobs.device)].tolist()
        return tuple(picked), logits.argmax(-1).tolist() == list(targets)

    def _text_ids(self, text: str) -> list[int]:
        ids: list[int] = self.tokenizer(text, add_special_tokens=False).input_ids
        return ids

    # ------------------------------------------------------------------ the three calls
    def loglikelihood(
        self, requests: Sequence[LoglikelihoodRequest], progress: Progress | None = None
    ) -> list[LoglikelihoodResult]:
        """Requests that share a context and images are scored from one forward pass of that context
        (its key/value cache copied for each continuation), so the image is encoded once per question;
        every request goes this way, so its score does not depend on which others came with it."""
        import copy

        import torch

        out: list[Any] = [None] * len(requests)  # each request's LoglikelihoodResult, filled group by group
        groups: dict[tuple[Any, ...], list[tuple[int, str]]] = {}
        for index, request in enumerate(requests):
            context, continuation = request.context, request.continuation
            n_spaces = len(context) - len(context.rstrip()) if request.move_whitespace else 0
            if n_spaces:
                context, continuation = context[:-n_spaces], context[-n_spaces:] + continuation
            if not context and request.images:
                raise ProctorError("a log-likelihood request with images needs a context holding their placeholders")
            groups.setdefault((context, request.images), []).append((index, continuation))
        for (context, images), members in groups.items():
            # context ids with image tokens expanded; an empty context starts from the prefix token
            context_inputs = self._inputs(context, images, prefix=None if context else True)
            n_context = context_inputs["input_ids"].shape[1]
            context_text = self._text_ids(context) if context else []
            cache, last = None, None
            for index, continuation in members:
                request = requests[index]
                # the continuation is the tail of the joint encoding (text only: placeholders expand in the context)
                tail = (
                    self._text_ids(context + continuation)[len(context_text) :]
                    if context
                    else self._text_ids(continuation)
                )
                limit = min(self.max_length, request.max_length or self.max_length)
                if not tail:
                    out[index] = LoglikelihoodResult(0.0, (), True)
                elif n_context + len(tail) > limit + 1:  # too long: the context loses tokens on the left
                    if images:
                        raise ProctorError(
                            f"a request of {n_context + len(tail)} tokens (image tokens "
                            f"included) exceeds the context limit {limit}"
                        )
                    ids = (context_inputs["input_ids"][0].tolist() + tail)[-(limit + 1) :]
                    n_targets = min(len(tail), len(ids) - 1)
                    inputs = {
                        "input_ids": torch.tensor([ids]),
                        "attention_mask": torch.ones(1, len(ids), dtype=torch.long),
                    }
                    token_lp, greedy = self._forward_logprobs(inputs, len(ids) - n_targets, ids[len(ids) - n_targets :])
                    out[index] = LoglikelihoodResult(float(sum(token_lp)), token_lp, greedy)
                else:
                    with torch.inference_mode():
                        if cache is None:
                            moved = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in context_inputs.items()}
                            first = self.model(**moved, use_cache=True)
                            cache = getattr(first, "cache", None) or getattr(first, "past_key_values", None)
                            last = first.logits[0, -1:].float()
                        logits = last
                        if len(tail) > 1:
                            rest = self.model(
                                input_ids=torch.tensor([tail[:-1]], device=self.device),
                                attention_mask=torch.ones(
                                    1, n_context + len(tail) - 1, dtype=torch.long, device=self.device
                                ),
                                use_cache=True,
                                **{self._cache_arg: copy.deepcopy(cache)},
                            )
                            logits = torch.cat([last, rest.logits[0].float()])
                    token_lp, greedy = self._pick(logits, tail)
                    out[index] = LoglikelihoodResult(float(sum(token_lp)), token_lp, greedy)
                if progress:
                    progress(1)
        return out

    def rolling_loglikelihood(
        self, requests: Sequence[RollingLoglikelihoodRequest], progress: Progress | None = None
    ) -> list[RollingLoglikelihoodResult]:
        import torch

        out = []
        for request in requests:
            window = min(request.window, self.max_length)
            stride = min(request.stride or window, window)
            full = [self.prefix_token_id] + self.tokenizer(request.text, add_special_tokens=False).input_ids
            n, start, end, lps = len(full) - 1, 0, min(window, len(full) - 1), []
            while start < n:
                tokens = full[max(0, end - window) : end + 1]
                n_targets = end - start
                inputs = {
                    "input_ids": torch.tensor([tokens]),
                    "attention_mask": torch.ones(1, len(tokens), dtype=torch.long),
                }
                lps += list(self._forward_logprobs(inputs, len(tokens) - n_targets, tokens[-n_targets:])[0])
                start, end = end, min(end + stride, n)
            out.append(RollingLoglikelihoodResult(float(sum(lps)), len(lps), tuple(lps)))
            if progress:
                progress(1)
        return out

    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[GenerateResult]:
        import torch

        eos_ids = self._eos_ids()
        out = []
        for r in requests:
            inputs = self._inputs(r.prompt, r.images)
            n_prompt = inputs["input_ids"].shape[1]
            budget = min(self.max_length, r.max_length or self.max_length) - r.max_tokens
            if n_prompt > max(budget, 1):
                if r.images:
                    raise ProctorError(
                        f"a prompt of {n_prompt} tokens (with image tokens) leaves "
                        f"no room for {r.max_tokens} new tokens"
                    )
                keep = max(budget, 1)
                inputs = {
                    "input_ids": inputs["input_ids"][:, -keep:],
                    "attention_mask": inputs["attention_mask"][:, -keep:],
                }
                n_prompt = keep
            kwargs = decoding_kwargs(r, self.tokenizer.pad_token_id, eos_ids)
            moved = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in inputs.items()}
            with torch.inference_mode():
                new = self.model.generate(**moved, **kwargs)[0, n_prompt:].tolist()
            reason = "length"
            for position, token in enumerate(new):
                if token in eos_ids:
                    new, reason = new[:position], "eos"
                    break
            text = self.tokenizer.decode(new, skip_special_tokens=True)
            cut = min((text.find(s) for s in r.stop if s in text), default=-1)
            if cut >= 0:
                out.append(GenerateResult(text[:cut], "stop", n_prompt, len(new)))
            else:
                out.append(
                    GenerateResult(
                        text, "length" if reason == "length" else "stop", n_prompt, len(new) + (reason == "eos")
                    )
                )
            if progress:
                progress(1)
        return out

    def _eos_ids(self) -> list[int]:
        return eos_ids(self.tokenizer, self.model.generation_config)
