"""Local Hugging Face transformers backend.

Log-likelihoods are computed from the decoder's hidden states: the vocabulary projection and
log-softmax run only at the positions being scored, never over the whole prompt.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from proctor.errors import ModelLoadError, require
from proctor.models.base import Model, Progress
from proctor.requests import (
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    RollingLoglikelihoodRequest,
    RollingLoglikelihoodResult,
)

log = logging.getLogger(__name__)

_DTYPES = ("auto", "float32", "float16", "bfloat16")


@dataclass(frozen=True)
class _ScoringItem:
    """A token sequence whose last ``n_targets`` tokens are scored given everything before them."""

    tokens: tuple[int, ...]
    n_targets: int


def _weights_digest(folder: Path) -> str:
    """A cheap content digest of a local model folder: config in full, weights by size and edges."""
    digest = hashlib.sha256()
    for name in sorted(p.name for p in folder.iterdir() if p.is_file()):
        path = folder / name
        digest.update(name.encode())
        if path.suffix in (".json", ".jinja", ".txt", ".model"):
            digest.update(path.read_bytes())
        elif path.suffix in (".safetensors", ".bin", ".gguf", ".pt"):
            size = path.stat().st_size
            digest.update(str(size).encode())
            with path.open("rb") as handle:
                digest.update(handle.read(1 << 20))
                handle.seek(max(0, size - (1 << 20)))
                digest.update(handle.read(1 << 20))
    return digest.hexdigest()[:16]


class HFModel(Model):
    """A causal language model loaded with transformers."""

    def __init__(
        self,
        model: str | Path,
        *,
        dtype: str = "float32",
        device: str = "cpu",
        batch_size: int | str = 8,
        max_length: int | None = None,
        add_bos: bool | None = None,
        revision: str | None = None,
        trust_remote_code: bool = False,
        name: str | None = None,
    ) -> None:
        torch = require("torch", "hf", "The Hugging Face backend")
        transformers = require("transformers", "hf", "The Hugging Face backend")
        if dtype not in _DTYPES:
            raise ModelLoadError(f"unknown dtype '{dtype}'; choose one of {', '.join(_DTYPES)}")
        self._torch = torch
        self.path = str(model)
        self.name = name or Path(self.path).name or self.path
        self.device = self._pick_device(device)
        self.batch_size = batch_size
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(
                self.path, revision=revision, trust_remote_code=trust_remote_code
            )
            torch_dtype = "auto" if dtype == "auto" else getattr(torch, dtype)
            self.model = transformers.AutoModelForCausalLM.from_pretrained(
                self.path, revision=revision, dtype=torch_dtype, trust_remote_code=trust_remote_code
            )
        except OSError as exc:
            raise ModelLoadError(
                f"cannot load model '{self.path}': {exc}\n"
                "--model takes a local Hugging Face folder, a hub id (needs internet), or 'smollm2' (embedded)."
            ) from None
        self.model.to(self.device).eval()
        self.dtype = str(self.model.dtype).replace("torch.", "")
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        config_max = getattr(self.model.config, "max_position_embeddings", None) or 2048
        self.max_length = max_length or config_max
        bos = self.tokenizer.bos_token_id
        if add_bos is None:  # follow the tokenizer: does it put a BOS token in front by itself?
            with_special = self.tokenizer("a").input_ids
            add_bos = bos is not None and len(with_special) > 0 and with_special[0] == bos
        self.add_bos = bool(add_bos)
        self.prefix_token_id = bos if bos is not None else self.tokenizer.eos_token_id
        self._revision = revision or getattr(self.model.config, "_commit_hash", None)
        local = Path(self.path)
        self._content = _weights_digest(local) if local.is_dir() else None

    # ------------------------------------------------------------------ identity
    @property
    def fingerprint(self) -> dict:
        transformers = require("transformers", "hf", "The Hugging Face backend")
        return {
            "backend": "hf",
            "model": self.name,
            "path": self.path,
            "revision": self._revision,
            "content": self._content,
            "dtype": self.dtype,
            "add_bos": self.add_bos,
            "max_length": self.max_length,
            "transformers": transformers.__version__,
            "torch": self._torch.__version__,
        }

    def _pick_device(self, device: str) -> str:
        if device == "auto":
            return "cuda" if self._torch.cuda.is_available() else "cpu"
        if device.startswith("cuda") and not self._torch.cuda.is_available():
            raise ModelLoadError(f"device '{device}' was asked for but no CUDA GPU is available")
        return device

    # ------------------------------------------------------------------ tokens
    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def encode_pair(self, context: str, continuation: str, move_whitespace: bool = True) -> tuple[list[int], list[int]]:
        """Token ids of context and continuation, split where the joint encoding splits.

        Trailing whitespace of the context moves to the continuation (BPE tokenizers attach
        spaces to the following word), and the continuation is the tail of the joint encoding.
        """
        n_spaces = len(context) - len(context.rstrip()) if move_whitespace else 0
        if n_spaces:
            continuation = context[-n_spaces:] + continuation
            context = context[:-n_spaces]
        if not context:
            return [self.prefix_token_id], self.encode(continuation)
        whole = self.encode(context + continuation)
        context_ids = self.encode(context)
        if self.add_bos:
            return [self.prefix_token_id] + context_ids, whole[len(context_ids):]
        return context_ids, whole[len(context_ids):]

    def apply_chat_template(self, messages: Sequence[dict]) -> str:
        if not self.has_chat_template:
            raise ModelLoadError(f"the tokenizer of '{self.name}' has no chat template")
        return self.tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)

    @property
    def has_chat_template(self) -> bool:
        return getattr(self.tokenizer, "chat_template", None) is not None

    # ------------------------------------------------------------------ scoring core
    def _batches(self, order: list[int], lengths: list[int]) -> list[list[int]]:
        if self.batch_size == "auto":
            budget = 8192  # tokens per forward pass; keeps CPU memory modest
            batches, current, width = [], [], 0
            for i in order:
                width = max(width, lengths[i]) if current else lengths[i]
                if current and width * (len(current) + 1) > budget:
                    batches.append(current)
                    current, width = [], lengths[i]
                current.append(i)
            if current:
                batches.append(current)
            return batches
        size = max(1, int(self.batch_size))
        return [order[i : i + size] for i in range(0, len(order), size)]

    def _score(self, items: Sequence[_ScoringItem], progress: Progress | None = None, weights: Sequence[int] | None = None):
        """Per item: (token log-probs, all-greedy flag). Longest first, left-padded batches."""
        torch = self._torch
        lengths = [len(item.tokens) - 1 for item in items]
        order = sorted(range(len(items)), key=lambda i: (-lengths[i], i))
        out: list = [None] * len(items)
        decoder = self.model.get_decoder()
        head = self.model.get_output_embeddings()
        softcap = getattr(self.model.config, "final_logit_softcapping", None)
        pad = self.tokenizer.pad_token_id
        with torch.inference_mode():
            for batch in self._batches(order, lengths):
                width = max(lengths[i] for i in batch)
                input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                rows, cols, targets = [], [], []
                for r, i in enumerate(batch):
                    tokens = items[i].tokens
                    n = lengths[i]
                    input_ids[r, width - n :] = torch.tensor(tokens[:-1])
                    mask[r, width - n :] = 1
                    k = items[i].n_targets
                    rows.extend([r] * k)
                    cols.extend(range(width - k, width))
                    targets.extend(tokens[-k:])
                positions = (mask.cumsum(-1) - 1).clamp(min=0)
                hidden = decoder(
                    input_ids=input_ids.to(self.device),
                    attention_mask=mask.to(self.device),
                    position_ids=positions.to(self.device),
                ).last_hidden_state
                selected = hidden[torch.tensor(rows), torch.tensor(cols)]
                logits = head(selected).float()
                if softcap:
                    logits = torch.tanh(logits / softcap) * softcap
                logprobs = torch.log_softmax(logits, dim=-1)
                target_tensor = torch.tensor(targets, device=logits.device)
                token_lp = logprobs.gather(1, target_tensor[:, None])[:, 0].tolist()
                greedy = (logits.argmax(-1) == target_tensor).tolist()
                start = 0
                for i in batch:
                    k = items[i].n_targets
                    out[i] = (tuple(token_lp[start : start + k]), all(greedy[start : start + k]))
                    start += k
                if progress:
                    progress(sum(weights[i] for i in batch) if weights else len(batch))
        return out

    # ------------------------------------------------------------------ the three calls
    def loglikelihood(
        self, requests: Sequence[LoglikelihoodRequest], progress: Progress | None = None
    ) -> list[LoglikelihoodResult]:
        items = []
        for request in requests:
            context_ids, continuation_ids = self.encode_pair(request.context, request.continuation, request.move_whitespace)
            limit = min(self.max_length, request.max_length or self.max_length)
            tokens = (context_ids + continuation_ids)[-(limit + 1) :]
            items.append(_ScoringItem(tuple(tokens), min(len(continuation_ids), len(tokens) - 1)))
        results: list[LoglikelihoodResult] = [LoglikelihoodResult(0.0, (), True)] * len(items)
        scored = [i for i, item in enumerate(items) if item.n_targets > 0]
        for i, (token_lp, greedy) in zip(scored, self._score([items[i] for i in scored], progress)):
            results[i] = LoglikelihoodResult(float(sum(token_lp)), token_lp, greedy)
        if progress and len(scored) < len(items):
            progress(len(items) - len(scored))
        return results

    def rolling_loglikelihood(
        self, requests: Sequence[RollingLoglikelihoodRequest], progress: Progress | None = None
    ) -> list[RollingLoglikelihoodResult]:
        items, owner = [], []
        for index, request in enumerate(requests):
            window = min(request.window, self.max_length)
            stride = min(request.stride or window, window)
            full = [self.prefix_token_id] + self.encode(request.text)
            n = len(full) - 1  # tokens to score: all of the text
            start, end = 0, min(window, n)
            while start < n:
                items.append(_ScoringItem(tuple(full[max(0, end - window) : end + 1]), end - start))
                owner.append(index)
                start, end = end, min(end + stride, n)
        scored = self._score(items) if items else []
        per_request: list[list[float]] = [[] for _ in requests]
        for index, (token_lp, _) in zip(owner, scored):
            per_request[index].extend(token_lp)
        if progress:
            progress(len(requests))
        return [RollingLoglikelihoodResult(float(sum(lp)), len(lp), tuple(lp)) for lp in per_request]

    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[GenerateResult]:
        torch = self._torch
        prompts = [self.encode(r.prompt) for r in requests]
        if self.add_bos:
            prompts = [[self.prefix_token_id] + p for p in prompts]
        # Same settings batch together; within them longest first, to keep padding low.
        def settings(i: int):
            r = requests[i]
            return (
                r.max_tokens, r.stop, r.temperature, r.top_p, r.seed, r.num_beams, r.length_penalty,
                r.no_repeat_ngram_size, r.min_tokens, r.max_length,
            )

        order = sorted(range(len(requests)), key=lambda i: (repr(settings(i)), -len(prompts[i]), i))
        results: list = [None] * len(requests)
        size = 8 if self.batch_size == "auto" else max(1, int(self.batch_size))
        groups: list[list[int]] = []
        for i in order:
            if groups and settings(groups[-1][0]) == settings(i) and len(groups[-1]) < size:
                groups[-1].append(i)
            else:
                groups.append([i])
        pad = self.tokenizer.pad_token_id
        eos_ids = self._eos_ids()
        with torch.inference_mode():
            for batch in groups:
                request = requests[batch[0]]
                budget = min(self.max_length, request.max_length or self.max_length) - request.max_tokens
                ids = [prompts[i][-budget:] if budget > 0 else prompts[i][-1:] for i in batch]
                width = max(len(x) for x in ids)
                input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for r, x in enumerate(ids):
                    input_ids[r, width - len(x) :] = torch.tensor(x)
                    mask[r, width - len(x) :] = 1
                kwargs = dict(
                    max_new_tokens=request.max_tokens,
                    pad_token_id=pad,
                    eos_token_id=eos_ids,
                    do_sample=request.temperature > 0,
                )
                if request.temperature > 0:
                    torch.manual_seed(request.seed)
                    kwargs.update(temperature=request.temperature, top_p=request.top_p)
                else:
                    kwargs.update(temperature=None, top_p=None, top_k=None)
                if request.num_beams > 1:
                    kwargs.update(num_beams=request.num_beams, length_penalty=request.length_penalty, early_stopping=True)
                if request.no_repeat_ngram_size:
                    kwargs.update(no_repeat_ngram_size=request.no_repeat_ngram_size)
                if request.min_tokens:
                    kwargs.update(min_new_tokens=request.min_tokens)
                if request.stop:
                    kwargs.update(stop_strings=list(request.stop), tokenizer=self.tokenizer)
                output = self.model.generate(
                    input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device), **kwargs
                )
                for r, i in enumerate(batch):
                    new = output[r, width:].tolist()
                    results[i] = self._finish(new, requests[i], len(ids[r]), eos_ids)
                if progress:
                    progress(len(batch))
        return results

    def _eos_ids(self) -> list[int]:
        ids = {self.tokenizer.eos_token_id}
        config_eos = getattr(self.model.generation_config, "eos_token_id", None)
        if isinstance(config_eos, int):
            ids.add(config_eos)
        elif isinstance(config_eos, (list, tuple)):
            ids.update(config_eos)
        return sorted(i for i in ids if i is not None)

    def _finish(self, new: list[int], request: GenerateRequest, n_prompt: int, eos_ids: list[int]) -> GenerateResult:
        pad = self.tokenizer.pad_token_id
        n_generated = len(new)
        ended = False
        for position, token in enumerate(new):
            if token in eos_ids:
                new, n_generated, ended = new[:position], position + 1, True
                break
        while new and new[-1] == pad and pad not in eos_ids:
            new.pop()
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        cut = min((text.find(s) for s in request.stop if s in text), default=-1)
        if cut >= 0:
            return GenerateResult(text[:cut], "stop", n_prompt, n_generated)
        return GenerateResult(text, "stop" if ended else "length", n_prompt, n_generated)
