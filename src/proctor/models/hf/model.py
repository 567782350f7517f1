"""Local Hugging Face transformers backend: ``HFModel`` loads a causal language model (or wraps a
loaded one), sets up how it scores and decodes, names it (``fingerprint``) and tokenizes.

Log-likelihoods are the ``HFLoglikelihoods`` mixin (``loglikelihoods.py``), computed from the decoder's hidden
states: the vocabulary projection and log-softmax run only at the positions being scored, never over the whole
prompt. Generation is the ``HFGeneration`` mixin (``generation.py``); the load-time rules this backend
shares with the vision and vLLM backends (dtypes, device, BOS, folder digest) are ``loading.py``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from proctor.core.chat_reply import ChatReplyEnd
from proctor.core.errors import ModelLoadError, require
from proctor.models.base import Model
from proctor.models.chat_reply import reply_end, special_texts
from proctor.models.hf import sharding, tree_attention
from proctor.models.hf.forward_plan import LAYOUTS, layout_for
from proctor.models.hf.generation import HFGeneration
from proctor.models.hf.invariant import layout as invariant_layout
from proctor.models.hf.loading import (
    DECODINGS,
    DTYPES,
    bos_rule,
    chat_template_compiles,
    check_choice,
    check_complete,
    load_errors,
    load_failure,
    pick_device,
    weights_digest,
)
from proctor.models.hf.loglikelihoods import HFLoglikelihoods
from proctor.models.hf.packing import ScoringItem, pack
from proctor.models.hf.scoring import (
    SCORING_VERSION,
    encode_pairs,
    score_rows,
    split_whitespace,
)
from proctor.models.hf.static import COLUMNS as STATIC_COLUMNS
from proctor.models.hf.static import supported as static_supported
from proctor.models.hf.unit_scoring import check_layout, default_layout
from proctor.models.hf.vocab_head import HEADS, VocabularyHead
from proctor.models.torch_runtime import load_torch

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)


class HFModel(HFGeneration, HFLoglikelihoods, Model):
    """A causal language model loaded with transformers."""

    def __init__(
        self,
        model: str | Path,
        *,
        dtype: str = "float32",
        device: str = "cpu",
        batch_size: int | str = 8,
        max_length: int | None = None,
        pack_tokens: int | None = None,
        add_bos: bool | None = None,
        revision: str | None = None,
        trust_remote_code: bool = False,
        name: str | None = None,
        batch_invariant: bool = False,
        forward_layout: str | None = None,
        attention: str | None = None,
        decode: str | None = None,
        vocab_head: str | None = None,
        cuda_graphs: bool = True,
        device_map: str | dict[str, Any] | None = None,
        max_memory: dict[str, Any] | None = None,
        offload_folder: str | None = None,
    ) -> None:
        torch = load_torch("hf", "The Hugging Face backend")
        transformers = require("transformers", "hf", "The Hugging Face backend")
        if dtype not in DTYPES:
            raise ModelLoadError(f"unknown dtype '{dtype}'; choose one of {', '.join(DTYPES)}")
        check_choice("forward_layout", forward_layout, LAYOUTS)
        check_choice("attention", attention, tree_attention.ATTENTIONS)
        check_choice("decode", decode, DECODINGS)
        check_choice("vocab_head", vocab_head, HEADS)
        sharding.check(device_map, max_memory)
        self.path = str(model)
        self.name = name or Path(self.path).name or self.path
        self.device = self._pick_device(device)
        self.batch_size = batch_size  # generation; log-likelihoods are packed by token budget
        # Greedy tokens that depend on the prompt alone, never on the batch (``hf_invariant``).
        self.batch_invariant = bool(batch_invariant)
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(
                self.path, revision=revision, trust_remote_code=trust_remote_code
            )
            torch_dtype = "auto" if dtype == "auto" else getattr(torch, dtype)
            placement = sharding.load_options(device_map, max_memory, offload_folder) if device_map is not None else {}
            self.model, loading_info = transformers.AutoModelForCausalLM.from_pretrained(
                self.path,
                revision=revision,
                dtype=torch_dtype,
                trust_remote_code=trust_remote_code,
                output_loading_info=True,
                **placement,
            )
        except load_errors() as exc:  # a missing, damaged or foreign folder
            raise ModelLoadError(
                f"cannot load model '{self.path}': {load_failure(self.path, exc)}\n"
                "--model takes a local Hugging Face folder, a hub id (needs internet), or 'smollm2' (embedded)."
            ) from None
        check_complete(self.path, loading_info)
        if device_map is None:
            self.model.to(self.device)
        else:  # placed by accelerate across devices (``sharding``): inputs go where the embeddings are
            self.device = sharding.input_device(self.model)
        self.model.eval()
        self._setup(max_length, pack_tokens, add_bos, forward_layout, attention, decode, vocab_head)
        # Replay static decoding steps as CUDA graphs (no effect on numbers); not across devices.
        self.cuda_graphs = bool(cuda_graphs) and not sharding.spans_devices(self.model)
        if self.attention == "flex" and self.device.startswith("cuda"):
            self._compile_flex()
        self._revision = revision or getattr(self.model.config, "_commit_hash", None)
        local = Path(self.path)
        self._content = weights_digest(local) if local.is_dir() else None

    @classmethod
    def from_loaded(
        cls,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        batch_size: int | str = 8,
        max_length: int | None = None,
        add_bos: bool | None = None,
        name: str | None = None,
        batch_invariant: bool = False,
        forward_layout: str | None = None,
        attention: str | None = None,
        decode: str | None = None,
        vocab_head: str | None = None,
    ) -> "HFModel":
        """This backend around an already-loaded transformers causal LM and its tokenizer (a steering
        pipeline's model, a use case's raw target): same code, nothing loaded or moved; the model
        stays on its own device."""
        load_torch("hf", "The Hugging Face backend")  # a clear error where it is missing; its CPU math settled
        if getattr(getattr(model, "config", None), "is_encoder_decoder", False):
            raise ModelLoadError(
                f"{type(model).__name__} is an encoder-decoder model; proctor's Hugging Face "
                "backend runs causal language models only"
            )
        self = cls.__new__(cls)
        self.path = str(getattr(model, "name_or_path", "") or type(model).__name__)
        self.name = name or Path(self.path).name or self.path
        self.device = str(next(model.parameters()).device)
        self.batch_size = batch_size
        self.batch_invariant = bool(batch_invariant)
        self.tokenizer, self.model = tokenizer, model
        check_choice("forward_layout", forward_layout, LAYOUTS)
        check_choice("attention", attention, tree_attention.ATTENTIONS)
        check_choice("decode", decode, DECODINGS)
        check_choice("vocab_head", vocab_head, HEADS)
        self._setup(max_length, None, add_bos, forward_layout, attention, decode, vocab_head)
        self.cuda_graphs = True
        self._revision = getattr(model.config, "_commit_hash", None)
        self._content = None
        return self

    def _setup(
        self,
        max_length: int | None,
        pack_tokens: int | None,
        add_bos: bool | None,
        forward_layout: str | None = None,
        attention: str | None = None,
        decode: str | None = None,
        vocab_head: str | None = None,
    ) -> None:
        """Settings read off the loaded model and tokenizer."""
        self.dtype = str(self.model.dtype).replace("torch.", "")
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        config_max = getattr(self.model.config, "max_position_embeddings", None) or 2048
        self.max_length = max_length or config_max
        self.add_bos, self.prefix_token_id = bos_rule(self.tokenizer, add_bos)
        cuda = self.device.startswith("cuda")
        # How log-likelihood requests become forward calls (``forward_plan``): small packed rows on the
        # CPU, bucketed shapes on CUDA. A function of the requests alone, never of --batch-size, so
        # the calls and the numbers are the same at any batch size.
        self.layout = layout_for(forward_layout or default_layout(self.model.get_decoder(), cuda), cuda, pack_tokens)
        check_layout(self.layout.name, self.model.get_decoder(), self.name)
        self.pack_tokens = self.layout.row_tokens
        self.forward_tokens = self.layout.call_tokens
        # Tree rows: the dense mask by default, FlexAttention block masks on request (``tree_attention``).
        self.attention = attention or "mask"
        # Requests per engine call (each call's results are stored as soon as it returns): sized so
        # that a call fills its forward passes, and a kill loses seconds of work.
        self.chunk_requests = self.layout.chunk_requests
        self.chunk_sizes = {"loglikelihood": self.layout.chunk_requests}
        if cuda:  # many sequences in flight per generation call (the default --batch-size auto: up to 256)
            self.chunk_sizes["generate"] = max(256, self.batch_size if isinstance(self.batch_size, int) else 0)
        # Default greedy decoding: over a static cache, replayed as a CUDA graph (``hf_static``) on CUDA;
        # continuous batching with a growing cache (``hf_decode``) elsewhere, or where a model's cache
        # or attention cannot be static.
        self.decoding = decode or ("static" if cuda else "dynamic")
        if self.decoding == "static" and not static_supported(self.model):
            if decode:
                raise ModelLoadError(
                    "--model-arg decode=static needs plain full-attention cache layers and 'sdpa' or 'eager' "
                    f"attention; {type(self.model).__name__} has neither or not both"
                )
            self.decoding = "dynamic"
        # The vocabulary head: unless "torch" is asked for, the fused C kernel where it can run
        # (PyTorch's numbers, about twice as fast on the CPU), else PyTorch's ops; None is the default,
        # so that only a kernel asked for by name ("fused") is warned of when it cannot run.
        self.vocab_head = vocab_head
        self._head: VocabularyHead | None = None  # made on the first log-likelihood call

    # ------------------------------------------------------------------ identity
    @property
    def fingerprint(self) -> dict[str, Any]:
        import torch

        transformers = require("transformers", "hf", "The Hugging Face backend")
        fingerprint = {
            "backend": "hf",
            "model": self.name,
            "path": self.path,
            "revision": self._revision,
            "content": self._content,
            "dtype": self.dtype,
            "add_bos": self.add_bos,
            "max_length": self.max_length,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            # What else decides the last bits of a number: the device type, the rows the requests
            # are packed into, and the scoring code itself (SCORING_VERSION moves when it changes them).
            "device": self.device.split(":")[0],
            "pack_tokens": self.pack_tokens,
            "scoring": SCORING_VERSION,
        }
        if self.layout.fingerprint:  # absent for the packed rows, so their stored answers stay valid
            fingerprint["forward_layout"] = self.layout.fingerprint
        if self.attention != "mask":
            fingerprint["attention"] = self.attention
        if self.decoding == "static":  # other near-tie greedy tokens than the growing cache's
            fingerprint["decode"] = f"static,columns={STATIC_COLUMNS}"
        if self.batch_invariant:  # other greedy tokens than the default decoding (absent when off: old keys hold)
            fingerprint["batch_invariant"] = invariant_layout(self.device)
        head = self._vocabulary_head() if self.vocab_head != "torch" else None
        if head is not None and head.implementation:  # the fused CPU head (``head_kernel``), where its probe found
            fingerprint["vocab_head"] = head.implementation  # an order that gives PyTorch's bits
        elif head is not None and head.refused:  # PyTorch's ops, because the probe found none: said and kept
            fingerprint["vocab_head"] = f"torch ({head.refused})"
        return fingerprint

    def _pick_device(self, device: str) -> str:
        return pick_device(device)

    # ------------------------------------------------------------------ tokens
    def encode(self, text: str) -> list[int]:
        ids: list[int] = self.tokenizer(text, add_special_tokens=False).input_ids
        return ids

    def encode_pair(self, context: str, continuation: str, move_whitespace: bool = True) -> tuple[list[int], list[int]]:
        """Token ids of context and continuation, split where the joint encoding splits.

        Trailing whitespace of the context moves to the continuation (BPE tokenizers attach
        spaces to the following word), and the continuation is the tail of the joint encoding.
        """
        pair = split_whitespace(context, continuation, move_whitespace)
        return encode_pairs(self.tokenizer, [pair], self.add_bos, self.prefix_token_id)[0]

    def apply_chat_template(self, messages: Sequence[dict[str, Any]]) -> str:
        if not self.has_chat_template:
            raise ModelLoadError(f"the tokenizer of '{self.name}' has no chat template")
        with chat_template_compiles(self.path, self.name):
            text: str = self.tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
        return text

    @property
    def has_chat_template(self) -> bool:
        return getattr(self.tokenizer, "chat_template", None) is not None

    def chat_reply_end(self) -> ChatReplyEnd | None:
        return reply_end(self.tokenizer, self._eos_ids())

    def special_tokens(self) -> tuple[str, ...]:
        return special_texts(self.tokenizer)

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        if not texts:
            return []
        ids = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        return [len(one) for one in ids]

    # ------------------------------------------------------------------ load-time warm-up
    def _compile_flex(self) -> None:
        """Compile the FlexAttention kernel now, not inside the first task: two scoring calls of
        different shapes through the real path (the real strides; after a second shape
        ``torch.compile`` makes the sizes dynamic, so later shapes reuse the kernel)."""
        import torch

        base = [self.prefix_token_id] + self.encode(" warm up the attention kernel")
        for rows, length in ((2, 40), (3, 100)):
            # each row a tree: one context, two branches (a chain would take the plain causal kernel)
            trees = [
                pack([ScoringItem(tuple(base + [7 + r] * length + [end, 13]), 2) for end in (11, 12)], 10**9)[0]
                for r in range(rows)
            ]
            try:
                with torch.inference_mode():
                    score_rows(
                        self.model.get_decoder(),
                        self._vocabulary_head(),
                        trees,
                        2,
                        self.device,
                        self.tokenizer.pad_token_id,
                        None,
                        self.layout,
                        self.attention,
                    )
            except (
                Exception
            ) as exc:  # no working FlexAttention kernel here: the dense mask (same numbers to float precision)
                log.warning(
                    "FlexAttention is unavailable (%s: %s); scoring with the dense attention mask",
                    type(exc).__name__,
                    exc,
                )
                self.attention = "mask"
                return
