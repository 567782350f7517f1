"""``CommonsenseMCQA``: multiple-choice questions asked under several seeded orderings of the choices.

Each row (``id``, ``question``, ``answer`` = text of the right choice, ``choices``) becomes
``num_shuffling_runs`` prompts. The order of run ``r`` of row ``id`` comes from a generator seeded
with (``seed``, ``id``, ``r``) — never a shared random stream — so prompts are the same whatever the
data order, the batch size or how many rows are used.

With ``score_letters`` (the default) every prompt's offered letters are also scored: the
probability that the reply starts with each letter ("A" or " A") right after the prompt as
generation saw it (on the same target: the engine, the steered pipeline, or the transformers
model), normalised over the letters offered. ``letter_probs`` holds them and ``confidence`` is the
probability of the letter the reply chose (``None`` when it chose none), which ``MCQACalibration`` reads.
A target that generates through its own ``generate`` (``generation.has_own_generate``) gets none: what its
``generate`` computes cannot be scored from outside.
"""

from __future__ import annotations

import math
import random
import re
import string
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

from proctor.data.readers import Row
from proctor.dialects.aisteer.base import UseCase
from proctor.dialects.aisteer.continuations import continuation_logprobs
from proctor.dialects.aisteer.control_arguments import resolve_overrides
from proctor.dialects.aisteer.generation import batch_retry_generate, has_own_generate
from proctor.dialects.aisteer.session import as_executor

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from proctor.models.steering.pipeline import RuntimeRow

LETTERS = string.ascii_uppercase
_INSTRUCTION = "You will be given a multiple-choice question and asked to select from a set of choices."
_ASK = "Please only print the letter corresponding to your choice."


def parse_letter(response: str, num_choices: int = len(LETTERS)) -> str | None:
    """The first standalone letter among those offered, after a leading role word; else None."""
    text = re.sub(r"^\s*(assistant|system|user)[:\n ]*", "", response or "", flags=re.I).strip()
    valid = LETTERS[:num_choices]
    match = re.search(rf"\b([{valid}])\b", text, flags=re.I)
    return match.group(1).upper() if match else None


def build_prompt(question: str, choices: list[str]) -> str:
    lines = [_INSTRUCTION, f"\nQuestion: {question}\n"]
    lines += [f"{LETTERS[i]}. {choice}" for i, choice in enumerate(choices)]
    lines += [f"\n{_ASK}", "\nAnswer:"]
    return "\n".join(lines)


