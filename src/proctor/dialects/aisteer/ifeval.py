"""Instruction following with Google IFEval's checks (all 25 instruction ids; ``ifeval_checks``).

Rows: ``prompt``, ``instruction_id_list`` (IFEval ids such as ``punctuation:no_comma``) and
``kwargs`` (one dict of arguments per instruction; ``None`` values are dropped, as in AISteer360);
optionally ``id`` and ``instructions`` (AISteer360's rows carry ``instructions`` and no ``id``).
``StrictInstruction`` checks the response as generated (AISteer360's metric); ``LooseInstruction``
also tries IFEval's loose variants of it. A blank response follows nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping

from proctor.data.readers import Row
from proctor.dialects.aisteer import ifeval_checks
from proctor.dialects.aisteer.base import UseCase
from proctor.dialects.aisteer.generation import batch_retry_generate
from proctor.dialects.aisteer.metrics import Metric, MetricResult

CHECKS = ifeval_checks.CHECKS


def follows(response: str | None, instruction_id: str, kwargs: dict | None) -> bool:
    """Strict IFEval check of one instruction on one response."""
    return ifeval_checks.strict(response, instruction_id, kwargs)


def _records(responses, instruction_id_lists, kwargs_lists, name: str):
    responses = list(responses or [])
    if responses and all(isinstance(r, dict) for r in responses):
        # AISteer360's form: the use case's generation records (response, instruction_id_list, kwargs)
        instruction_id_lists = [r["instruction_id_list"] for r in responses]
        kwargs_lists = [r["kwargs"] for r in responses]
        responses = [r["response"] for r in responses]
    if instruction_id_lists is None or kwargs_lists is None:
        raise ValueError(f"{name} needs instruction_id_lists and kwargs_lists (or generation records as responses)")
    return responses, instruction_id_lists, kwargs_lists


def _score(
    check: Callable[..., bool], responses, instruction_id_lists, kwargs_lists
) -> tuple[list[bool], int, int, dict]:
    per_prompt, followed, total = [], 0, 0
    per_kind: dict[str, list[bool]] = {}
    for response, ids, arguments in zip(responses, instruction_id_lists, kwargs_lists):
        results = [check(response, i, a) for i, a in zip(ids, arguments)]
        for i, ok in zip(ids, results):
            per_kind.setdefault(i, []).append(ok)
        per_prompt.append(all(results))
        followed += sum(results)
        total += len(results)
    return per_prompt, followed, total, {k: sum(v) / len(v) for k, v in sorted(per_kind.items())}


class StrictInstruction(Metric):
    """Share of prompts whose every instruction is followed, and share of instructions followed."""

    mode: ClassVar[str] = "strict"

    def compute(self, responses, prompts=None, instruction_id_lists=None, kwargs_lists=None, **kwargs) -> MetricResult:
        responses, ids, arguments = _records(responses, instruction_id_lists, kwargs_lists, self.name)
        check = ifeval_checks.strict if self.mode == "strict" else ifeval_checks.loose
        per_prompt, followed, total, per_kind = _score(check, responses, ids, arguments)
        return {
            f"{self.mode}_prompt_accuracy": sum(per_prompt) / len(per_prompt) if per_prompt else None,
            f"{self.mode}_instruction_accuracy": followed / total if total else None,
            "follow_all_instructions": per_prompt,
            "per_instruction": per_kind,
        }


class LooseInstruction(StrictInstruction):
    """IFEval's loose accuracy (``loose_prompt_accuracy``, ``loose_instruction_accuracy``): an instruction
    counts as followed when the response, or it without its first / last line or ``*``, follows it."""

    mode: ClassVar[str] = "loose"


class InstructionFollowing(UseCase):
    """Prompts with verifiable instructions; the reply is scored by ``StrictInstruction``."""

    _EVALUATION_REQ_KEYS: ClassVar = ("prompt", "instruction_id_list", "kwargs")

    def validate_evaluation_data(self, row: Row) -> None:
        ids, arguments = row["instruction_id_list"], row["kwargs"]
        if not isinstance(ids, list) or not isinstance(arguments, list) or len(ids) != len(arguments):
            raise ValueError("'instruction_id_list' and 'kwargs' must be lists of the same length")
        unknown = [i for i in ids if i not in CHECKS]
        if unknown:
            raise ValueError(f"unsupported instruction(s) {unknown}; supported: {sorted(CHECKS)}")
        for instruction_id, kwargs in zip(ids, arguments):
            ifeval_checks.prepare(instruction_id, kwargs)  # arguments named and complete

    def generate(
        self, model_or_pipeline, tokenizer=None, gen_kwargs=None, runtime_overrides=None, **kwargs
    ) -> list[dict]:
        # one prompt per row, in row order: runtime overrides match rows by id, or by position without ids
        items = [
            {**({"id": row["id"]} if "id" in row else {}), "prompt": [{"role": "user", "content": row["prompt"]}]}
            for row in self.evaluation_data
        ]
        if not items:
            return []
        _, raw, outputs = batch_retry_generate(
            prompt_data=items,
            model_or_pipeline=model_or_pipeline,
            tokenizer=tokenizer,
            gen_kwargs=gen_kwargs,
            runtime_overrides=runtime_overrides,
            evaluation_data=self.evaluation_data,
            return_outputs=True,
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
    prompt: object  # the example's prompt, as given
    response: str | None
    follow_all_instructions: bool
    follow_instruction_list: list[bool]


def test_instruction_following_strict(example: Row, prompt_to_response: Mapping[str, str]) -> StrictOutcome:
    """IFEval's ``evaluation_main.test_instruction_following_strict``: ``example`` has ``prompt``,
    ``instruction_id_list`` and ``kwargs``; the response is looked up by the prompt."""
    response = prompt_to_response[example["prompt"]]
    results = [follows(response, i, a) for i, a in zip(example["instruction_id_list"], example["kwargs"])]
    return StrictOutcome(list(example["instruction_id_list"]), example["prompt"], response, all(results), results)


def test_instruction_following_loose(example: Any, prompt_to_response: Mapping[str, str]) -> StrictOutcome:
    """IFEval's ``evaluation_main.test_instruction_following_loose`` (``example`` a mapping or an object
    with ``prompt``, ``instruction_id_list``, ``kwargs``)."""
    get = (lambda k: example[k]) if isinstance(example, Mapping) else (lambda k: getattr(example, k))
    response = prompt_to_response[get("prompt")]
    ids, arguments = list(get("instruction_id_list")), list(get("kwargs"))
    results = [ifeval_checks.loose(response, i, a) for i, a in zip(ids, arguments)]
    return StrictOutcome(ids, get("prompt"), response, all(results), results)


test_instruction_following_strict.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
test_instruction_following_loose.__test__ = False  # type: ignore[attr-defined]
