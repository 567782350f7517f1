"""AISteer360's generic metrics (``aisteer360.evaluation.metrics.generic``), on proctor.

- ``Factuality``, ``Relevance``: ``LLMJudgeMetric`` with AISteer360's grading prompts, scale 1-5;
- ``Perplexity``: exp of the mean next-token loss of each response under a scoring model, BOS first;
- ``RewardScore``: a sequence-classification (reward) model's logit, optionally transformed;
- ``ShortAnswerMatch``: SQuAD exact match and token F1 against one or more references.

Same constructor arguments, ``compute(responses, prompts=None, **kwargs)`` and result keys as
AISteer360's. Models are loaded on first use: a proctor model spec or local path (``Perplexity``), a
local path or hub id (``RewardScore``), or a loaded model with its tokenizer.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, cast

from proctor.dialects.aisteer.judge import LLMJudgeMetric
from proctor.dialects.aisteer.metrics import Metric, MetricResult
from proctor.scoring.text import exact_match, token_f1

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

# A loaded scoring model and its tokenizer.
ModelPair = tuple["PreTrainedModel", "PreTrainedTokenizerBase"]

# AISteer360's grading prompts (the judge's numbers depend on their wording)
FACTUALITY_PROMPT = """\
You are a careful fact-checker.

Considering only verifiable facts, rate the response’s factual accuracy with respect to the prompt on a scale from
{lower_bound} (completely incorrect) to {upper_bound} (fully correct).

PROMPT:
{prompt}

RESPONSE:
{response}

What is your score?
"""

RELEVANCE_PROMPT = """\
You are an impartial grader.

Rate, on a scale from {lower_bound} (completely irrelevant) to {upper_bound} (perfectly relevant), how well the response
addresses the information need expressed in the prompt.

PROMPT:
{prompt}

RESPONSE:
{response}

What is your score?
"""


class Factuality(LLMJudgeMetric):
    """A judge rates each response's factual accuracy with respect to its prompt, 1 to 5."""

    def __init__(self, model_or_id: object, **kwargs: Any) -> None:
        super().__init__(model_or_id, prompt_template=FACTUALITY_PROMPT, scale=(1, 5), **kwargs)


class Relevance(LLMJudgeMetric):
    """A judge rates how well each response addresses its prompt, 1 to 5."""

    def __init__(self, model_or_id: object, **kwargs: Any) -> None:
        super().__init__(model_or_id, prompt_template=RELEVANCE_PROMPT, scale=(1, 5), **kwargs)


def _model_and_tokenizer(
    model_or_id: object,
    tokenizer: PreTrainedTokenizerBase | None,
    load: Callable[[str, PreTrainedTokenizerBase | None], ModelPair],
) -> ModelPair:
    """(transformers model, tokenizer) from a string (``load(string)``), a proctor model or pipeline
    (``.model`` / ``.tokenizer``), or a transformers model (its tokenizer from its ``name_or_path``
    when not given, as AISteer360's ``Perplexity`` does)."""
    if isinstance(model_or_id, str):
        return load(model_or_id, tokenizer)
    if hasattr(model_or_id, "model") and hasattr(model_or_id, "tokenizer"):
        return model_or_id.model, tokenizer or model_or_id.tokenizer
    if tokenizer is None:
        from transformers import AutoTokenizer

        model = cast("PreTrainedModel", model_or_id)  # neither a string nor a proctor model: a transformers model
        tokenizer = AutoTokenizer.from_pretrained(model.config._name_or_path)
    return model_or_id, tokenizer


class _ModelMetric(Metric):
    """A metric that runs a local model, loaded when first needed, on ``device`` if given."""

    needs_tokenizer = False  # with a loaded transformers model
    role: str | None = None  # the model role (proctor.api.model_roles) that replaces model_or_id when given

    def __init__(
        self,
        model_or_id: object,
        tokenizer: PreTrainedTokenizerBase | None,
        device: str | None,
        batch_size: int,
        **extras: object,
    ) -> None:
        super().__init__(**extras)
        self.model_or_id, self._tokenizer, self.device, self.batch_size = (
            model_or_id,
            tokenizer,
            device,
            int(batch_size),
        )
        loaded = not isinstance(model_or_id, str) and not hasattr(model_or_id, "tokenizer")
        if self.needs_tokenizer and loaded and tokenizer is None:
            raise ValueError(f"{type(self).__name__}: a loaded model needs its tokenizer (tokenizer=...)")
        self._loaded: ModelPair | None = None

    def _load_string(self, spec: str, tokenizer: PreTrainedTokenizerBase | None) -> ModelPair:
        raise NotImplementedError

    def _loaded_model(self) -> ModelPair:
        if self._loaded is None:
            model_or_id = self.model_or_id
            if self.role is not None:
                from proctor.api.model_roles import active_roles

                model_or_id = active_roles().spec(self.role, model_or_id)  # --model-role metric= over the file's
            model, tokenizer = _model_and_tokenizer(model_or_id, self._tokenizer, self._load_string)
            if self.device is not None:
                model = model.to(self.device)
            model.eval()
            if tokenizer.pad_token is None:  # batches need a pad token (AISteer360 falls back the same way)
                tokenizer.pad_token = tokenizer.eos_token or getattr(tokenizer, "sep_token", None)
            self._loaded = (model, tokenizer)
        return self._loaded

    @property
    def model(self) -> PreTrainedModel:
        return self._loaded_model()[0]

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        return self._loaded_model()[1]


