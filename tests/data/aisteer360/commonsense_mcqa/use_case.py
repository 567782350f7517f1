# A use case file in AISteer360's format (aisteer360/evaluation/use_cases/commonsense_mcqa/use_case.py
# at 1d7c843): it defines only the class, imports aisteer360's names, shuffles with the global
# `random`, reads kwargs["batch_size"] and uses output_record_fields / log_truncation_count.
import json
import logging
import math
import random
import re
from pathlib import Path
from typing import Any

from aisteer360.evaluation.use_cases.base import UseCase
from aisteer360.evaluation.utils.generation_utils import (
    batch_retry_generate,
    log_truncation_count,
    output_record_fields,
)

logger = logging.getLogger(__name__)

_EVALUATION_REQ_KEYS = ["question", "answer", "choices"]
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class CommonsenseMCQA(UseCase):
    num_shuffling_runs: int

    def validate_evaluation_data(self, evaluation_data: dict[str, Any]):
        if "id" not in evaluation_data.keys():
            raise ValueError("The evaluation data must include an 'id' key")
        missing_keys = [col for col in _EVALUATION_REQ_KEYS if col not in evaluation_data.keys()]
        if missing_keys:
            raise ValueError(f"Missing required keys: {missing_keys}")
        if any(
            evaluation_data[key] is None
            or (isinstance(evaluation_data[key], float) and math.isnan(evaluation_data[key]))
            for key in _EVALUATION_REQ_KEYS
        ):
            raise ValueError("Some required fields are missing or null.")

    def generate(self, model_or_pipeline, tokenizer, gen_kwargs=None, runtime_overrides=None, **kwargs) -> list[dict[str, Any]]:
        if not self.evaluation_data:
            logger.warning("No evaluation data provided.")
            return []
        gen_kwargs = dict(gen_kwargs or {})
        batch_size: int = int(kwargs["batch_size"])

        prompt_data = []
        for instance in self.evaluation_data:
            choices = instance["choices"]
            for _ in range(self.num_shuffling_runs):
                lines = ["You will be given a multiple-choice question and asked to select from a set of choices."]
                lines += [f"\nQuestion: {instance['question']}\n"]
                choice_order = list(range(len(choices)))
                random.shuffle(choice_order)
                for i, old_idx in enumerate(choice_order):
                    lines.append(f"{_LETTERS[i]}. {choices[old_idx]}")
                lines += ["\nPlease only print the letter corresponding to your choice."]
                lines += ["\nAnswer:"]
                prompt_data.append({
                    "id": instance["id"],
                    "prompt": "\n".join(lines),
                    "reference_answer": _LETTERS[choice_order.index(choices.index(instance["answer"]))],
                })

        choices, _, outputs = batch_retry_generate(
            prompt_data=prompt_data,
            model_or_pipeline=model_or_pipeline,
            tokenizer=tokenizer,
            parse_fn=self._parse_letter,
            gen_kwargs=gen_kwargs,
            runtime_overrides=runtime_overrides,
            evaluation_data=self.evaluation_data,
            return_outputs=True,
            batch_size=batch_size,
        )
        log_truncation_count(outputs)
        return [
            {
                "response": choice,
                "prompt": prompt_dict["prompt"],
                "question_id": prompt_dict["id"],
                "reference_answer": prompt_dict["reference_answer"],
                **output_record_fields(output, tokenizer),
            }
            for prompt_dict, choice, output in zip(prompt_data, choices, outputs)
        ]

    def evaluate(self, generations: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        eval_data = {
            "responses": [g["response"] for g in generations],
            "reference_answers": [g["reference_answer"] for g in generations],
            "question_ids": [g["question_id"] for g in generations],
        }
        return {metric.name: metric(**eval_data) for metric in self.evaluation_metrics}

    def export(self, profiles: dict[str, Any], save_dir) -> None:
        with open(Path(save_dir) / "profiles.json", "w", encoding="utf-8") as f:
            json.dump(profiles, f, indent=4, ensure_ascii=False)

    @staticmethod
    def _parse_letter(response) -> str:
        text = re.sub(r"^\s*(assistant|system|user)[:\n ]*", "", response, flags=re.I).strip()
        match = re.search(rf"\b([{_LETTERS}])\b", text, flags=re.I)
        return match.group(1).upper() if match else None
