"""What a task kind hands to its metrics for one sample."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChoiceOutcome:
    logprobs: tuple[float, ...]
    n_tokens: tuple[int, ...]
    char_lengths: tuple[int, ...]
    gold: tuple[int, ...]  # indices of correct choices (usually one); empty: no ground truth
    is_greedy: tuple[bool, ...]
    distribution: tuple[float, ...]
    weights: tuple[float, ...] = ()  # the softmax inputs: log-probs after normalisation and temperature


@dataclass(frozen=True)
class GenerationOutcome:
    text: str
    answer: str | None
    parsed: bool
    references: tuple[str, ...]


@dataclass(frozen=True)
class PerplexityOutcome:
    logprob: float
    n_tokens: int
    n_words: int
    n_bytes: int
    n_space_words: int | None = None  # GLM-130B's word count: len(text.strip().split(" "))