class CommonsenseMCQA(UseCase):
    """Commonsense multiple-choice QA with shuffled choice orders (``num_shuffling_runs``)."""

    _EVALUATION_REQ_KEYS: ClassVar = ("id", "question", "answer", "choices")
    num_shuffling_runs: int = 1
    strict_letters: bool = True  # parse only letters that were offered (the reference accepts any A–Z)
    score_letters: bool = True  # score each offered letter: letter_probs and confidence per reply

    def _check_settings(self) -> None:
        runs = self.num_shuffling_runs
        try:
            whole = not isinstance(runs, bool) and int(runs) == float(runs)
        except (TypeError, ValueError, OverflowError):
            whole = False
        if not whole or int(runs) < 1:
            raise ValueError(f"num_shuffling_runs must be a whole number, at least 1, got {runs!r:.60}")

    def validate_evaluation_data(self, row: Row) -> None:
        choices = row["choices"]
        if not isinstance(choices, list) or len(choices) < 2:
            raise ValueError("'choices' must be a list of at least two options")
        if len(choices) > len(LETTERS):
            raise ValueError(f"'choices' has {len(choices)} options; at most {len(LETTERS)} can be lettered")
        if row["answer"] not in choices:
            raise ValueError(f"'answer' {row['answer']!r} is not one of the choices")

    def order(self, row_id: object, run: int, n: int) -> list[int]:
        """Seeded order of the choices for one shuffling run of one row."""
        order = list(range(n))
        random.Random(f"{self.seed}\0{row_id}\0{run}").shuffle(order)
        return order

    def prompt_data(self) -> list[dict[str, Any]]:
        items = []
        for row in self.evaluation_data:
            choices = row["choices"]
            for run in range(int(self.num_shuffling_runs)):
                order = self.order(row["id"], run, len(choices))
                shown = [choices[i] for i in order]
                items.append(
                    {
                        "id": row["id"],
                        "run": run,
                        "prompt": build_prompt(row["question"], shown),
                        "reference_answer": LETTERS[order.index(choices.index(row["answer"]))],
                        "num_choices": len(choices),
                        "choice_order": order,
                    }
                )
        return items

    def generate(
        self, model_or_pipeline, tokenizer=None, gen_kwargs=None, runtime_overrides=None, **kwargs
    ) -> list[dict]:
        if int(self.num_shuffling_runs) < 1:
            raise ValueError("num_shuffling_runs must be at least 1")
        items = self.prompt_data()
        if not items:
            return []
        width = max(item["num_choices"] for item in items) if self.strict_letters else len(LETTERS)
        parsed, raw, outputs = batch_retry_generate(
            prompt_data=items,
            model_or_pipeline=model_or_pipeline,
            tokenizer=tokenizer,
            gen_kwargs=gen_kwargs,
            runtime_overrides=runtime_overrides,
            evaluation_data=self.evaluation_data,
            parse_fn=lambda text: parse_letter(text, width),
            max_retries=int(kwargs.get("max_retries", 2)),
            return_outputs=True,
            batch_size=kwargs.get("batch_size"),
        )
        probs: list[dict[str, float] | None] = [None] * len(items)
        executor = as_executor(model_or_pipeline)
        scorer = executor.model if executor is not None else model_or_pipeline
        # not a chat-only API, nor a target that generates through its own generate() (its forward pass,
        # if any, need not be what its generate() runs)
        if (
            self.score_letters
            and getattr(scorer, "supports_loglikelihood", True)
            and not has_own_generate(model_or_pipeline)
        ):
            runtime = resolve_overrides(runtime_overrides, items, self.evaluation_data)
            probs = self.letter_probs(
                model_or_pipeline, tokenizer, items, [o["rendered_prompt"] for o in outputs], runtime
            )
        records = [
            {
                "response": letter if letter is None or LETTERS.index(letter) < item["num_choices"] else None,
                "raw_response": text,
                "prompt": item["prompt"],
                "adapted_prompt": output["rendered_prompt"],
                "question_id": item["id"],
                "run": item["run"],
                "reference_answer": item["reference_answer"],
                "num_choices": item["num_choices"],
                "choice_order": item["choice_order"],
                "finish_reason": output["finish_reason"],
            }
            for item, letter, text, output in zip(items, parsed, raw, outputs)
        ]
        if self.score_letters:
            for record, item_probs in zip(records, probs):
                record["letter_probs"] = item_probs
                chosen = record["response"]
                record["confidence"] = item_probs.get(chosen) if item_probs and chosen is not None else None
        return records

    @staticmethod
    def letter_probs(
        target: object,
        tokenizer: PreTrainedTokenizerBase | None,
        items: list[dict],
        rendered: list[str],
        runtime: Sequence[RuntimeRow],
    ) -> list[dict[str, float] | None]:
        """Per prompt, the probability that the reply starts with each offered letter, normalised
        over the offered letters (None when the target gives every letter -inf).

        A letter counts written bare or after a space ("A", " A"): models answer both ways after
        "Answer:" or a chat turn, and the two are different first tokens, so their probabilities add.
        """
        pairs, owner = [], []
        for k, (item, prompt) in enumerate(zip(items, rendered)):
            for letter in LETTERS[: item["num_choices"]]:
                for variant in _LETTER_VARIANTS:
                    pairs.append((prompt, variant + letter))
                    owner.append(k)
        scores = iter(continuation_logprobs(target, tokenizer, pairs, [runtime[k] for k in owner]))
        out: list[dict[str, float] | None] = []
        for item in items:
            values = [_logsumexp([next(scores) for _ in _LETTER_VARIANTS]) for _ in range(item["num_choices"])]
            top = max(values)
            if top == -math.inf:
                out.append(None)
                continue
            weights = [math.exp(v - top) for v in values]
            total = sum(weights)
            out.append({LETTERS[i]: w / total for i, w in enumerate(weights)})
        return out

    def evaluate(self, generations: list[dict]) -> dict[str, dict]:
        data: dict[str, list[object]] = {
            "responses": [g["response"] for g in generations],
            "reference_answers": [g["reference_answer"] for g in generations],
            "question_ids": [g["question_id"] for g in generations],
            "num_choices": [g.get("num_choices", len(LETTERS)) for g in generations],
        }
        if generations and all("confidence" in g for g in generations):
            # AISteer360's MCQACalibration reads ``confidence_scores``; proctor's reads either
            data["confidence_scores"] = data["confidences"] = [g["confidence"] for g in generations]
        return {metric.name: metric(**data) for metric in self.evaluation_metrics}


_LETTER_VARIANTS = ("", " ")


def _logsumexp(values: list[float]) -> float:
    top = max(values)
    if top == -math.inf:
        return top
    return top + math.log(sum(math.exp(v - top) for v in values))
