"""vLLM backend (``--model vllm:<folder or hub id>``; ``pip install 'proctor[vllm]'`` with a GPU, or
``bash install_vllm.sh`` for vLLM's CPU build in a venv of its own).

One ``vllm.LLM`` per process (per replica under ``--workers``), created once and used for every
request type. Generation sends a whole engine chunk to ``LLM.generate`` at once, so vLLM's
continuous batching schedules it; log-likelihoods are read from ``prompt_logprobs`` (the
log-prob of every prompt token given the tokens before it) with one generated token.

Tokenisation follows the HF backend exactly (same context/continuation split, same BOS rule),
and prompts go to vLLM as token ids. Run on the real engine on the CPU by
``tests/models/test_vllm_cpu.py`` (against the HF backend); not yet on a GPU. ``tests/models/test_vllm.py``
checks the result extraction with a stand-in engine.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from proctor.core.chat_reply import ChatReplyEnd
from proctor.core.errors import ProctorError, require
from proctor.core.model_requests import (
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    RollingLoglikelihoodRequest,
    RollingLoglikelihoodResult,
)
from proctor.models.base import Model, Progress
from proctor.models.chat_reply import eos_ids, reply_end, special_texts
from proctor.models.hf.loading import bos_rule, weights_digest
from proctor.models.hf.scoring import encode_pairs, split_whitespace
from proctor.models.logprob_checks import check_ranked
from proctor.models.reply_checks import Where, a_string, describe_request, engine_outputs, logprob, token_positions
from proctor.models.vllm.cpu import cpu_defaults

if TYPE_CHECKING:  # not imported at run time until the backend loads (vllm needs a GPU or its CPU build)
    from transformers import PreTrainedTokenizerBase
    from vllm import LLM, RequestOutput, SamplingParams
    from vllm.config import CacheConfig

log = logging.getLogger(__name__)


class VLLMModel(Model):
    """A causal language model served in-process by vLLM."""

    def __init__(
        self,
        model: str | Path,
        *,
        dtype: str = "auto",
        max_length: int | None = None,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        seed: int = 0,
        revision: str | None = None,
        trust_remote_code: bool = False,
        add_bos: bool | None = None,
        name: str | None = None,
        engine: LLM | None = None,  # an already built vllm.LLM (or a stand-in with the same methods)
        device: str | None = None,  # accepted for the CLI's sake: vLLM places the model itself
        batch_size: int | str | None = None,  # accepted: vLLM batches continuously
        **engine_args: Any,
    ) -> None:
        self.path = str(model)
        self.name = name or Path(self.path).name or self.path
        self.engine_settings: dict[str, object] = {}  # what proctor chose for the engine (the CPU's defaults)
        self.tensor_parallel_size = int(tensor_parallel_size)
        self._revision = revision
        if engine is None:
            vllm = require("vllm", "vllm", "The vLLM backend")
            self._vllm_version = getattr(vllm, "__version__", "?")
            added, self.engine_settings = cpu_defaults(vllm, self.path, dtype, max_length, engine_args)
            engine_args = {**added, **engine_args}
            engine = vllm.LLM(
                model=self.path,
                dtype=dtype,
                tensor_parallel_size=self.tensor_parallel_size,
                gpu_memory_utilization=gpu_memory_utilization,
                seed=seed,
                revision=revision,
                trust_remote_code=trust_remote_code,
                **({"max_model_len": max_length} if max_length else {}),
                **engine_args,
            )
        else:
            self._vllm_version = getattr(engine, "version", "stand-in")
        self.engine: LLM = engine
        self.tokenizer: PreTrainedTokenizerBase = engine.get_tokenizer()
        config = getattr(getattr(engine, "llm_engine", None), "model_config", None)
        self.max_length = int(getattr(config, "max_model_len", None) or max_length or 2048)
        self.dtype = str(getattr(config, "dtype", dtype)).replace("torch.", "")
        self.add_bos, self.prefix_token_id = bos_rule(self.tokenizer, add_bos)  # as the HF backend
        self.chunk_requests = 1024  # per engine call: vLLM schedules within it
        self.large_chunks = True  # exempt from the engine's 64-request cap: on a GPU 1024 requests are seconds of work
        self.prefix_caching = _prefix_caching(engine)
        self.prompts_rescored = 0  # log-likelihood prompts sent again because the cache covered a scored token
        if self.engine_settings or self.prefix_caching:
            self.engine_settings.update(_cache_settings(engine))
        local = Path(self.path)
        if local.is_dir():
            self._content: str | None = weights_digest(local)
        else:
            self._content = None

    @property
    def fingerprint(self) -> dict[str, object]:
        return {
            "backend": "vllm",
            "model": self.name,
            "path": self.path,
            "revision": self._revision,
            "content": self._content,
            "dtype": self.dtype,
            "add_bos": self.add_bos,
            "max_length": self.max_length,
            "tensor_parallel_size": self.tensor_parallel_size,
            "vllm": self._vllm_version,
        }

    # ------------------------------------------------------------------ tokens (as the HF backend)
    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def encode_pair(self, context: str, continuation: str, move_whitespace: bool = True) -> tuple[list[int], list[int]]:
        pair = split_whitespace(context, continuation, move_whitespace)  # the HF backend's split and BOS rule
        return encode_pairs(self.tokenizer, [pair], self.add_bos, self.prefix_token_id)[0]

    def apply_chat_template(self, messages: Sequence[Mapping[str, object]]) -> str:
        if not self.has_chat_template:
            raise ProctorError(f"the tokenizer of '{self.name}' has no chat template")
        text: str = self.tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
        return text

    @property
    def has_chat_template(self) -> bool:
        return getattr(self.tokenizer, "chat_template", None) is not None

    def special_tokens(self) -> tuple[str, ...]:
        return special_texts(self.tokenizer)

    def chat_reply_end(self) -> ChatReplyEnd | None:
        from transformers import GenerationConfig  # vLLM's own dependency; read as vLLM reads it (local)

        try:
            generation = GenerationConfig.from_pretrained(self.path, local_files_only=True)
        except (OSError, ValueError):  # no generation_config.json: the tokenizer's end of sequence only
            generation = None
        return reply_end(self.tokenizer, eos_ids(self.tokenizer, generation))

    # ------------------------------------------------------------------ scoring core
    def _sampling_params(self, **kwargs: object) -> SamplingParams:
        factory = getattr(self.engine, "sampling_params", None)  # a stand-in engine brings its own
        if factory is not None:
            return factory(**kwargs)
        return require("vllm", "vllm", "The vLLM backend").SamplingParams(**kwargs)

    def _prompt_logprobs(self, items: Sequence[tuple[list[int], int]]) -> list[tuple[tuple[float, ...], bool]]:
        """Per (tokens, n): log-probs of the last n tokens, each given all before it, and all-greedy.

        With the engine's prefix cache on, prompts read it (a question's context computed once for all its
        choices, shared few-shot text once for all questions): vLLM then computes log-probs only past the
        cached tokens, which is all scoring needs while a prompt's cached part ends before the last context
        token. Prompts go in token order (shared starts side by side); the few whose cached part reaches
        into the scored tokens are sent again without reading the cache."""
        if not items:
            return []
        order = sorted(range(len(items)), key=lambda i: items[i][0])
        outputs = self._score_prompts([items[i][0] for i in order], read_cache=self.prefix_caching)
        by_item: list[RequestOutput | None] = [None] * len(items)
        for i, output in zip(order, outputs):
            by_item[i] = output
        if self.prefix_caching:
            again = [i for i, (tokens, n) in enumerate(items) if _cached(by_item[i]) > len(tokens) - n - 1]
            self.prompts_rescored += len(again)
            for i, output in zip(again, self._score_prompts([items[i][0] for i in again], read_cache=False)):
                by_item[i] = output
        engine = f"the vLLM engine of '{self.name}'"
        scored = []
        for k, ((tokens, n), output) in enumerate(zip(items, by_item)):
            where = Where(engine, f"prompt {k} of a call of {len(items)} ({len(tokens)} tokens)")
            # [None, {token id: Logprob}, ...], one per prompt token
            per_position = token_positions(getattr(output, "prompt_logprobs", None), len(tokens), where)
            values, greedy = [], True
            for position in range(len(tokens) - n, len(tokens)):
                options = per_position[position]
                target = tokens[position]
                field = f"prompt_logprobs[{position}][{target}]"
                if not isinstance(options, dict) or target not in options:
                    raise where.error(field, "is missing: the prompt's own token has no log-prob")
                values.append(logprob(getattr(options[target], "logprob", None), where, f"{field}.logprob"))
                check_ranked(_candidates(options, where, position), where, f"prompt_logprobs[{position}]")
                rank = getattr(options[target], "rank", None)
                if rank is None:
                    rank = 1 + sum(1 for v in options.values() if v.logprob > options[target].logprob)
                greedy = greedy and rank == 1
            scored.append((tuple(values), greedy))
        return scored

    def _score_prompts(self, prompts: Sequence[list[int]], read_cache: bool) -> list[RequestOutput]:
        """One engine call: each prompt with its prompt log-probs (one generated token, not detokenised: the
        log-probs of cached positions are not computed, and their token ids are not tokens)."""
        if not prompts:
            return []
        options: dict[str, object] = {"max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 1, "detokenize": False}
        if self.prefix_caching:  # vLLM skips the cache for prompt log-probs unless told otherwise
            options["skip_reading_prefix_cache"] = not read_cache
        params = self._sampling_params(**options)
        outputs = self.engine.generate([{"prompt_token_ids": list(t)} for t in prompts], params, use_tqdm=False)
        where = Where(f"the vLLM engine of '{self.name}'", f"a call of {len(prompts)} prompts")
        return engine_outputs(outputs, len(prompts), where)

    # ------------------------------------------------------------------ the three calls
    def loglikelihood(
        self, requests: Sequence[LoglikelihoodRequest], progress: Progress | None = None
    ) -> list[LoglikelihoodResult]:
        items, cuts = [], []
        for request in requests:
            context_ids, continuation_ids = self.encode_pair(
                request.context, request.continuation, request.move_whitespace
            )
            # vLLM needs room for the one generated token: at most max_length - 1 prompt tokens.
            limit = min(self.max_length - 1, request.max_length or self.max_length)
            whole = context_ids + continuation_ids
            tokens = whole[-(limit + 1) :]
            items.append((tokens, min(len(continuation_ids), len(tokens) - 1)))
            cuts.append(len(whole) - len(tokens))  # reported as the HF backend does: the run warns of cut prompts
        results = [LoglikelihoodResult(0.0, (), True, truncated=cut) for cut in cuts]
        todo = [i for i, (_, n) in enumerate(items) if n > 0]
        for i, (token_lp, greedy) in zip(todo, self._prompt_logprobs([items[i] for i in todo])):
            results[i] = LoglikelihoodResult(float(sum(token_lp)), token_lp, greedy, truncated=cuts[i])
        if progress:
            progress(len(requests))
        return results

    def rolling_loglikelihood(
        self, requests: Sequence[RollingLoglikelihoodRequest], progress: Progress | None = None
    ) -> list[RollingLoglikelihoodResult]:
        items, owner = [], []
        for index, request in enumerate(requests):
            window = min(request.window, self.max_length - 1)
            stride = min(request.stride or window, window)
            full = [self.prefix_token_id] + self.encode(request.text)
            n = len(full) - 1
            start, end = 0, min(window, n)
            while start < n:  # the HF backend's windows: each token scored once, with up to `window` before it
                items.append((full[max(0, end - window) : end + 1], end - start))
                owner.append(index)
                start, end = end, min(end + stride, n)
        per_request: list[list[float]] = [[] for _ in requests]
        for index, (token_lp, _) in zip(owner, self._prompt_logprobs(items)):
            per_request[index].extend(token_lp)
        if progress:
            progress(len(requests))
        return [RollingLoglikelihoodResult(float(sum(lp)), len(lp), tuple(lp)) for lp in per_request]

    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[GenerateResult]:
        prompts, cuts = [], []
        for r in requests:
            if r.no_repeat_ngram_size:
                raise ProctorError("the vLLM backend does not support no_repeat_ngram_size; use the hf backend")
            ids = ([self.prefix_token_id] if self.add_bos else []) + self.encode(r.prompt)
            budget = min(self.max_length, r.max_length or self.max_length) - r.max_tokens
            prompts.append(ids[-budget:] if budget > 0 else ids[-1:])
            cuts.append(len(ids) - len(prompts[-1]))  # cut from the left to fit: reported, as the HF backend does
        results: list[GenerateResult | None] = [None] * len(requests)
        sampled = [i for i, r in enumerate(requests) if r.num_beams <= 1]
        if sampled:
            params = [self._generation_params(requests[i]) for i in sampled]
            outputs = self.engine.generate([{"prompt_token_ids": prompts[i]} for i in sampled], params, use_tqdm=False)
            engine = f"the vLLM engine of '{self.name}'"
            outputs = engine_outputs(outputs, len(sampled), Where(engine, f"a call of {len(sampled)} prompts"))
            for i, output in zip(sampled, outputs):
                where = Where(engine, describe_request(requests[i].prompt))
                completions = getattr(output, "outputs", None)
                if not isinstance(completions, list) or not completions:
                    raise where.error("outputs", f"is {completions!r}, not a list of completions")
                best = completions[0]
                a_string(getattr(best, "text", None), where, "outputs[0].text")
                reason = "length" if best.finish_reason == "length" else "stop"
                results[i] = GenerateResult(best.text, reason, len(prompts[i]), len(best.token_ids), truncated=cuts[i])
        for i, r in enumerate(requests):
            if r.num_beams > 1:
                results[i] = dataclasses.replace(self._beam_search(prompts[i], r), truncated=cuts[i])
        if progress:
            progress(len(requests))
        return results  # type: ignore[return-value]

    def _generation_params(self, r: GenerateRequest) -> SamplingParams:
        kwargs: dict[str, object] = {
            "max_tokens": r.max_tokens,
            "temperature": r.temperature,
            "stop": list(r.stop) or None,
        }
        if r.temperature > 0:
            kwargs.update(top_p=r.top_p, seed=r.seed)
            if r.top_k is not None:
                kwargs["top_k"] = r.top_k if r.top_k > 0 else -1  # vLLM's "off" is -1
        if r.repetition_penalty != 1.0:
            kwargs["repetition_penalty"] = r.repetition_penalty
        if r.min_tokens:
            kwargs["min_tokens"] = r.min_tokens
        return self._sampling_params(**kwargs)

    def _beam_search(self, prompt: list[int], r: GenerateRequest) -> GenerateResult:
        vllm = require("vllm", "vllm", "The vLLM backend")
        params = vllm.sampling_params.BeamSearchParams(
            beam_width=r.num_beams, max_tokens=r.max_tokens, length_penalty=r.length_penalty
        )
        best = self.engine.beam_search([{"prompt_token_ids": prompt}], params)[0].sequences[0]
        new = list(best.tokens[len(prompt) :])
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        cut = min((text.find(s) for s in r.stop if s in text), default=-1)
        if cut >= 0:
            return GenerateResult(text[:cut], "stop", len(prompt), len(new))
        return GenerateResult(text, "length" if len(new) >= r.max_tokens else "stop", len(prompt), len(new))

    def close(self) -> None:
        self.engine = None
        gc.collect()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass


def _candidates(options: dict[object, object], where: Where, position: int) -> list[tuple[str, float, object]]:
    """One position's candidates (token id, log-prob, rank) from the engine's ``{token id: Logprob}``."""
    return [
        (
            str(key),
            logprob(getattr(value, "logprob", None), where, f"prompt_logprobs[{position}][{key}].logprob"),
            getattr(value, "rank", None),
        )
        for key, value in options.items()
    ]


def _cache_config(engine: LLM) -> CacheConfig | None:
    return getattr(getattr(getattr(engine, "llm_engine", None), "vllm_config", None), "cache_config", None)


def _prefix_caching(engine: LLM) -> bool:
    """Whether the engine keeps a prefix cache that prompt log-prob requests can read (vLLM >= 0.11 has
    ``SamplingParams.skip_reading_prefix_cache``; before it, such requests never read the cache)."""
    config = _cache_config(engine)
    if not getattr(config, "enable_prefix_caching", False):
        return False
    if getattr(engine, "sampling_params", None) is not None:  # a stand-in engine: its own parameters
        return True
    vllm = require("vllm", "vllm", "The vLLM backend")
    fields = getattr(vllm.SamplingParams, "__struct_fields__", None) or getattr(
        vllm.SamplingParams, "__dataclass_fields__", {}
    )
    return "skip_reading_prefix_cache" in fields


def _cache_settings(engine: LLM) -> dict[str, object]:
    """The engine's KV cache as results.json's ``model_info.engine`` reports it."""
    config = _cache_config(engine)
    found: dict[str, object] = {"prefix_caching": _prefix_caching(engine)}
    if config is not None and getattr(config, "block_size", None) is not None:
        found["block_size"] = int(config.block_size)
    return found


def _cached(output: RequestOutput | None) -> int:
    """Prompt tokens an engine output read from the prefix cache (their log-probs were not computed)."""
    value = getattr(output, "num_cached_tokens", None)
    return value if isinstance(value, int) else 0