class Perplexity(_ModelMetric):
    """Perplexity of each response: exp(mean next-token cross-entropy); lower is better.

    With ``add_bos`` (and a BOS token) the tokenizer's BOS goes first so the first word is scored
    too; ``max_length`` truncates the response's tokens. As in AISteer360, tokens equal to the pad
    token are not scored. Each response is scored on its own (padding never reaches its tokens).
    """

    role = "metric"

    def __init__(
        self,
        model_or_id: object,
        tokenizer: PreTrainedTokenizerBase | None = None,
        batch_size: int = 16,
        add_bos: bool = True,
        max_length: int | None = None,
        device: str | None = None,
    ) -> None:
        super().__init__(model_or_id, tokenizer, device, batch_size)
        self.add_bos_requested, self.max_length = bool(add_bos), max_length

    def _load_string(self, spec: str, tokenizer: PreTrainedTokenizerBase | None) -> ModelPair:
        from proctor.api.model_roles import active_roles

        loaded = active_roles().model("metric", spec)  # the run's metric role (--model-role metric=), else spec
        if not (hasattr(loaded, "model") and hasattr(loaded, "tokenizer")):
            raise ValueError(f"Perplexity needs a local Hugging Face model; '{spec}' is a {type(loaded).__name__}")
        return loaded.model, tokenizer or loaded.tokenizer

    @property
    def add_bos(self) -> bool:
        return self.add_bos_requested and self.tokenizer.bos_token_id is not None

    def token_ids(self, text: str) -> list[int]:
        truncate = self.max_length is not None
        ids = self.tokenizer(text, add_special_tokens=False, truncation=truncate, max_length=self.max_length)[
            "input_ids"
        ]
        return ([self.tokenizer.bos_token_id] if self.add_bos else []) + list(ids)

    def compute(self, responses: Sequence[str], prompts: Sequence[str] | None = None, **kwargs: object) -> MetricResult:
        import torch

        model, tokenizer = self._loaded_model()
        pad = tokenizer.pad_token_id
        device = next(model.parameters()).device
        perplexities: list[float] = []
        for start in range(0, len(responses), self.batch_size):
            batch = [self.token_ids(text) for text in responses[start : start + self.batch_size]]
            width = max(len(ids) for ids in batch)
            filler = pad if pad is not None else 0
            input_ids = torch.tensor([ids + [filler] * (width - len(ids)) for ids in batch], device=device)
            mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids in batch], device=device)
            with torch.no_grad():
                logits = model(input_ids=input_ids, attention_mask=mask).logits.float()
            logprobs = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, input_ids[:, 1:, None])[..., 0]
            for row, ids in enumerate(batch):
                scored = [i for i in range(len(ids) - 1) if pad is None or ids[i + 1] != pad]
                losses = [-float(logprobs[row, i]) for i in scored]
                perplexities.append(math.exp(sum(losses) / len(losses)) if losses else math.nan)
        return {
            "mean_perplexity": sum(perplexities) / len(perplexities) if perplexities else math.nan,
            "perplexities": perplexities,
        }


_TRANSFORMS = ("identity", "sigmoid", "softmax", "log_softmax")


