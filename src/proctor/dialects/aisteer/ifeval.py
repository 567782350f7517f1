"""Instruction following with IFEval-style strict checks for a handful of instruction kinds.

Rows: ``prompt``, ``instruction_id_list`` (IFEval ids such as ``punctuation:no_comma``) and
``kwargs`` (one dict of arguments per instruction; ``None`` values are dropped, as in IFEval);
optionally ``id`` and ``instructions`` (AISteer360's rows carry ``instructions`` and no ``id``).
The check is strict: the response as generated, and an empty or blank response follows nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping

from proctor.scoring.instructions import compare, count_words
from proctor.dialects.aisteer.base import UseCase
from proctor.dialects.aisteer.generation import batch_retry_generate
from proctor.dialects.aisteer.metrics import Metric


def _compare(count: int, relation: str, target: int) -> bool:
    return compare(count, relation, target, allowed=("less than", "at least"))  # Google IFEval's two relations


def _bullets(text: str) -> int:
    return len(re.findall(r"^\s*\*[^\*].*$", text, flags=re.M)) + len(re.findall(r"^\s*-.*$", text, flags=re.M))


def _json(text: str) -> bool:
    body = text.strip()
    body = re.sub(r"^```(?:json|Json|JSON)?\s*", "", body)
    body = re.sub(r"\s*```$", "", body)
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


CHECKS: dict[str, Callable[..., bool]] = {
    "punctuation:no_comma": lambda r: "," not in r,
    "change_case:english_lowercase": lambda r: r.islower(),
    "change_case:english_capital": lambda r: r.isupper(),
    "length_constraints:number_words": lambda r, num_words, relation: _compare(count_words(r), relation, int(num_words)),
    "keywords:existence": lambda r, keywords: all(re.search(k, r, flags=re.I) for k in keywords),
    "keywords:forbidden_words": lambda r, forbidden_words: not any(
        re.search(r"\b" + re.escape(w) + r"\b", r, flags=re.I) for w in forbidden_words
    ),
    "keywords:frequency": lambda r, keyword, frequency, relation: _compare(
        len(re.findall(re.escape(keyword), r, flags=re.I)), relation, int(frequency)
    ),
    "detectable_format:number_bullet_lists": lambda r, num_bullets: _bullets(r) == int(num_bullets),
    "detectable_format:title": lambda r: any(t.strip("<>").strip() for t in re.findall(r"<<[^\n]+>>", r)),
    "detectable_format:json_format": _json,
    "startend:end_checker": lambda r, end_phrase: r.strip().lower().endswith(end_phrase.strip().lower()),
    "startend:quotation": lambda r: len(r.strip()) > 1 and r.strip()[0] == '"' and r.strip()[-1] == '"',
}


def follows(response: str | None, instruction_id: str, kwargs: dict | None) -> bool:
    """Strict IFEval check of one instruction on one response."""
    if instruction_id not in CHECKS:
        raise ValueError(f"unsupported instruction '{instruction_id}'; supported: {sorted(CHECKS)}")
    if response is None or not response.strip():
        return False
    arguments = {k: v for k, v in (kwargs or {}).items() if v is not None}
    return bool(CHECKS[instruction_id](response, **arguments))


class StrictInstruction(Metric):
    """Share of prompts whose every instruction is followed, and share of instructions followed."""

    def compute(self, responses, prompts=None, instruction_id_lists=None, kwargs_lists=None, **kwargs) -> dict[str, Any]:
        responses = list(responses or [])
        if responses and all(isinstance(r, dict) for r in responses):
            # AISteer360's form: the use case's generation records (response, instruction_id_list, kwargs)
            instruction_id_lists = [r["instruction_id_list"] for r in responses]
            kwargs_lists = [r["kwargs"] for r in responses]
            responses = [r["response"] for r in responses]
        if instruction_id_lists is None or kwargs_lists is None:
            raise ValueError("StrictInstruction needs instruction_id_lists and kwargs_lists (or generation records as responses)")
        per_prompt, followed, total = [], 0, 0
        per_kind: dict[str, list[bool]] = {}
        for response, ids, arguments in zip(responses, instruction_id_lists, kwargs_lists):
            results = [follows(response, i, a) for i, a in zip(ids, arguments)]
            for i, ok in zip(ids, results):
                per_kind.setdefault(i, []).append(ok)
            per_prompt.append(all(results))
            followed += sum(results)
            total += len(results)
        return {
            "strict_prompt_accuracy": sum(per_prompt) / len(per_prompt) if per_prompt else None,
            "strict_instruction_accuracy": followed / total if total else None,
            "follow_all_instructions": per_prompt,
            "per_instruction": {k: sum(v) / len(v) for k, v in sorted(per_kind.items())},
        }


class InstructionFollowing(UseCase):
    """Prompts with verifiable instructions; the reply is scored by ``StrictInstruction``."""

    _EVALUATION_REQ_KEYS: ClassVar = ("prompt", "instruction_id_list", "kwargs")

    def validate_evaluation_data(self, row: dict[str, Any]) -> None:
        ids, arguments = row["instruction_id_list"], row["kwargs"]
        if not isinstance(ids, list) or not isinstance(arguments, list) or len(ids) != len(arguments):
            raise ValueError("'instruction_id_list' and 'kwargs' must be lists of the same length")
        unknown = [i for i in ids if i not in CHECKS]
        if unknown:
            raise ValueError(f"unsupported instruction(s) {unknown}; supported: {sorted(CHECKS)}")

    def generate(self, model_or_pipeline, tokenizer=None, gen_kwargs=None, runtime_overrides=None, **kwargs) -> list[dict]:
        # one prompt per row, in row order: runtime overrides match rows by id, or by position without ids
        items = [
            {**({"id": row["id"]} if "id" in row else {}), "prompt": [{"role": "user", "content": row["prompt"]}]}
            for row in self.evaluation_data
        ]
        if not items:
            return []
        _, raw, outputs = batch_retry_generate(
            prompt_data=items, model_or_pipeline=model_or_pipeline, tokenizer=tokenizer, gen_kwargs=gen_kwargs,
            runtime_overrides=runtime_overrides, evaluation_data=self.evaluation_data, return_outputs=True,
            batch_size=kwargs.get("batch_size"),
        )
        return [
            {
                **({"id": row["id"]} if "id" in row else {}),
                "response": text,
                "prompt": row["prompt"],
                "adapted_prompt": output["rendered_prompt"],
                **({"instructions": row["instructions"]} if "instructions" in row else {}),
                "instruction_id_list": row["instruction_id_list"],
                "kwargs": row["kwargs"],
                "finish_reason": output["finish_reason"],
            }
            for row, text, output in zip(self.evaluation_data, raw, outputs)
        ]

    def evaluate(self, generations: list[dict]) -> dict[str, dict]:
        # AISteer360's call: every metric gets the generation records as ``responses`` (copies, since
        # AISteer360's StrictInstruction rewrites their kwargs in place)
        return {metric.name: metric(responses=[dict(g) for g in generations]) for metric in self.evaluation_metrics}


@dataclass
class StrictOutcome:
    """One prompt's strict IFEval outcome, in the shape of IFEval's ``OutputExample``."""

    instruction_id_list: list[str]
    prompt: Any
    response: str | None
    follow_all_instructions: bool
    follow_instruction_list: list[bool]


def test_instruction_following_strict(example: Mapping[str, Any], prompt_to_response: Mapping[Any, str]) -> StrictOutcome:
    """IFEval's ``evaluation_main.test_instruction_following_strict``: ``example`` has ``prompt``,
    ``instruction_id_list`` and ``kwargs``; the response is looked up by the prompt."""
    response = prompt_to_response[example["prompt"]]
    results = [follows(response, i, a) for i, a in zip(example["instruction_id_list"], example["kwargs"])]
    return StrictOutcome(list(example["instruction_id_list"]), example["prompt"], response, all(results), results)


test_instruction_following_strict.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
