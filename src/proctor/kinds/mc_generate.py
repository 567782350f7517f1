"""Multiple choice by generation, for models that cannot score log-likelihoods (chat-only APIs).

The prompt gets the options as lettered lines (optionally shuffled, seeded per sample) and asks
for a letter; the letter is read back from the reply. The outcome is a ``ChoiceOutcome`` whose
log-probs are 0 for the chosen option and -1e9 for the others, so every choice metric works
(an unreadable reply counts as a wrong answer).
"""

from __future__ import annotations

import hashlib
import random
from typing import Callable, Sequence

from proctor.core.errors import TaskDefinitionError
from proctor.core.model_requests import GenerateRequest, GenerateResult
from proctor.core.task_spec import GenerationSpec, TaskSpec
from proctor.kinds.base import SampleDetails
from proctor.kinds.letter_reading import LETTERS, read_letter
from proctor.prompts.builder import PreparedSample, Prompt
from proctor.scoring.outcomes import ChoiceOutcome

INSTRUCTION = "Answer with the letter of the correct option only."
UNCHOSEN = -1e9
MAX_TOKENS = 32  # a letter, or a short sentence naming one; --max-tokens (under --mc-format generate) changes it


def lettered_generation(max_tokens: int | None = None) -> GenerationSpec:
    """The generation settings every lettered reply is asked with (greedy, no stop string): the one source of
    both the requests and results.json's ``settings.generation``, so what is recorded is what was sent."""
    return GenerationSpec(max_tokens=max_tokens or MAX_TOKENS, stop=[], temperature=0.0, top_p=1.0, seed=0)


def permutation(sample_id: str, n: int, seed: int | None) -> list[int]:
    """Display order of the choices: identity without a seed, else a shuffle seeded by (seed, sample id)."""
    order = list(range(n))
    if seed is not None:
        digest = hashlib.sha256(f"{seed}:{sample_id}".encode()).digest()
        random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    return order


def options_block(choices: Sequence[str], order: Sequence[int]) -> str:
    lines = [f"{LETTERS[k]}. {choices[i]}" for k, i in enumerate(order)]
    return "\n".join(lines) + f"\n\n{INSTRUCTION}\nAnswer:"


def with_options(prompt: Prompt, block: str) -> Prompt:
    if prompt.messages is None:
        return Prompt(text=f"{(prompt.text or '').rstrip()}\n\n{block}", images=prompt.images)
    messages = list(prompt.messages)
    index = max((i for i, (role, _) in enumerate(messages) if role == "user"), default=None)
    if index is None:
        messages.append(("user", block))
    else:
        role, content = messages[index]
        messages[index] = (role, f"{content.rstrip()}\n\n{block}")
    return Prompt(messages=tuple(messages), images=prompt.images)


def extract_letter(text: str, n: int, choices: Sequence[str] = ()) -> int | None:
    """The displayed position (0-based) the reply names, or None (kinds/letter_reading.py reads it)."""
    return read_letter(text, n, choices).position


def check_letterable(spec: TaskSpec, samples: Sequence[PreparedSample], file: str | None = None) -> None:
    """Every sample's choices fit the letters A-Z: a 27th option has no letter to be named by, and would otherwise
    surface mid-run as an internal error. Called before the model loads under ``--mc-format generate``, and
    again when a model that cannot score falls back to lettering."""
    for prepared in samples:
        if len(prepared.choices) > len(LETTERS):
            sample = prepared.sample
            raise TaskDefinitionError(
                f"task '{spec.name}', sample '{sample.id}': {len(prepared.choices)} choices, but lettered generation "
                f"(--mc-format generate, or a model that cannot score log-likelihoods) names at most {len(LETTERS)} "
                "(A-Z): run this task with --mc-format loglikelihood on a model that scores log-likelihoods, or "
                f"give its rows at most {len(LETTERS)} choices",
                file=sample.file or file,
                row=sample.row,
                field="choices",
            )


class MultipleChoiceGenerateKind:
    request_type = "generate"

    def __init__(
        self, render: Callable[[Prompt], str], shuffle_seed: int | None = None, max_tokens: int | None = None
    ) -> None:
        self.render = render  # the model's own rendering (its chat template, or the server's)
        self.shuffle_seed = shuffle_seed
        self.generation = lettered_generation(max_tokens)

    def _order(self, prepared: PreparedSample) -> list[int]:
        return permutation(prepared.sample.id, len(prepared.choices), self.shuffle_seed)

    def requests(self, spec: TaskSpec, prepared: PreparedSample, prompt_text: str) -> list[GenerateRequest]:
        check_letterable(spec, [prepared])
        prompt = with_options(prepared.prompt, options_block(prepared.choices, self._order(prepared)))
        g = self.generation
        return [
            GenerateRequest(
                self.render(prompt),
                g.max_tokens,
                tuple(g.stop),
                g.temperature,
                g.top_p,
                g.seed,
                max_length=spec.max_length,
            )
        ]

    def outcome(
        self, spec: TaskSpec, prepared: PreparedSample, results: Sequence[GenerateResult]
    ) -> tuple[ChoiceOutcome, SampleDetails]:
        order = self._order(prepared)
        text = results[0].text
        sent = self.render(with_options(prepared.prompt, options_block(prepared.choices, order)))
        reading = read_letter(text, len(order), [prepared.choices[i] for i in order])
        position = reading.position
        n = len(order)
        if position is not None:
            chosen = order[position]
            prediction: int | None = chosen
            logprobs = [UNCHOSEN] * n
            logprobs[chosen] = 0.0
        else:  # unreadable: the first wrong option "wins", so the sample scores as incorrect
            prediction = None
            wrong = next((i for i in range(n) if i not in prepared.gold), 0)
            logprobs = [UNCHOSEN] * n
            logprobs[wrong] = 0.0
        distribution = tuple(1.0 if lp == 0.0 else 0.0 for lp in logprobs)
        outcome = ChoiceOutcome(
            logprobs=tuple(logprobs),
            n_tokens=(1,) * n,
            char_lengths=tuple(len(c) for c in prepared.choices),
            gold=prepared.gold,
            is_greedy=tuple(lp == 0.0 for lp in logprobs),
            distribution=distribution,
            weights=tuple(logprobs),
        )
        target = None if not prepared.gold else (list(prepared.gold) if len(prepared.gold) > 1 else prepared.gold[0])
        record = {
            "mc_format": "generate",
            "choices": list(prepared.choices),
            "target": target,
            "option_order": order,
            "prompt_sent": sent,  # the lettered prompt, as the model received it
            "generation": text,  # the raw reply
            "extracted": None if position is None else LETTERS[position],
            # the reply names several options (or its letter and text disagree): read as letter_reading says,
            # counted by runs/outcome_tally.py ('ambiguous_letter')
            **({"ambiguous": reading.ambiguous} if reading.ambiguous else {}),
            "prediction": prediction,
            "correct": (prediction in prepared.gold) if prepared.gold else None,
            # one-hot on the chosen option: a reply gives no probabilities (reports show none, and no calibration)
            "distribution": list(distribution),
        }
        return outcome, record