class RewardScore(_ModelMetric):
    """A reward model's score of each response (with its prompt, as a text pair, when prompts are given).

    ``score_transform``: ``identity`` (the logit), ``sigmoid``, ``softmax`` / ``log_softmax`` (of
    class ``label_index``; those need several labels). Responses may be generation records
    (``response``, and ``prompt`` used when every record has a text prompt).
    """

    needs_tokenizer = True

    def __init__(
        self,
        model_or_id: object,
        tokenizer: PreTrainedTokenizerBase | None = None,
        device: str | None = None,
        batch_size: int = 8,
        max_length: int | None = 1024,
        score_transform: str = "identity",
        label_index: int = 0,
        return_logits: bool = False,
        **extras: object,
    ) -> None:
        if score_transform not in _TRANSFORMS:
            raise ValueError(f"RewardScore score_transform must be one of {_TRANSFORMS}, got {score_transform!r}")
        super().__init__(model_or_id, tokenizer, device, batch_size, **extras)
        self.max_length, self.score_transform = max_length, score_transform
        self.label_index, self.return_logits = int(label_index), bool(return_logits)

    def _load_string(self, spec: str, tokenizer: PreTrainedTokenizerBase | None) -> ModelPair:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        return AutoModelForSequenceClassification.from_pretrained(spec), tokenizer or AutoTokenizer.from_pretrained(
            spec
        )

    def scores(self, logits: torch.Tensor) -> torch.Tensor:
        import torch

        if logits.ndim != 2:
            raise ValueError(f"RewardScore expects logits of shape [batch, labels], got {tuple(logits.shape)}")
        labels = logits.shape[1]
        if labels == 1:
            if self.score_transform in ("softmax", "log_softmax"):
                raise ValueError(
                    f"RewardScore: score_transform '{self.score_transform}' needs a model with several labels"
                )
            values = logits[:, 0]
            return torch.sigmoid(values) if self.score_transform == "sigmoid" else values
        if not 0 <= self.label_index < labels:
            raise IndexError(f"RewardScore: label_index {self.label_index} is out of range for {labels} labels")
        if self.score_transform == "softmax":
            return torch.softmax(logits, dim=-1)[:, self.label_index]
        if self.score_transform == "log_softmax":
            return torch.log_softmax(logits, dim=-1)[:, self.label_index]
        values = logits[:, self.label_index]
        return torch.sigmoid(values) if self.score_transform == "sigmoid" else values

    def compute(
        self,
        responses: Sequence[Any] | None = None,  # texts, or generation records (see the class doc)
        prompts: Sequence[str] | None = None,
        **kwargs: object,
    ) -> MetricResult:
        import torch

        if not responses:
            return {"mean_reward": 0.0, "rewards": []}
        texts = list(responses)
        if isinstance(texts[0], Mapping):
            records = texts
            texts = [r.get("response", "") for r in records]
            if prompts is None and all(isinstance(r.get("prompt"), str) for r in records):
                prompts = [r["prompt"] for r in records]
        if prompts is not None and len(prompts) != len(texts):
            raise ValueError(f"RewardScore: {len(prompts)} prompts for {len(texts)} responses")
        model, tokenizer = self._loaded_model()
        if getattr(model.config, "pad_token_id", None) is None:
            model.config.pad_token_id = tokenizer.pad_token_id  # lets the classifier find each row's last token
        device = next(model.parameters()).device
        rewards: list[float] = []
        all_logits: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            chunk = texts[start : start + self.batch_size]
            pair = [list(prompts[start : start + self.batch_size])] if prompts is not None else []
            encoded = tokenizer(
                *pair, chunk, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
            )
            with torch.no_grad():
                logits = model(**{k: v.to(device) for k, v in encoded.items()}).logits
            rewards.extend(self.scores(logits).float().cpu().tolist())
            if self.return_logits:
                all_logits.extend(logits.float().cpu().tolist())
        result: MetricResult = {"mean_reward": sum(rewards) / len(rewards), "rewards": rewards}
        if self.return_logits:
            result["logits"] = all_logits
        return result


class ShortAnswerMatch(Metric):
    """SQuAD exact match and token F1 (best over each item's references), averaged: ``exact_match``, ``f1``."""

    def compute(
        self,
        responses: Sequence[str | None],
        prompts: Sequence[str] | None = None,
        references: Sequence[str | Sequence[str]] | None = None,
        reference_answers: Sequence[str | Sequence[str]] | None = None,
        **kwargs: object,
    ) -> dict[str, float]:
        golds = references if references is not None else reference_answers
        if golds is None:
            raise ValueError("ShortAnswerMatch needs `references` (or `reference_answers`)")
        if len(responses) != len(golds):
            raise ValueError(f"ShortAnswerMatch: {len(responses)} responses for {len(golds)} references")
        exact, f1 = [], []
        for index, (response, gold) in enumerate(zip(responses, golds)):
            candidates = [gold] if isinstance(gold, str) else list(gold)
            if not candidates:
                raise ValueError(f"ShortAnswerMatch: item {index} has no reference")
            response = response or ""
            exact.append(max(exact_match(response, c) for c in candidates))
            f1.append(max(token_f1(response, c) for c in candidates))
        count = len(exact) or 1
        return {"exact_match": sum(exact) / count, "f1": sum(f1) / count}
